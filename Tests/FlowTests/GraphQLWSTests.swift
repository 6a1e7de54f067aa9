import Flow
import JSON
import Testing

/// graphql-transport-ws messages (enisdenjo/graphql-ws PROTOCOL.md) and hostile input.
@Suite("graphql-transport-ws codec", .timeLimit(.minutes(2)))
struct GraphQLWSTests {
    @Test(arguments: [
        (#"{"type":"connection_init"}"#, GraphQLWSMessage.connectionInit(payload: nil)),
        (#"{"type":"connection_init","payload":{"token":"t"}}"#, .connectionInit(payload: ["token": "t"])),
        (#"{"type":"connection_init","payload":null}"#, .connectionInit(payload: .null)),
        (#"{"type":"connection_ack"}"#, .connectionAck(payload: nil)),
        (#"{"type":"connection_ack","payload":{"v":1}}"#, .connectionAck(payload: ["v": 1])),
        (#"{"type":"ping"}"#, .ping(payload: nil)),
        (#"{"type":"pong","payload":{"at":3}}"#, .pong(payload: ["at": 3])),
        (#"{"id":"1","type":"subscribe","payload":{"query":"{ hello }"}}"#,
         .subscribe(id: "1", query: "{ hello }", variables: nil, operationName: nil, extensions: nil)),
        (#"{"id":"c","type":"subscribe","payload":{"query":"subscription($n: Int) { count(to: $n) }","#
            + #""variables":{"n":5},"operationName":"C","extensions":{"e":true}}}"#,
         .subscribe(id: "c", query: "subscription($n: Int) { count(to: $n) }", variables: ["n": 5],
                    operationName: "C", extensions: ["e": true])),
        (#"{"id":"1","type":"next","payload":{"data":{"hello":"world"}}}"#,
         .next(id: "1", payload: ["data": ["hello": "world"]])),
        (#"{"id":"1","type":"error","payload":[{"message":"boom"}]}"#,
         .error(id: "1", errors: [["message": "boom"]])),
        (#"{"id":"1","type":"complete"}"#, .complete(id: "1")),
    ])
    func everyMessageTypeRoundTripsByteExactly(text: String, message: GraphQLWSMessage) throws {
        #expect(try GraphQLWSMessage.decode(text).get() == message)
        #expect(message.encoded == text)
    }

    @Test func fieldOrderOnTheWireDoesNotMatterWhenDecoding() throws {
        #expect(try GraphQLWSMessage.decode(#"{"payload":{"data":null},"type":"next","id":"9"}"#).get()
            == .next(id: "9", payload: ["data": .null]))
        #expect(try GraphQLWSMessage.decode(
            #"{"type":"subscribe","id":"2","payload":{"operationName":null,"variables":null,"query":"q"}}"#).get()
            == .subscribe(id: "2", query: "q", variables: .null, operationName: nil, extensions: nil))
    }

    @Test(arguments: [
        "", "x", "[]", "1", "{}", #"{"type":1}"#, #"{"type":"start","id":"1"}"#, #"{"type":"connection_error"}"#,
        #"{"type":"connection_init","payload":"t"}"#, #"{"type":"ping","payload":[1]}"#,
        #"{"type":"complete"}"#, #"{"type":"complete","id":""}"#, #"{"type":"complete","id":1}"#,
        #"{"type":"next","payload":{}}"#, #"{"id":"1","type":"next"}"#, #"{"id":"1","type":"next","payload":[1]}"#,
        #"{"id":"1","type":"error","payload":{"message":"x"}}"#, #"{"id":"1","type":"error","payload":[]}"#,
        #"{"id":"1","type":"error"}"#, #"{"id":"1","type":"subscribe"}"#, #"{"id":"1","type":"subscribe","payload":{}}"#,
        #"{"type":"subscribe","payload":{"query":"q"}}"#, #"{"id":"1","type":"subscribe","payload":{"query":1}}"#,
        #"{"id":"1","type":"subscribe","payload":{"query":"q","variables":[1]}}"#,
        #"{"id":"1","type":"subscribe","payload":{"query":"q","operationName":3}}"#,
        #"{"id":"1","type":"subscribe","payload":{"query":"q","extensions":"e"}}"#,
        #"{"type":"ping"} "# + "x", #"{"type":"ping","type":"pong"}"#,
    ])
    func malformedMessagesAreErrors(text: String) {
        #expect(throws: FlowProtocolError.self) { try GraphQLWSMessage.decode(text).get() }
    }

    @Test func anUnknownTypeIsAnErrorThatDoesNotQuoteTheMessage() throws {
        let error = try #require(GraphQLWSMessage.decode(#"{"type":"secret-type-name"}"#).failureValue)
        #expect(error.message.contains("unknown message type"))
        #expect(!error.description.contains("secret"))
    }

    @Test func hostileInput() {
        let limit = PresetLimits.maximumPacketBytes
        let huge = #"{"id":"1","type":"next","payload":{"data":""# + String(repeating: "a", count: limit) + #""}}"#
        #expect(GraphQLWSMessage.decode(huge).failureValue?.message.contains("over the limit") == true)
        let bomb = #"{"id":"1","type":"next","payload":"# + String(repeating: #"{"a":"#, count: 100_000)
        #expect(throws: FlowProtocolError.self) { try GraphQLWSMessage.decode(bomb).get() }
        var generator = SeededGenerator(seed: 0x6A11)
        for _ in 0..<5000 {
            _ = GraphQLWSMessage.decode(generator.hostileText(alphabet: Array(#"{}[]":,typeidnextpayload"#.utf8)))
        }
    }

    @Test func theSubprotocolName() { #expect(GraphQLWSMessage.subprotocol == "graphql-transport-ws") }
}
