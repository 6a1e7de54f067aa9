import Flow
import JSON
import Testing

/// Socket.IO 5 packets against the examples of socket.io-protocol (v5) and hostile input.
@Suite("Socket.IO codec", .timeLimit(.minutes(2)))
struct SocketIOTests {
    @Test(arguments: [
        ("0", SocketIOPacket.connect(namespace: "/", payload: nil)),
        (#"0{"token":"123"}"#, .connect(namespace: "/", payload: ["token": "123"])),
        ("0/admin,", .connect(namespace: "/admin", payload: nil)),
        (#"0/admin,{"token":"123"}"#, .connect(namespace: "/admin", payload: ["token": "123"])),
        (#"0{"sid":"oSO0OpakMV_3jnilAAAA"}"#, .connect(namespace: "/", payload: ["sid": "oSO0OpakMV_3jnilAAAA"])),
        ("1", .disconnect(namespace: "/")),
        ("1/admin,", .disconnect(namespace: "/admin")),
        (#"2["hello",1]"#, .event(namespace: "/", ackID: nil, arguments: ["hello", 1])),
        (#"2/admin,456["project:delete",123]"#,
         .event(namespace: "/admin", ackID: 456, arguments: ["project:delete", 123])),
        (#"212["echo",{"a":[1,2]}]"#, .event(namespace: "/", ackID: 12, arguments: ["echo", ["a": [1, 2]]])),
        ("3/admin,456[]", .ack(namespace: "/admin", ackID: 456, arguments: [])),
        (#"30[{"ok":true}]"#, .ack(namespace: "/", ackID: 0, arguments: [["ok": true]])),
        (#"4{"message":"Not authorized"}"#, .connectError(namespace: "/", payload: ["message": "Not authorized"])),
        (#"4/admin,{"message":"x"}"#, .connectError(namespace: "/admin", payload: ["message": "x"])),
        (#"218446744073709551615["x"]"#,
         .event(namespace: "/", ackID: UInt64.max, arguments: ["x"])),
    ])
    func vectorsRoundTripByteExactly(text: String, packet: SocketIOPacket) throws {
        #expect(try SocketIOPacket.decode(text).get() == packet)
        #expect(packet.encoded == text)
    }

    @Test func binaryHeadersDecodeAsBinaryPacketsWithTheirAttachmentCount() throws {
        #expect(try SocketIOPacket.decode(#"51-["x",{"_placeholder":true,"num":0}]"#).get()
            == .binaryEvent(namespace: "/", attachments: 1))
        #expect(try SocketIOPacket.decode(#"52-/admin,7["x",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]"#).get()
            == .binaryEvent(namespace: "/admin", attachments: 2))
        #expect(try SocketIOPacket.decode(#"61-/admin,456[{"_placeholder":true,"num":0}]"#).get()
            == .binaryAck(namespace: "/admin", attachments: 1))
        #expect(SocketIOPacket.binaryEvent(namespace: "/admin", attachments: 3).encoded == "53-/admin,")
    }

    @Test func aNamespaceAtTheEndOfThePacketNeedsNoComma() throws {
        #expect(try SocketIOPacket.decode("1/admin").get() == .disconnect(namespace: "/admin"))
        #expect(try SocketIOPacket.decode("0/chat").get() == .connect(namespace: "/chat", payload: nil))
    }

    @Test(arguments: [
        "", "7", "x", "9[]", #"2"#, #"2{}"#, #"2[]"#, #"2[1]"#, #"2x"#, #"2["a""#, "3[]", "3", #"3{"a":1}"#,
        #"31{}"#, "0[1]", #"0"x""#, "05", "15", #"1["a"]"#, "1/admin,3", #"4[1]"#, "5", "5-", "51", "51x", "5x-",
        "0/ad min,", "0/a\u{1}b,", "0/" + String(repeating: "n", count: 256) + ",",
        #"218446744073709551616["x"]"#, #"299999999999999999999999999["x"]"#,
        "5" + "99999999999999999999999" + "-[]", "318446744073709551616[]",
    ])
    func malformedPacketsAreErrors(text: String) {
        #expect(throws: FlowProtocolError.self) { try SocketIOPacket.decode(text).get() }
    }

    @Test func anAckIDPastUInt64IsAnErrorNamingItsPlace() throws {
        let error = try #require(SocketIOPacket.decode(#"2/chat,18446744073709551616["x"]"#).failureValue)
        #expect(error.offset == 7)
        #expect(error.message.contains("ack id"))
    }

    @Test func connectErrorMayCarryAPlainStringAsOlderServersSend() throws {
        #expect(try SocketIOPacket.decode(#"4"Not authorized""#).get()
            == .connectError(namespace: "/", payload: "Not authorized"))
    }

    @Test func namespaceSyntax() {
        #expect(SocketIOPacket.isValidNamespace("/"))
        #expect(SocketIOPacket.isValidNamespace("/admin"))
        #expect(SocketIOPacket.isValidNamespace("/a/b-c_d.é"))
        #expect(!SocketIOPacket.isValidNamespace(""))
        #expect(!SocketIOPacket.isValidNamespace("admin"))
        #expect(!SocketIOPacket.isValidNamespace("/a,b"))
        #expect(!SocketIOPacket.isValidNamespace("/a b"))
        #expect(SocketIOPacket.isValidNamespace("/" + String(repeating: "n", count: 255)))
        #expect(!SocketIOPacket.isValidNamespace("/" + String(repeating: "n", count: 256)))
    }

    @Test func eventArgumentsAreEscapedJSONNeverConcatenatedText() {
        let packet = SocketIOPacket.event(namespace: "/", ackID: 1, arguments: ["say", ["text": "\"},\"x\":[\n"]])
        #expect(packet.encoded == #"21["say",{"text":"\"},\"x\":[\n"}]"#)
    }

    @Test func hostileInput() {
        let limit = PresetLimits.maximumPacketBytes
        #expect(throws: FlowProtocolError.self) {
            try SocketIOPacket.decode(#"2["x",""# + String(repeating: "a", count: limit) + #""]"#).get()
        }
        #expect(throws: FlowProtocolError.self) {
            try SocketIOPacket.decode(#"2["x","# + String(repeating: "[", count: 200_000)).get()
        }
        #expect(throws: FlowProtocolError.self) { try SocketIOPacket.decode(#"2["x",{"a":1,"a":2}]"#).get() }
        var generator = SeededGenerator(seed: 0x5010)
        for _ in 0..<5000 {
            _ = SocketIOPacket.decode(generator.hostileText(alphabet: Array("0123456789-/,[]{}\":ab".utf8)))
        }
    }
}
