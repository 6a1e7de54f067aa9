import Testing
import WebSocket

/// The WebSocket URL is what the handshake's request line is built from: nothing in it may start a header.
@Suite("WebSocket URLs: strict RFC 3986", .timeLimit(.minutes(1)))
struct WebSocketURLTests {
    @Test("the issue's target, ws://127.0.0.1:18777/a CR LF X-Evil: 1, is refused, and so is every control character or space",
          arguments: ["ws://127.0.0.1:18777/a\r\nX-Evil: 1", "ws://127.0.0.1:18777/a\r\nX-Evil:1", "ws://h/a\nb", "ws://h/a b",
                      "ws://h/a\u{0}", "wss://h/?x=\u{1B}", "ws://h/a\u{7F}", "ws://h/a<b>", "ws://h:99999999999999999999/",
                      "ws://h:+1/", "ws://u:p@h/", "ws://h/#f", "ws:///x", "ws://[::1/", "ws://h\r\n/"])
    func refuses(text: String) {
        #expect(throws: WebSocketURL.ParseError.self) { try WebSocketURL(text) }
    }

    @Test("valid targets parse byte-exact; non-ASCII is percent-encoded as UTF-8")
    func parses() throws {
        let url = try WebSocketURL("WSS://[2001:db8::1]:8443/chat/ä?room=1&x=%2F")
        #expect(url.isSecure && url.host == "2001:db8::1" && url.port == 8443 && url.target == "/chat/%C3%A4?room=1&x=%2F")
        #expect(url.description == "wss://[2001:db8::1]:8443/chat/%C3%A4?room=1&x=%2F")
        #expect(try WebSocketURL("ws://h").target == "/")
        #expect(try WebSocketURL("ws://h:/x").port == 80)
    }

    @Test("an error quotes the URL made printable and never its user info")
    func errorIsPrintable() {
        #expect {
            try WebSocketURL("ws://user:hunter2@h/\u{1B}]0;x\u{7}")
        } throws: { error in
            let text = (error as? WebSocketURL.ParseError)?.description ?? ""
            return !text.contains("hunter2") && !text.contains("\u{1B}") && !text.contains("\u{7}")
        }
        #expect {
            try WebSocketURL("ws://h/a\u{1B}[2J")
        } throws: { error in
            let text = (error as? WebSocketURL.ParseError)?.description ?? ""
            return text.contains("\\u{1B}") && !text.contains("\u{1B}") && text.contains("offset 8")
        }
    }
}
