import Flow
import JSON
import Testing

@Suite("Flow model", .timeLimit(.minutes(1)))
struct FlowModelTests {
    @Test("a JSON template's objects compare in key order")
    func objectKeyOrder() {
        let ab = JSONTemplate.object([(key: "a", value: .constant(1)), (key: "b", value: .constant(2))])
        let ba = JSONTemplate.object([(key: "b", value: .constant(2)), (key: "a", value: .constant(1))])
        #expect(ab == ab)
        #expect(ab != ba)
    }

    @Test("a feeder table's row count is its values over its width")
    func rowCount() {
        #expect(FeederTable(columns: ["a", "b"], values: [.string("1"), nil, .string("2"), .string("3")]).rowCount == 2)
        #expect(FeederTable(columns: [], values: []).rowCount == 0)
    }
}
