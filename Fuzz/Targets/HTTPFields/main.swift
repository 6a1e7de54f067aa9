// Header-value and URL parsers: Range, Content-Range, ETag, HTTP-date, http(s) URLs and their
// resolution of a Location reference. The input is NUL-separated fields. Properties: a parsed Range
// prints back to itself; a resolved range lies inside the representation; a parsed URL reparses from its
// description to the same URL.
import FuzzSupport
import HTTP1

fuzzMain { data in
    var input = FuzzInput(data)
    let length = Int64(input.uint16()) << (input.byte() % 48)
    let field = { (bytes: [UInt8]) in String(decoding: bytes, as: UTF8.self) }
    let rangeText = field(input.field(separator: 0))
    let contentRangeText = field(input.field(separator: 0))
    let tagText = field(input.field(separator: 0))
    let dateText = field(input.field(separator: 0))
    let urlText = field(input.field(separator: 0))
    let referenceText = field(input.field(separator: 0))

    if let range = RangeRequest(headerValue: rangeText) {
        fuzzCheck(RangeRequest(headerValue: range.headerValue) == range, "Range \(range) does not reparse from \(range.headerValue)")
        if let resolved = range.resolved(length: length) {
            fuzzCheck(resolved.first >= 0 && resolved.first <= resolved.last && resolved.last < length,
                      "Range \(range) resolved to \(resolved) outside 0..<\(length)")
        }
    }
    if let contentRange = ContentRange(headerValue: contentRangeText) {
        _ = contentRange.description
        _ = contentRange.range?.count
    }
    if let tag = EntityTag(headerValue: tagText) {
        fuzzCheck(EntityTag(headerValue: tag.description) == tag, "ETag \(tag) does not reparse")
        _ = Validators(entityTag: tag).satisfiesIfRange(tagText)
    }
    if let date = HTTPDate(dateText) {
        _ = date.description
    }
    if let url = try? HTTPURL(urlText) {  // a URL that does not parse has nothing more to check
        let again = try? HTTPURL(url.description)  // nil is a finding: checked below
        fuzzCheck(again == url, "URL \(url) does not reparse from its description")
        _ = url.lastPathComponent
        _ = try? url.resolving(referenceText)  // a reference that does not resolve is refused, not a finding
    }
}
