import JSON

/// The path grammar: `$`, then any number of `.name` (letters, digits, `_`, `-`), `["any key"]` (a JSON string)
/// and `[N]` (N ≥ 0). Nothing else: no wildcards, no filters, no slices.
extension JSONPath {
    /// The most components a path may have (a deeper path is surely a mistake, and the JSON parser caps depth).
    package static let maximumComponents = 256

    /// Parses a path; an error's offset is the byte offset in `text` where the problem is.
    package static func parse(_ text: String) -> Result<JSONPath, TemplateSyntaxError> {
        let bytes = Array(text.utf8)
        func failure(_ message: String, at offset: Int) -> Result<JSONPath, TemplateSyntaxError> {
            .failure(TemplateSyntaxError(offset: offset, message: message))
        }
        guard bytes.first == UInt8(ascii: "$") else { return failure("a path starts with $", at: 0) }
        var components: [Component] = []
        var position = 1
        while position < bytes.count {
            guard components.count < maximumComponents else {
                return failure("a path has at most \(maximumComponents) components", at: position)
            }
            switch bytes[position] {
            case UInt8(ascii: "."):
                let start = position + 1
                var end = start
                while end < bytes.count, isNameByte(bytes[end]) { end += 1 }
                guard end > start else {
                    return failure("expected a name after . (letters, digits, _ or -; use [\"...\"] for others)",
                                   at: start)
                }
                components.append(.key(String(decoding: bytes[start..<end], as: UTF8.self)))
                position = end
            case UInt8(ascii: "["):
                let start = position + 1
                guard start < bytes.count else { return failure("expected an index or a quoted key after [", at: start) }
                if bytes[start] == UInt8(ascii: "\"") {
                    switch parseQuotedKey(bytes, from: start) {
                    case .failure(let error): return .failure(error)
                    case .success(let (key, end)):
                        components.append(.key(key))
                        position = end
                    }
                } else {
                    var end = start
                    while end < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) { end += 1 }
                    guard end > start else {
                        return failure("expected an index (0, 1, ...) or a quoted key after [", at: start)
                    }
                    guard let index = Int(String(decoding: bytes[start..<end], as: UTF8.self)) else {
                        return failure("the index is too large", at: start)
                    }
                    guard end < bytes.count, bytes[end] == UInt8(ascii: "]") else {
                        return failure("expected ] after the index", at: end)
                    }
                    components.append(.index(index))
                    position = end + 1
                }
            default:
                return failure("expected . or [ (paths have no wildcards or filters)", at: position)
            }
        }
        return .success(JSONPath(components: components, description: text))
    }

    /// The value the path names in `value`, or nil when a key or index is absent (or the kind differs).
    package func evaluate(_ value: JSONValue) -> JSONValue? {
        var current = value
        for component in components {
            switch component {
            case .key(let key):
                guard case .object(let object) = current, let member = object[key] else { return nil }
                current = member
            case .index(let index):
                guard case .array(let elements) = current, index < elements.count else { return nil }
                current = elements[index]
            }
        }
        return current
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }

    /// `"..."]` from the opening quote at `start`: the key (JSON string escapes) and the offset after the `]`.
    private static func parseQuotedKey(_ bytes: [UInt8], from start: Int) -> Result<(String, Int), TemplateSyntaxError> {
        var position = start + 1
        while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
            if bytes[position] == UInt8(ascii: "\\") { position += 1 }
            position += 1
        }
        guard position < bytes.count else {
            return .failure(TemplateSyntaxError(offset: start, message: "unterminated quoted key"))
        }
        // The quoted key is a JSON string: the JSON parser decodes its escapes (and refuses bad ones).
        let key: String
        do {
            let value = try JSONValue(parsing: bytes[start...position])
            guard case .string(let text) = value else {
                return .failure(TemplateSyntaxError(offset: start, message: "a quoted key must be a string"))
            }
            key = text
        } catch {
            return .failure(TemplateSyntaxError(offset: start + error.offset,
                                                message: "bad quoted key: \(error.reason)"))
        }
        let end = position + 1
        guard end < bytes.count, bytes[end] == UInt8(ascii: "]") else {
            return .failure(TemplateSyntaxError(offset: end, message: "expected ] after the quoted key"))
        }
        return .success((key, end + 1))
    }
}
