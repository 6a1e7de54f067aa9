import Foundation
import JSON
import LoadEngine
import Profile
import Reporting
import Testing

private let profilesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Profiles")

private func loadJSON(_ url: URL) throws -> JSONValue {
    try JSONValue(parsing: Array(try Data(contentsOf: url)))
}

@Suite("Profiles and their schema", .timeLimit(.minutes(2)))
struct SchemaTests {
    let schema: JSONValue

    init() throws { schema = try loadJSON(profilesDirectory.appendingPathComponent("profile.schema.json")) }

    /// The schema object that describes the decoder's object `kind`.
    func definition(_ kind: String) -> JSONValue? { kind == "profile" ? schema : schema["$defs"]?[kind] }

    @Test("every object the decoder reads has a schema definition with exactly its keys, closed to others")
    func keysAgree() throws {
        for (kind, keys) in ProfileDecoder.keys {
            let entry = try #require(definition(kind), "no schema definition for \(kind)")
            let properties = try #require(entry["properties"]?.objectValue, "\(kind) has no properties")
            #expect(Set(properties.keys) == Set(keys), "\(kind)")
            #expect(entry["additionalProperties"] == .bool(false), "\(kind) must reject unknown keys as the decoder does")
        }
        // And no schema definition of an object is unknown to the decoder.
        for (name, definition) in schema["$defs"]?.objectValue?.members ?? [] where definition["properties"] != nil {
            #expect(ProfileDecoder.keys[name] != nil, "schema definition \(name) is not an object the decoder reads")
        }
    }

    @Test("the schema's enums are the decoder's choices")
    func enumsAgree() throws {
        func choices(_ kind: String, _ key: String) -> [String]? {
            definition(kind)?["properties"]?[key]?["enum"]?.arrayValue?.compactMap(\.stringValue)
        }
        #expect(choices("scenario", "pattern") == WebSocketScenario.Pattern.allCases.map(\.rawValue))
        #expect(choices("scenario", "kind") == Scenario.Kind.allCases.map(\.rawValue))
        #expect(choices("message", "format") == WebSocketScenario.MessageFormat.allCases.map(\.rawValue))
        #expect(choices("reconnect", "jitter") == ["none", "full", "equal", "decorrelated"])
        #expect(choices("schedule", "model") == ["closed", "open"])
        #expect(choices("auth", "type") == ["bearer", "header", "query"])
    }

    @Test("every profile in Profiles/ validates with the decoder and against the schema")
    func shippedProfiles() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: profilesDirectory.path)
            .filter { $0.hasSuffix(".json") && $0 != "profile.schema.json" }.sorted()
        #expect(files == ["downloads-1k.json", "echo-1k.json", "flow-chat.json", "graphql-subscriptions.json", "idle-10k.json",
                          "open-model.json", "quickstart.json", "reconnect-storm.json", "soak-storm.json", "soak.json",
                          "socketio-chat.json", "transfers.json"])
        for file in files {
            let data = try Data(contentsOf: profilesDirectory.appendingPathComponent(file))
            do {
                _ = try ProfileDecoder.decode(Array(data))
            } catch {
                Issue.record("\(file): \(error)")
            }
            let document = try JSONValue(parsing: Array(data))
            #expect(SchemaValidator(root: schema).errors(document) == [], "\(file)")
        }
    }

    @Test("the schema refuses what the decoder refuses structurally")
    func schemaRejects() throws {
        let validator = SchemaValidator(root: schema)
        let bad = try JSONValue(parsing: """
            {"version": 1, "name": "x y", "target": "http://a", "duration": "10x", "surprise": 1,
             "scenarios": [{"name": "s", "pattern": "echoo", "message": {"size": {"min": 1}}}]}
            """)
        #expect(validator.errors(bad).sorted() == [
            "$.duration: does not match ^[0-9]+(\\.[0-9]+)?(us|ms|s|m|h)$",
            "$.name: does not match ^[A-Za-z0-9._-]+$",
            "$.scenarios[0].message.size: matches none of oneOf",
            "$.scenarios[0].pattern: not one of the enum",
            "$.surprise: not allowed",
            "$.target: does not match ^(embedded|wss?://.+)$",
        ])
    }
}

/// Just enough of JSON Schema 2020-12 for this schema: type, const, enum, pattern, minimum, maximum,
/// minItems, required, properties, additionalProperties, items, oneOf, $ref.
struct SchemaValidator {
    let root: JSONValue

    func errors(_ value: JSONValue) -> [String] { check(value, against: root, path: "$") }

    private func resolve(_ schema: JSONValue) -> JSONValue {
        guard let reference = schema["$ref"]?.stringValue, reference.hasPrefix("#/$defs/") else { return schema }
        return root["$defs"]?[String(reference.dropFirst("#/$defs/".count))] ?? .null
    }

    private func check(_ value: JSONValue, against schemaValue: JSONValue, path: String) -> [String] {
        let schema = resolve(schemaValue)
        var errors: [String] = []
        if let alternatives = schema["oneOf"]?.arrayValue {
            let matching = alternatives.filter { check(value, against: $0, path: path).isEmpty }.count
            if matching != 1 { return ["\(path): matches \(matching == 0 ? "none" : "several") of oneOf"] }
        }
        if let constant = schema["const"], constant != value { errors.append("\(path): is not \(constant.formatted())") }
        if let choices = schema["enum"]?.arrayValue, !choices.contains(value) { errors.append("\(path): not one of the enum") }
        if let type = schema["type"]?.stringValue {
            let matches: Bool
            switch (type, value) {
            case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("number", .number): matches = true
            case ("integer", _): matches = value.integerValue != nil
            default: matches = false
            }
            if !matches { return errors + ["\(path): expected \(type)"] }
        }
        if let pattern = schema["pattern"]?.stringValue, let text = value.stringValue,
            text.range(of: pattern, options: .regularExpression) == nil
        {
            errors.append("\(path): does not match \(pattern)")
        }
        if let number = value.numberValue {
            if let minimum = schema["minimum"]?.numberValue, number < minimum { errors.append("\(path): below \(minimum)") }
            if let maximum = schema["maximum"]?.numberValue, number > maximum { errors.append("\(path): above \(maximum)") }
        }
        if let elements = value.arrayValue {
            if let minimum = schema["minItems"]?.integerValue, elements.count < minimum { errors.append("\(path): too few items") }
            if let items = schema["items"] {
                for (index, element) in elements.enumerated() { errors += check(element, against: items, path: "\(path)[\(index)]") }
            }
        }
        if let object = value.objectValue {
            for key in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where object[key] == nil {
                errors.append("\(path).\(key): required")
            }
            let properties = schema["properties"]?.objectValue ?? JSONObject()
            for (key, member) in object.members {
                if let property = properties[key] {
                    errors += check(member, against: property, path: "\(path).\(key)")
                } else if let additional = schema["additionalProperties"] {
                    if additional == .bool(false) {
                        errors.append("\(path).\(key): not allowed")
                    } else if additional.objectValue != nil {
                        errors += check(member, against: additional, path: "\(path).\(key)")
                    }
                }
            }
        }
        return errors
    }
}
