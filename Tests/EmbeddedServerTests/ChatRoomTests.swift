@testable import EmbeddedServer
import JSON
import Runtime
import TestSupport
import Testing

/// The `/chat` wire format, byte-exact, with no sockets.
@Suite("Chat protocol: requests and replies", .timeLimit(.minutes(1)))
struct ChatProtocolTests {
    @Test("requests parse; replies are compact JSON with the keys in the documented order")
    func vectors() {
        #expect(ChatRequest.parse(#"{"type":"join","room":"r1"}"#) == .success(.join(room: "r1")))
        #expect(ChatRequest.parse(#"{"room":"r1","type":"leave"}"#) == .success(.leave(room: "r1")))
        #expect(ChatRequest.parse(#"{"type":"say","room":"r","text":"hi","ref":{"n":[1,2]}}"#)
            == .success(.say(room: "r", text: "hi", ref: ["n": [1, 2]])))
        #expect(ChatReply.joined(room: "r\"1", id: 7) == #"{"type":"joined","room":"r\"1","id":7}"#)
        #expect(ChatReply.said(room: "r", text: "a\nb", from: 3, ref: nil) == #"{"type":"said","room":"r","text":"a\nb","from":3}"#)
        #expect(ChatReply.said(room: "r", text: "x", from: 3, ref: 12) == #"{"type":"said","room":"r","text":"x","from":3,"ref":12}"#)
        #expect(ChatReply.left(room: "r") == #"{"type":"left","room":"r"}"#)
        #expect(ChatReply.error("no") == #"{"type":"error","error":"no"}"#)
    }

    @Test("each bad request names its problem")
    func badRequests() {
        let cases: [(String, String)] = [
            ("hello", "not JSON"),
            ("[1]", "expected a JSON object, got an array"),
            (#"{"room":"r"}"#, #"missing "type""#),
            (#"{"type":1}"#, #""type" must be a string, got a number"#),
            (#"{"type":"shout"}"#, #"unknown type "shout""#),
            (#"{"type":"join"}"#, #"missing "room""#),
            (#"{"type":"join","room":5}"#, #""room" must be a string, got a number"#),
            (#"{"type":"join","room":""}"#, #""room" must be 1 to 64 bytes"#),
            (#"{"type":"join","room":"\#(String(repeating: "é", count: 33))"}"#, #""room" must be 1 to 64 bytes"#),
            (#"{"type":"say","room":"r"}"#, #"missing "text""#),
            (#"{"type":"say","room":"r","text":null}"#, #""text" must be a string, got null"#),
            (#"{"type":"say","room":"r","text":"\#(String(repeating: "x", count: 65_537))"}"#, #""text" is over 65536 bytes"#),
            (#"{"type":"say","room":"r","text":"","ref":"\#(String(repeating: "x", count: 5000))"}"#, #""ref" is over 4096 bytes"#),
            (String(repeating: " ", count: (1 << 20) + 1), "message over 1048576 bytes"),
        ]
        for (request, expected) in cases {
            guard case .failure(let error) = ChatRequest.parse(request) else {
                Issue.record("accepted: \(request.prefix(80))")
                continue
            }
            #expect(error.message.hasPrefix(expected), "\(request.prefix(80)) → \(error.message)")
        }
        // At the limits: accepted.
        #expect(ChatRequest.parse(#"{"type":"join","room":"\#(String(repeating: "r", count: 64))"}"#)
            == .success(.join(room: String(repeating: "r", count: 64))))
        let text = String(repeating: "x", count: 65_536)
        #expect(ChatRequest.parse(#"{"type":"say","room":"r","text":"\#(text)"}"#) == .success(.say(room: "r", text: text, ref: nil)))
    }
}

/// `/chat` on an in-process embedded server with two loops, clients on loops of their own.
@Suite("Chat rooms on the embedded server", .serialized, .timeLimit(.minutes(4)))
struct ChatRoomTests {
    /// Each client of `members` says `count` numbered messages (interleaved), then each checks it got every
    /// one exactly once, each sender's in order.
    private func conversation(_ members: [(ChatClient, Int)], server: EmbeddedServer, count: Int) async throws {
        for (client, _) in members { _ = try await client.join("room") }
        #expect(Set(server.chatRooms.memberLoops(of: "room")).count == 2, "members on both server loops")
        let deliveredBefore = server.statistics.chatDelivered.load(ordering: .relaxed)
        try await withThrowingTaskGroup(of: Void.self) { senders in
            for (client, id) in members {
                senders.addTask {
                    for n in 0..<count { try await client.send(#"{"type":"say","room":"room","text":"\#(id)-\#(n)","ref":\#(n)}"#) }
                }
            }
            try await senders.waitForAll()
        }
        for (client, _) in members {
            var next: [Int: Int] = [:]  // sender id → the next n expected
            for _ in 0..<(count * members.count) {
                let said = try await client.receiveJSON()
                #expect(said["type"] == "said" && said["room"] == "room", "\(said)")
                let from = try #require(said["from"]?.integerValue)
                let n = next[from, default: 0]
                #expect(said["text"] == .string("\(from)-\(n)") && said["ref"] == JSONValue(n), "from \(from): \(said)")
                next[from] = n + 1
            }
            #expect(next == Dictionary(uniqueKeysWithValues: members.map { ($0.1, count) }))
        }
        // Nothing more: every delivery is counted when queued, so once all are counted a reply queued after
        // them is the next message (a duplicate would come before it).
        try await waitUntil {
            server.statistics.chatDelivered.load(ordering: .relaxed) - deliveredBefore == count * members.count * members.count
        }
        for (client, _) in members {
            try await client.send(#"{"type":"join","room":"sync"}"#)
            #expect(try await client.receiveJSON()["type"] == "joined")
        }
    }

    @Test("two clients on different loops: each gets every said exactly once, in each sender's order")
    func twoClients() async throws {
        try await withChatServer { server, clients in
            let members = try await connectSpread(2, to: server, clients: clients)
            #expect(members[0].1 != members[1].1, "ids differ per connection")
            try await conversation(members, server: server, count: 200)
            for (client, _) in members { await client.close() }
            try await waitUntil { server.chatRooms.roomCount == 0 }
        }
    }

    @Test("three clients over both loops: every said exactly once to each, in order; stable ids")
    func threeClients() async throws {
        try await withChatServer { server, clients in
            let members = try await connectSpread(3, to: server, clients: clients)
            try await conversation(members, server: server, count: 150)
            #expect(server.statistics.chatSaid.load(ordering: .relaxed) == 450)
            for (client, _) in members { await client.close() }
            try await waitUntil { server.chatRooms.membershipCount == 0 }
        }
    }

    @Test("leave: left, then no more saids from the room, and say there is refused")
    func leave() async throws {
        try await withChatServer { server, clients in
            let members = try await connectSpread(2, to: server, clients: clients)
            let (stayer, stayerID) = members[0]
            let (leaver, _) = members[1]
            _ = try await stayer.join("r")
            _ = try await leaver.join("r")
            try await leaver.send(#"{"type":"leave","room":"r"}"#)
            #expect(try await leaver.receiveJSON() == ["type": "left", "room": "r"])
            try await stayer.send(#"{"type":"say","room":"r","text":"after"}"#)
            #expect(try await stayer.receiveJSON() == ["type": "said", "room": "r", "text": "after", "from": JSONValue(stayerID)])
            try await leaver.send(#"{"type":"say","room":"r","text":"x"}"#)
            #expect(try await leaver.receiveJSON() == ["type": "error", "error": "not in room r"], "and no said before it")
            try await leaver.send(#"{"type":"leave","room":"r"}"#)
            #expect(try await leaver.receiveJSON() == ["type": "error", "error": "not in room r"])
            #expect(server.chatRooms.memberLoops(of: "r").count == 1)
            for (client, _) in members { await client.close() }
        }
    }

    @Test("bad input gets an error naming it and the connection stays open")
    func errors() async throws {
        try await withChatServer { server, clients in
            let client = try await ChatClient.connect(port: server.localAddress.port, on: clients.loops[0])
            let cases: [(String, String)] = [
                ("{", "not JSON"), ("42", "expected a JSON object"), (#"{"type":"join","room":["r"]}"#, #""room" must be a string"#),
                (#"{"type":"say","room":"r","text":"hi"}"#, "not in room r"), (#"{"type":"dance"}"#, "unknown type"),
            ]
            for (request, expected) in cases {
                try await client.send(request)
                let reply = try await client.receiveJSON()
                #expect(reply["type"] == "error" && reply["error"]?.stringValue?.hasPrefix(expected) == true, "\(request) → \(reply)")
            }
            try await client.sendBinary([1, 2, 3])
            #expect(try await client.receiveJSON()["error"] == "expected a text frame holding a JSON object")
            _ = try await client.join("still-open")
            #expect(server.statistics.chatErrors.load(ordering: .relaxed) == cases.count + 1)
            await client.close()
        }
    }

    @Test("limits: rooms per connection, rooms per server, members per room; each refused by name")
    func limits() async throws {
        var configuration = ServerConfiguration()
        configuration.chatLimits.maximumRoomsPerConnection = 3
        configuration.chatLimits.maximumRooms = 4
        configuration.chatLimits.maximumMembers = 2
        try await withChatServer(configuration) { server, clients in
            let port = server.localAddress.port
            let a = try await ChatClient.connect(port: port, on: clients.loops[0])
            let b = try await ChatClient.connect(port: port, on: clients.loops[1])
            let c = try await ChatClient.connect(port: port, on: clients.loops[0])
            for room in ["r1", "r2", "r3"] { _ = try await a.join(room) }
            _ = try await a.join("r1")  // joining again is no new room
            try await a.send(#"{"type":"join","room":"r4"}"#)
            #expect(try await a.receiveJSON()["error"] == "already in 3 rooms: leave one first")
            _ = try await b.join("r1")
            try await c.send(#"{"type":"join","room":"r1"}"#)
            #expect(try await c.receiveJSON()["error"] == "room r1 is full (2 members)")
            _ = try await b.join("r4")
            try await c.send(#"{"type":"join","room":"r5"}"#)
            #expect(try await c.receiveJSON()["error"] == "the server holds 4 rooms: no new room")
            #expect(server.chatRooms.roomCount == 4)
            for client in [a, b, c] { await client.close() }
            try await waitUntil { server.chatRooms.roomCount == 0 }
        }
        let defaults = ChatLimits()
        #expect(defaults.maximumRooms == 65_536 && defaults.maximumMembers == 100_000)
        #expect(defaults.maximumRoomsPerConnection == 64 && defaults.maximumQueuedBytes == 1 << 20)
    }

    @Test("a member that stops reading: saids for it are dropped past its queue cap, counted; the others get all")
    func slowMember() async throws {
        var configuration = ServerConfiguration()
        configuration.chatLimits.maximumQueuedBytes = 64 * 1024
        configuration.writeTimeout = nil
        try await withChatServer(configuration) { server, clients in
            let members = try await connectSpread(2, to: server, clients: clients)
            let (speaker, _) = members[0]
            let (sleeper, _) = members[1]
            _ = try await speaker.join("r")
            _ = try await sleeper.join("r")
            // 24 MiB at the sleeper, far past what the kernel's buffers take: the rest must be dropped.
            let text = String(repeating: "z", count: 60_000)
            let count = 400
            for n in 0..<count {
                try await speaker.send(#"{"type":"say","room":"r","text":"\#(text)","ref":\#(n)}"#)
                let said = try await speaker.receiveJSON()
                #expect(said["ref"] == JSONValue(n))
            }
            let dropped = server.statistics.chatDropped.load(ordering: .relaxed)
            #expect(dropped > 0 && dropped < count, "dropped \(dropped)")
            // The sleeper's last said may still be on its way to its loop.
            try await waitUntil {
                server.statistics.chatDelivered.load(ordering: .relaxed) + server.statistics.chatDropped.load(ordering: .relaxed) == 2 * count
            }
            await sleeper.drop()
            await speaker.close()
            try await waitUntil { server.chatRooms.roomCount == 0 }
        }
    }

    @Test("members disconnecting mid-broadcast (closed and dropped): the others get every said, the registry empties")
    func disconnectMidBroadcast() async throws {
        try await withChatServer { server, clients in
            let members = try await connectSpread(4, to: server, clients: clients)
            for (client, _) in members { _ = try await client.join("r") }
            let (speaker, speakerID) = members[0]
            let (listener, _) = members[1]
            let count = 300
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    for n in 0..<count { try await speaker.send(#"{"type":"say","room":"r","text":"\#(n)"}"#) }
                }
                tasks.addTask {
                    await members[2].0.drop()
                    await members[3].0.close()
                }
                try await tasks.waitForAll()
            }
            for client in [speaker, listener] {
                for n in 0..<count {
                    let said = try await client.receiveJSON()
                    #expect(said["text"] == .string("\(n)") && said["from"] == JSONValue(speakerID), "\(said)")
                }
            }
            try await waitUntil { server.chatRooms.membershipCount == 2 }
            await speaker.close()
            await listener.close()
            try await waitUntil { server.chatRooms.roomCount == 0 }
        }
    }

    @Test("joins and disconnects in a bounded loop leave the registry empty (no leaked member)")
    func registryEmpties() async throws {
        try await withChatServer { server, clients in
            let port = server.localAddress.port
            for round in 0..<10 {
                var batch: [ChatClient] = []
                for index in 0..<20 {
                    let client = try await ChatClient.connect(port: port, on: clients.loops[index % 2])
                    for room in 0..<(1 + index % 4) { _ = try await client.join("r\((round + room) % 7)") }
                    batch.append(client)
                }
                #expect(server.chatRooms.membershipCount == (0..<20).reduce(0) { $0 + 1 + $1 % 4 })
                for (index, client) in batch.enumerated() {
                    if index % 2 == 0 { await client.close() } else { await client.drop() }
                }
                try await waitUntil { server.chatRooms.roomCount == 0 && server.chatRooms.membershipCount == 0 }
            }
            try await waitUntil { server.statistics.active.load(ordering: .relaxed) == 0 }
        }
    }
}
