import Testing
@testable import WebSocket

/// `#expect` cannot call mutating methods: validate through this.
func validating(_ validator: inout UTF8Validator, _ bytes: [UInt8]) -> Bool { validator.validate(bytes) }

@Suite("UTF-8 validation", .timeLimit(.minutes(1)))
struct UTF8ValidatorTests {
    @Test("valid text, including the extremes", arguments: [
        [], Array("plain ASCII text that is longer than eight bytes".utf8), Array("κόσμε".utf8),
        [0xF4, 0x8F, 0xBF, 0xBF], [0xEF, 0xBF, 0xBF], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0x7F], [0xC2, 0x80],
        [0xF0, 0x90, 0x80, 0x80],
    ] as [[UInt8]])
    func valid(bytes: [UInt8]) {
        var validator = UTF8Validator()
        #expect(validating(&validator, bytes))
        #expect(validator.isComplete)
    }

    @Test("invalid: overlongs, surrogates, beyond U+10FFFF, stray and bad bytes — at the first bad byte", arguments: [
        ([0xC0, 0x80], 0), ([0xC1, 0xBF], 0), ([0xE0, 0x80, 0x80], 1), ([0xE0, 0x9F, 0xBF], 1),
        ([0xF0, 0x80, 0x80, 0x80], 1), ([0xF0, 0x8F, 0xBF, 0xBF], 1),
        ([0xED, 0xA0, 0x80], 1), ([0xED, 0xBF, 0xBF], 1),
        ([0xF4, 0x90, 0x80, 0x80], 1), ([0xF5, 0x80, 0x80, 0x80], 0), ([0xFF], 0), ([0xFE], 0),
        ([0x80], 0), ([0xBF], 0), ([0x41, 0x42, 0xC2, 0x41], 3),
        (Array("0123456789abcdef".utf8) + [0xE2, 0x28, 0xA1], 17),
    ] as [([UInt8], Int)])
    func invalid(bytes: [UInt8], index: Int) {
        var validator = UTF8Validator()
        let found = bytes.withUnsafeBufferPointer { validator.firstInvalidIndex(in: $0) }
        #expect(found == index)
    }

    @Test("a code point split across pieces validates; a truncated one is incomplete")
    func splitAcrossPieces() {
        let text = Array("a€𝄞b".utf8)
        for split in 0...text.count {
            var validator = UTF8Validator()
            #expect(validating(&validator, Array(text[..<split])))
            #expect(validating(&validator, Array(text[split...])))
            #expect(validator.isComplete)
        }
        var truncated = UTF8Validator()
        #expect(validating(&truncated, [0xF0, 0x9D, 0x84]))
        #expect(!truncated.isComplete)
    }
}
