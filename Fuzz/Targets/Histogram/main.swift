// HdrHistogram V2 compressed decoder (report blobs). Properties: decode → encode → decode gives an equal
// histogram, and the base64 text form decodes the same as the bytes.
import FuzzSupport
import Crypto
import Histogram

fuzzMain { data in
    // Inputs that decode rarely reach past the zlib check by chance; let half of them be a zlib payload
    // framed by the fixed 8-byte header (cookie + length), the rest used as given.
    var bytes = data
    if let first = data.first, first & 1 == 1 {
        let body = Array(data.dropFirst())
        bytes = [0x1C, 0x84, 0x93, 0x14] + withUnsafeBytes(of: UInt32(body.count).bigEndian, Array.init) + body
    }
    guard let histogram = try? Histogram(compressedBytes: bytes) else { return }  // refused blob: nothing to round-trip
    let encoded = histogram.compressedBytes()
    let again: Histogram
    do {
        again = try Histogram(compressedBytes: encoded)
    } catch {
        return fuzzCheck(false, "our own encoding does not decode: \(error)")
    }
    fuzzCheck(again == histogram, "decode → encode → decode changed the histogram")
    let fromText = try? Histogram(serialized: Crypto.base64Encoded(bytes))  // nil is a finding: checked next
    fuzzCheck(fromText == histogram, "the base64 form decodes differently")
    _ = histogram.value(atPercentile: 99.9)
    _ = histogram.value(atPercentile: 100)
    _ = histogram.mean
    _ = histogram.standardDeviation
}
