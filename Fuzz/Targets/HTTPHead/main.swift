// HTTP/1.1 head parser, requests and responses. Properties: feeding the bytes in pieces (the parser
// resumes its scan) finds the same head as feeding them at once; a parsed head serializes to bytes that
// parse back to the same head.
import FuzzSupport
import HTTP1

enum Head: Equatable {
    case request(HTTPRequestHead, Int)
    case response(HTTPResponseHead, Int)
}

func parse(_ pieces: [ArraySlice<UInt8>], isRequest: Bool) -> Result<Head?, HTTPParseError> {
    var parser = HTTPHeadParser(maximumHeadSize: 4096, maximumHeaderCount: 32)
    var buffer: [UInt8] = []
    for piece in pieces {
        buffer.append(contentsOf: piece)
        do {
            if isRequest {
                if let (head, length) = try parser.parseRequest(buffer) { return .success(.request(head, length)) }
            } else {
                if let (head, length) = try parser.parseResponse(buffer) { return .success(.response(head, length)) }
            }
        } catch {
            return .failure(error)
        }
    }
    return .success(nil)
}

fuzzMain { data in
    var input = FuzzInput(data)
    let options = input.byte()
    let step = input.byte()
    let isRequest = options & 1 == 0
    let whole = parse(input.pieces(step: 0), isRequest: isRequest)
    let split = parse(input.pieces(step: step), isRequest: isRequest)
    switch (whole, split) {
    case (.success(let a), .success(let b)): fuzzCheck(a == b, "pieces of \(step) bytes parse to another head")
    case (.failure, .failure): break
    default: fuzzCheck(false, "pieces of \(step) bytes change success: \(whole) vs \(split)")
    }
    guard case .success(let head?) = whole else { return }
    switch head {
    case .request(let request, _):
        let again = parse([request.serialized()[...]], isRequest: true)
        guard case .success(.request(let reparsed, _)?) = again else {
            return fuzzCheck(false, "a parsed request head does not reparse from its serialization: \(again)")
        }
        fuzzCheck(reparsed == request, "request head changed on serialize → parse: \(request) vs \(reparsed)")
    case .response(let response, _):
        let again = parse([response.serialized()[...]], isRequest: false)
        guard case .success(.response(let reparsed, _)?) = again else {
            return fuzzCheck(false, "a parsed response head does not reparse from its serialization: \(again)")
        }
        fuzzCheck(reparsed == response, "response head changed on serialize → parse: \(response) vs \(reparsed)")
    }
}
