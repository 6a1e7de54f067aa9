import Foundation
import JSON
import Profile
import Testing

private let schemaURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Profiles/profile.schema.json")

@Suite("Flow profiles: the schema", .timeLimit(.minutes(1)))
struct FlowProfileSchemaTests {
    let validator: SchemaValidator

    init() throws { validator = SchemaValidator(root: try JSONValue(parsing: Array(try Data(contentsOf: schemaURL)))) }

    @Test("every example of the contract validates against the schema and with the decoder")
    func contractExamples() throws {
        let text = flowProfile(data: contractData, contractChatScenario, contractSocketIOScenario, contractGraphQLScenario)
        #expect(validator.errors(try JSONValue(parsing: text)) == [])
        #expect(flowProblems(text) == [])
    }

    @Test("the schema refuses a step with no action, two actions, or a timed step without a name")
    func badSteps() throws {
        let text = flowProfile(rawFlow("""
            [{"name": "x"}, {"send": {"text": "a"}, "think": "1s"}, {"expect": {"any": true, "within": "1s"}},
             {"send": {"text": "a", "json": 1}}, {"sned": {}}]
            """))
        #expect(validator.errors(try JSONValue(parsing: text)).sorted() == [
            "$.scenarios[0].steps[0]: matches none of oneOf",
            "$.scenarios[0].steps[1]: matches several of oneOf",
            "$.scenarios[0].steps[2]: matches none of oneOf",
            "$.scenarios[0].steps[3].send: matches several of oneOf",
            "$.scenarios[0].steps[4]: matches none of oneOf",
        ])
        // And the decoder refuses each, with its path.
        #expect(flowProblemMessages(text) == [
            "scenarios[0].steps[0]: has no action",
            "scenarios[0].steps[1]: has 2 actions: send, think",
            "scenarios[0].steps[2].name: is required for a timed step (expect)",
            "scenarios[0].steps[3].send: has 2 payloads: text, json",
            "scenarios[0].steps[4].sned: unknown key",
            "scenarios[0].steps[4]: has no action",
        ])
    }

    @Test("the schema's flow enums are the decoder's choices")
    func enums() throws {
        let schema = try JSONValue(parsing: Array(try Data(contentsOf: schemaURL)))
        func choices(_ kind: String, _ key: String) -> [String]? {
            schema["$defs"]?[kind]?["properties"]?[key]?["enum"]?.arrayValue?.compactMap(\.stringValue)
        }
        #expect(choices("scenario", "protocol") == FlowScenario.Preset.allCases.map(\.rawValue))
        #expect(choices("dataSource", "format") == FeederSource.Format.allCases.map(\.rawValue))
        #expect(choices("dataSource", "mode") == FeederSource.Mode.allCases.map(\.rawValue))
        #expect(choices("expect", "onTimeout") == FlowFailurePolicy.allCases.map(\.rawValue))
        let actions = schema["$defs"]?["flowStep"]?["oneOf"]?.arrayValue?.compactMap { $0["required"]?.arrayValue?.first?.stringValue }
        #expect(actions == ProfileDecoder.keys["flowStep"]!.filter { $0 != "name" })
    }
}
