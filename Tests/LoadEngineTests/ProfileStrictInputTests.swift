import Foundation
import Profile
import Testing

private func problems(_ text: String) -> [String] {
    do {
        _ = try ProfileDecoder.decode(Array(text.utf8))
        return []
    } catch {
        return error.problems.map(\.description)
    }
}

/// A websocket profile with `scenario` (a JSON object's members) and `top` (more top-level members).
private func profile(target: String = "\"embedded\"", scenario: String = "", top: String = "") -> String {
    """
    {"version": 1, "name": "p", "target": \(target), "duration": "1s"\(top),
     "scenarios": [{"name": "s", "pattern": "echo", "connections": 1\(scenario)}]}
    """
}

private func download(_ transfer: String, name: String = "\"d\"") -> String {
    """
    {"version": 1, "name": "p", "target": "embedded", "duration": "1s",
     "scenarios": [{"name": \(name), "kind": "download", "connections": 1, "transfer": {\(transfer)}}]}
    """
}

/// URLs, paths, headers and names a profile writes are refused at their JSON path when they could inject a header,
/// break a request line or name a file outside its directory.
@Suite("Profile validation: URLs, headers and names", .timeLimit(.minutes(1)))
struct ProfileStrictInputTests {
    @Test("the issue's target with CR LF X-Evil is refused at target, and so is a space or a control character",
          arguments: [#""ws://127.0.0.1:18777/a\r\nX-Evil: 1""#, #""ws://127.0.0.1:18777/a\r\nX-Evil:1""#, #""ws://h/a b""#,
                      #""ws://h/\u001b[31m""#, #""ws://h:99999999999999999999/""#])
    func target(json: String) {
        let found = problems(profile(target: json))
        #expect(found.count == 1 && found[0].hasPrefix("target: "), "\(found)")
        #expect(!found.joined().contains("\r") && !found.joined().contains("\u{1B}"))
    }

    @Test("a scenario path or a transfer path with a raw delimiter or control character is refused at its path",
          arguments: [#""/a\"b""#, #""/a{b}""#, #""/a\u0000""#, #""/a\r\nX: 1""#, #""/%zz""#, #""relative""#])
    func paths(json: String) {
        let websocket = problems(profile(scenario: ", \"path\": \(json)"))
        #expect(websocket.count == 1 && websocket[0].hasPrefix("scenarios[0].path: "), "\(websocket)")
        let transfer = problems(download("\"path\": \(json)"))
        #expect(transfer.count == 1 && transfer[0].hasPrefix("scenarios[0].transfer.path: "), "\(transfer)")
    }

    @Test("a non-ASCII path is percent-encoded as UTF-8 as a URL's would be")
    func pathEncoded() throws {
        let decoded = try ProfileDecoder.decode(Array(profile(scenario: #", "path": "/chat/ä?x=1""#).utf8))
        #expect(decoded.scenarios[0].websocket.path == "/chat/%C3%A4?x=1")
    }

    @Test("a transfer url with a space, CR LF or user info is refused at its path, the user info not repeated",
          arguments: [#""http://h/a b""#, #""http://h/a\r\nX-Evil:1""#, #""http://u:pw@h/""#, #""http://h:+1/""#])
    func transferURL(json: String) {
        let found = problems(download("\"url\": \(json)"))
        #expect(found.count == 1 && found[0].hasPrefix("scenarios[0].transfer.url: "), "\(found)")
        #expect(!found.joined().contains("pw@"))
    }

    @Test("header values with a control character, and names that are not tokens, are refused at headers.<name>",
          arguments: [#"{"X-A": "a\u0001b"}"#, #"{"X-A": "a\u001b[2J"}"#, #"{"X-A": "a\rb"}"#, #"{"X A": "v"}"#,
                      #"{"X-A\r\nX-Evil": "v"}"#, #"{"": "v"}"#])
    func headers(json: String) {
        let found = problems(profile(top: ", \"headers\": \(json)"))
        #expect(found.count == 1 && found[0].hasPrefix("headers."), "\(found)")
        #expect(!found.joined().contains("\r") && !found.joined().contains("\u{1B}"))
    }

    @Test("a tab inside a header value is allowed (RFC 9110 §5.5)")
    func tabAllowed() throws {
        let decoded = try ProfileDecoder.decode(Array(profile(top: #", "headers": {"X-A": "a\tb"}"#).utf8))
        #expect(decoded.headers.first?.value == "a\tb")
    }

    @Test("an auth header name that is not a token, or a query name that would need encoding, is refused at auth.name",
          arguments: [#"{"type": "header", "name": "X-Key\r\nX-Evil", "tokenEnv": "T"}"#,
                      #"{"type": "query", "name": "a&b=c", "tokenEnv": "T"}"#, #"{"type": "query", "name": "a b", "tokenEnv": "T"}"#])
    func authName(json: String) {
        let found = problems(profile(top: ", \"auth\": \(json)"))
        #expect(found.count == 1 && found[0].hasPrefix("auth.name: "), "\(found)")
    }

    @Test("scenario and transfer names that could leave a directory or hold control characters are refused at .name",
          arguments: [#""../../x""#, #""a/b""#, "\"..\"", #""a\\b""#, #""a\u0000""#, #""a\u001b[2J""#, #""a\nb""#])
    func names(json: String) {
        let websocket = problems(profile().replacingOccurrences(of: #""name": "s""#, with: "\"name\": \(json)"))
        #expect(websocket.count == 1 && websocket[0].hasPrefix("scenarios[0].name: "), "\(websocket)")
        let transfer = problems(download("\"size\": 10", name: json))
        #expect(transfer.count == 1 && transfer[0].hasPrefix("scenarios[0].name: "), "\(transfer)")
    }
}
