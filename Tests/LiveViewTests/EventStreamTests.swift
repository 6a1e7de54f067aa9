import HTTP1
import Runtime
import Synchronization
import Testing
import TestSupport
@testable import LiveView

@Suite struct EventStreamTests {
    @Test("an event is `event:`, one `data:` line per line of its data, and a blank line; names lose CR and LF")
    func wireForm() {
        #expect(EventStream.encode(event: "frame", data: #"{"a":1}"#) == Array("event: frame\ndata: {\"a\":1}\n\n".utf8))
        #expect(EventStream.encode(event: "x\r\ny", data: "one\ntwo\r\nthree\rfour")
            == Array("event: xy\ndata: one\ndata: two\ndata: three\ndata: four\n\n".utf8))
        #expect(EventStream.encode(event: "e", data: "") == Array("event: e\ndata: \n\n".utf8))
    }

    @Test("without sockets: a subscriber gets the kept backlog (the newest, in order), then what is published, then the end")
    func backlogThenLive() async {
        let stream = EventStream(backlogLimit: 2)
        stream.publish(event: "a", data: "1", keep: true)
        stream.publish(event: "skip", data: "not kept", keep: false)
        stream.publish(event: "a", data: "2", keep: true)
        stream.publish(event: "a", data: "3", keep: true)
        let subscription = stream.subscribe(disconnect: {})
        #expect(subscription.replay == [EventStream.encode(event: "a", data: "2"), EventStream.encode(event: "a", data: "3")])
        stream.publish(event: "live", data: "4", keep: false)
        stream.publish(event: "live", data: "5", keep: true)
        let batch = await subscription.next()
        #expect(batch.bytes == EventStream.encode(event: "live", data: "4") + EventStream.encode(event: "live", data: "5"))
        #expect(!batch.isEnded)
        stream.finish()
        stream.publish(event: "late", data: "6", keep: true)
        let end = await subscription.next()
        #expect(end.isEnded && end.bytes.isEmpty && !end.isDropped)
        subscription.cancel()
        #expect(stream.clientCount == 0)

        let late = stream.subscribe(disconnect: {})
        #expect(late.replay == [EventStream.encode(event: "a", data: "3"), EventStream.encode(event: "live", data: "5")])
        #expect(await late.next().isEnded, "a client after the finish gets the backlog and the end")
        late.cancel()
    }

    @Test("without sockets: a subscriber that takes nothing is dropped at the unsent cap, its queue freed, never more held")
    func dropAtCap() async {
        let stream = EventStream(backlogLimit: 0, unsentLimit: 1000)
        let disconnects = Atomic(0)
        let slow = stream.subscribe(disconnect: { disconnects.add(1, ordering: .relaxed) })
        let data = String(repeating: "x", count: 83)  // 100 bytes with the framing
        for _ in 0..<10 {
            stream.publish(event: "e", data: data, keep: false)
            #expect(stream.unsentByteCount <= 1000)
        }
        #expect(stream.unsentByteCount == 1000 && disconnects.load(ordering: .relaxed) == 0, "exactly at the cap is kept")
        stream.publish(event: "e", data: data, keep: false)
        #expect(disconnects.load(ordering: .relaxed) == 1 && stream.droppedClientCount == 1 && stream.unsentByteCount == 0)
        stream.publish(event: "e", data: data, keep: false)
        #expect(disconnects.load(ordering: .relaxed) == 1 && stream.unsentByteCount == 0, "a dropped client gets nothing more")
        let batch = await slow.next()
        #expect(batch.isDropped && batch.isEnded && batch.bytes.isEmpty)
        slow.cancel()
    }

    @Test("over a socket: the backlog replays to a client, live events follow, the finish ends the stream (EOF)")
    func streamOverSocket() async throws {
        let stream = EventStream(backlogLimit: 2)
        stream.publish(event: "frame", data: "1", keep: true)
        stream.publish(event: "frame", data: "2", keep: true)
        stream.publish(event: "frame", data: "3", keep: true)
        stream.publish(event: "note", data: "not kept", keep: false)
        try await withLiveServer(stream: stream) { server, loop in
            var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { client.close() }
            try await client.request("/events")
            #expect(await client.read(until: "data: 3\n\n"))
            var parser = HTTPHeadParser()
            let (head, length) = try #require(try parser.parseResponse(client.buffer))
            #expect(head.status == 200)
            #expect(head.headers["Content-Type"] == "text/event-stream; charset=utf-8")
            #expect(head.headers["Connection"] == "close" && head.headers["Content-Length"] == nil)
            #expect(head.headers["Cache-Control"] == "no-store")
            client.buffer.removeFirst(length)
            #expect(client.text == "event: frame\ndata: 2\n\nevent: frame\ndata: 3\n\n")

            try await waitUntil { stream.clientCount == 1 }
            stream.publish(event: "frame", data: "4", keep: true)
            stream.publish(event: "summary", data: #"{"done":true}"#, keep: true)
            stream.finish()
            #expect(await client.readToEnd(), "the stream ended with the connection")
            #expect(client.text == "event: frame\ndata: 2\n\nevent: frame\ndata: 3\n\nevent: frame\ndata: 4\n\n"
                + "event: summary\ndata: {\"done\":true}\n\n")

            // A client after the finish: the backlog, then the end.
            var late = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { late.close() }
            try await late.request("/events")
            #expect(await late.readToEnd())
            #expect(late.text.hasSuffix("\r\n\r\nevent: frame\ndata: 4\n\nevent: summary\ndata: {\"done\":true}\n\n"))

            // HEAD: the stream's head only.
            var headClient = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { headClient.close() }
            try await headClient.request("/events", method: "HEAD")
            let (headOnly, body) = try await headClient.readResponse(isHead: true)
            #expect(headOnly.status == 200 && body.isEmpty)
            #expect(await headClient.readToEnd() && headClient.buffer.isEmpty)
        }
    }

    @Test("a streaming client that goes away is forgotten at once")
    func clientLeaves() async throws {
        let stream = EventStream(backlogLimit: 1)
        try await withLiveServer(stream: stream) { server, loop in
            let client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            try await client.request("/events")
            try await waitUntil { stream.clientCount == 1 }
            client.close()
            try await waitUntil { stream.clientCount == 0 && server.statistics.open.load(ordering: .relaxed) == 0 }
        }
    }

    @Test("a streaming client that stops reading is dropped at the unsent cap, not buffered without bound")
    func slowClientDropped() async throws {
        var limits = LiveServer.Limits()
        limits.maximumUnsentEventBytes = 128 * 1024
        limits.writeTimeout = .seconds(600)  // only the cap may drop it here
        let stream = EventStream(backlogLimit: 0, unsentLimit: limits.maximumUnsentEventBytes)
        let cap = limits.maximumUnsentEventBytes
        try await withLiveServer(limits: limits, stream: stream) { server, loop in
            var client = try await LiveTestClient.connect(to: server.boundAddress, on: loop)
            defer { client.close() }
            try await client.request("/events")
            #expect(await client.read(until: "\r\n\r\n"))
            try await waitUntil { stream.clientCount == 1 }
            // The client reads no more. 32 KiB events: the socket buffers fill, then the server's queue, then the cap.
            let data = String(repeating: "x", count: 32 * 1024)
            var published = 0
            while stream.droppedClientCount == 0 && published < 4096 {  // 128 MiB at most: far past any socket buffer
                stream.publish(event: "frame", data: data, keep: false)
                published += 1
                #expect(stream.unsentByteCount <= cap)
                try await loop.sleep(for: .milliseconds(1))
            }
            #expect(stream.droppedClientCount == 1, "dropped after \(published) events")
            try await waitUntil { stream.clientCount == 0 && server.statistics.open.load(ordering: .relaxed) == 0 }
            // What reached the client before the drop is far less than what was published.
            #expect(await client.readToEnd())
            #expect(client.buffer.count < published * data.utf8.count)
        }
    }
}
