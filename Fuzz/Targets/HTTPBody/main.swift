// HTTP body framing and decoders: a response head (its Content-Length / Transfer-Encoding chooses the
// framing) followed by body bytes, decoded whole and in pieces. Properties: the split does not change the
// decoded bytes, the outcome or the bytes left over; delivered bytes equal `bodyBytes`.
import FuzzSupport
import HTTP1

struct Outcome: Equatable {
    var body: [UInt8] = []
    var isComplete = false
    var leftOver = 0
    var error: HTTPParseError?
    var finishError: HTTPParseError?
}

func decode(_ framing: HTTPBodyFraming, _ pieces: [ArraySlice<UInt8>]) -> Outcome {
    var decoder = HTTPBodyDecoder(framing: framing, maximumChunkLineLength: 64, maximumTrailerSize: 256)
    var outcome = Outcome()
    for piece in pieces {
        do {
            let progress = try decoder.decode(piece) { outcome.body.append(contentsOf: $0) }
            if case .complete(let consumed) = progress {
                outcome.isComplete = true
                outcome.leftOver += piece.count - consumed
            }
        } catch let error as HTTPParseError {
            outcome.error = error
            return outcome
        } catch {
            fuzzCheck(false, "the decoder threw \(error), not an HTTPParseError")
        }
        if outcome.isComplete { break }
    }
    fuzzCheck(decoder.bodyBytes == Int64(outcome.body.count), "bodyBytes \(decoder.bodyBytes) but \(outcome.body.count) delivered")
    do {
        try decoder.finish()
    } catch {
        outcome.finishError = error
    }
    return outcome
}

fuzzMain { data in
    var input = FuzzInput(data)
    let options = input.byte()
    let step = input.byte()
    let bytes = Array(input.bytes)
    var parser = HTTPHeadParser(maximumHeadSize: 1024, maximumHeaderCount: 16)
    let framing: HTTPBodyFraming
    let body: [UInt8]
    do {
        guard let (head, length) = try parser.parseResponse(bytes) else { return }
        framing = try HTTPBodyFraming(response: head, requestMethod: options & 1 == 0 ? "GET" : "HEAD")
        body = Array(bytes[length...])
    } catch {
        return
    }
    let remaining = FuzzInput(body)
    let whole = decode(framing, remaining.pieces(step: 0))
    let split = decode(framing, remaining.pieces(step: step))
    // Where the body ends in the input differs with the split only in how much is left in the last piece.
    fuzzCheck(whole.body == split.body, "pieces of \(step) bytes decode to another body")
    fuzzCheck(whole.isComplete == split.isComplete, "pieces of \(step) bytes change completion")
    fuzzCheck((whole.error == nil) == (split.error == nil), "pieces of \(step) bytes change the error: \(String(describing: whole.error)) vs \(String(describing: split.error))")
    fuzzCheck(whole.error == split.error, "the error's offset depends on the split: \(String(describing: whole.error)) vs \(String(describing: split.error))")
}
