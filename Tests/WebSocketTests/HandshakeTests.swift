import Crypto
import HTTP1
import Testing
@testable import WebSocket

@Suite("Opening handshake (RFC 6455 §4)", .timeLimit(.minutes(1)))
struct HandshakeTests {
    /// The nonce of RFC 6455 §1.3, "the sample nonce".
    let sampleKey = Array("the sample nonce".utf8)

    @Test("§1.3: the sample key's accept value")
    func acceptVector() {
        #expect(webSocketAcceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let handshake = WebSocketClientHandshake(host: "server.example.com", port: 80, isSecure: false, target: "/chat", keyBytes: sampleKey)
        #expect(handshake.key == "dGhlIHNhbXBsZSBub25jZQ==")
    }

    @Test("the request: Host with a non-default port, version 13, origin, subprotocols, extensions, custom headers")
    func request() {
        let handshake = WebSocketClientHandshake(
            host: "::1", port: 8080, isSecure: false, target: "/chat?room=1", origin: "http://example.com",
            subprotocols: ["chat.v2", "chat.v1"], compression: PerMessageDeflateOffer(),
            headers: ["Authorization": "Bearer secret", "Upgrade": "h2c"], keyBytes: sampleKey)
        let text = String(decoding: handshake.request.serialized(), as: UTF8.self)
        #expect(text == """
            GET /chat?room=1 HTTP/1.1\r
            Host: [::1]:8080\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
            Sec-WebSocket-Version: 13\r
            Origin: http://example.com\r
            Sec-WebSocket-Protocol: chat.v2, chat.v1\r
            Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r
            Authorization: Bearer secret\r
            \r

            """)
        #expect(WebSocketClientHandshake(host: "a.example", port: 443, isSecure: true).hostHeader == "a.example")
        #expect(WebSocketClientHandshake(host: "a.example", port: 80, isSecure: true).hostHeader == "a.example:80")
    }

    func response(_ status: Int, _ headers: HTTPHeaders) -> HTTPResponseHead {
        HTTPResponseHead(status: status, reason: status == 101 ? "Switching Protocols" : "Other", headers: headers)
    }

    @Test("a valid response: subprotocol and permessage-deflate parameters")
    func validResponse() throws {
        let handshake = WebSocketClientHandshake(host: "h", port: 80, isSecure: false, subprotocols: ["a", "b"],
                                                 compression: PerMessageDeflateOffer(), keyBytes: sampleKey)
        let result = try handshake.validate(response(101, [
            "Upgrade": "WebSocket", "Connection": "keep-alive, Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            "Sec-WebSocket-Protocol": "b",
            "Sec-WebSocket-Extensions": "permessage-deflate; server_no_context_takeover; client_max_window_bits=10",
        ]))
        #expect(result.subprotocol == "b")
        #expect(result.compression == PerMessageDeflateParameters(serverNoContextTakeover: true, clientMaxWindowBits: 10))
    }

    @Test("invalid responses are refused with the reason", arguments: [
        (302, ["Location": "https://elsewhere.example/"], WebSocketHandshakeError.Kind.unexpectedStatus, "redirect to https://elsewhere.example/ not followed"),
        (200, [:], .unexpectedStatus, "expected status 101, got 200"),
        (101, ["Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="], .missingUpgrade, "Upgrade header is missing"),
        (101, ["Upgrade": "websocket", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="], .missingConnectionUpgrade, "Connection header"),
        (101, ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "wrong="], .badAccept, "expected \"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\""),
        (101, ["Upgrade": "websocket", "Connection": "Upgrade"], .badAccept, "missing"),
        (101, ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
               "Sec-WebSocket-Protocol": "c"], .unofferedSubprotocol, "\"c\""),
        (101, ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
               "Sec-WebSocket-Extensions": "x-webkit-deflate-frame"], .unofferedExtension, "x-webkit-deflate-frame"),
        (101, ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
               "Sec-WebSocket-Extensions": "permessage-deflate; server_max_window_bits=16"], .invalidExtension, "8 to 15"),
        (101, ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
               "Sec-WebSocket-Extensions": "permessage-deflate; foo"], .invalidExtension, "unknown parameter foo"),
        (101, ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
               "Sec-WebSocket-Extensions": "permessage-deflate; client_max_window_bits=8"], .invalidExtension, "zlib"),
    ] as [(Int, HTTPHeaders, WebSocketHandshakeError.Kind, String)])
    func invalidResponses(status: Int, headers: HTTPHeaders, kind: WebSocketHandshakeError.Kind, detail: String) {
        let handshake = WebSocketClientHandshake(host: "h", port: 80, isSecure: false, subprotocols: ["a", "b"],
                                                 compression: PerMessageDeflateOffer(), keyBytes: sampleKey)
        let error = #expect(throws: WebSocketHandshakeError.self) { _ = try handshake.validate(response(status, headers)) }
        #expect(error?.kind == kind)
        #expect(error?.detail.contains(detail) == true, "\(error?.detail ?? "")")
    }

    @Test("an extension answered without being offered is refused")
    func extensionNotOffered() {
        let handshake = WebSocketClientHandshake(host: "h", port: 80, isSecure: false, keyBytes: sampleKey)
        let error = #expect(throws: WebSocketHandshakeError.self) {
            _ = try handshake.validate(response(101, ["Upgrade": "websocket", "Connection": "Upgrade",
                                                      "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
                                                      "Sec-WebSocket-Extensions": "permessage-deflate"]))
        }
        #expect(error?.kind == .unofferedExtension)
    }

    @Test("server side: accepts a client's request and the client accepts the answer; rejects bad requests")
    func serverSide() throws {
        let handshake = WebSocketClientHandshake(host: "h", port: 9000, isSecure: false, subprotocols: ["x", "y"],
                                                 compression: PerMessageDeflateOffer(requestServerNoContextTakeover: true))
        guard case .accept(let answer, let subprotocol, let compression) =
            WebSocketServerHandshake.respond(to: handshake.request, subprotocols: ["y", "x"])
        else {
            Issue.record("rejected a valid request")
            return
        }
        #expect(subprotocol == "y")
        #expect(compression?.serverNoContextTakeover == true)
        let result = try handshake.validate(answer)
        #expect(result.subprotocol == "y")
        #expect(result.compression == compression)

        var bad = handshake.request
        bad.headers.replaceOrAdd(name: "Sec-WebSocket-Version", value: "8")
        guard case .reject(let response, _) = WebSocketServerHandshake.respond(to: bad) else { Issue.record("accepted version 8"); return }
        #expect(response.status == 426)
        #expect(response.headers["Sec-WebSocket-Version"] == "13")
        bad = handshake.request
        bad.headers.replaceOrAdd(name: "Sec-WebSocket-Key", value: "c2hvcnQ=")
        guard case .reject(let keyResponse, _) = WebSocketServerHandshake.respond(to: bad) else { Issue.record("accepted a short key"); return }
        #expect(keyResponse.status == 400)
    }

    @Test("requestBytes are request.serialized() byte for byte")
    func requestBytes() {
        let handshakes = [
            WebSocketClientHandshake(host: "127.0.0.1", port: 8765, isSecure: false),
            WebSocketClientHandshake(host: "example.com", port: 443, isSecure: true, target: "", keyBytes: sampleKey),
            WebSocketClientHandshake(
                host: "::1", port: 8080, isSecure: false, target: "/chat?room=1", origin: "http://example.com",
                subprotocols: ["chat.v2", "chat.v1"], compression: PerMessageDeflateOffer(),
                headers: ["Authorization": "Bearer secret", "UPGRADE": "h2c", "X-Trace": "é ü", "sec-websocket-key": "mine"],
                keyBytes: sampleKey),
        ]
        for handshake in handshakes {
            #expect(handshake.requestBytes == handshake.request.serialized(),
                    "\(String(decoding: handshake.requestBytes, as: UTF8.self))")
        }
    }

    @Test("the handshake's fields in one pass: any case, list tokens with whitespace, repeated fields")
    func fieldsInOnePass() {
        let fields = HandshakeFields([
            "HOST": "h", "connection": "keep-alive", "Connection": " keep-alive ,\tUpGrade ", "upgrade": "h2c,  WebSocket",
            "sec-websocket-version": "13", "Sec-WebSocket-Version": "8", "Sec-WebSocket-Key": "a", "SEC-WEBSOCKET-KEY": "b",
            "Sec-WebSocket-Accept": "x", "Sec-WebSocket-Protocol": "a, ,b", "sec-websocket-protocol": "c",
            "Sec-WebSocket-Extensions": "permessage-deflate", "Sec-WebSocket-Extension": "not this one",
        ])
        #expect(fields.hasHost)
        #expect(fields.isUpgradeToWebSocket)
        #expect(fields.isConnectionUpgrade)
        #expect(fields.version == "13")
        #expect(fields.key == "a" && fields.keyCount == 2)
        #expect(fields.accept == "x" && fields.acceptCount == 1)
        #expect(fields.protocols == ["a", "b", "c"])
        #expect(fields.extensionValues == ["permessage-deflate"])
        for (name, value) in [("Connection", "upgrades"), ("Connection", "keep-alive upgrade"), ("Connection", ""),
                              ("Connection", ","), ("Connection", "up grade"), ("Connections", "upgrade")] {
            #expect(!HandshakeFields([name: value]).isConnectionUpgrade, "\(name): \(value)")
        }
        #expect(HandshakeFields(["Connection": "upgrade,"]).isConnectionUpgrade)
        #expect(HandshakeFields(["Connection": ",upgrade"]).isConnectionUpgrade)
        #expect(!HandshakeFields(["Upgrade": "websockets"]).isUpgradeToWebSocket)
        #expect(HandshakeFields(["upGRADE": ""]).hasUpgrade && !HandshakeFields(["Upgrades": "websocket"]).hasUpgrade)
        #expect(!fields.hasBodyFraming)
        #expect(HandshakeFields(["content-LENGTH": "0"]).hasBodyFraming && HandshakeFields(["Transfer-Encoding": "x"]).hasBodyFraming)
        #expect(!HandshakeFields(["Content-Lengths": "0", "Transfer-Encodings": "x"]).hasBodyFraming)
        #expect(!HandshakeFields(["Hostname": "h"]).hasHost)
    }

    @Test("a key is 16 bytes of base64 exactly when Crypto.base64Decoded says so")
    func keyCheck() {
        let keys = ["dGhlIHNhbXBsZSBub25jZQ==", "AAAAAAAAAAAAAAAAAAAAAA==", "+/+/+/+/+/+/+/+/+/+/+w==", "dGhlIHNhbXBsZSBub25jZQ=",
                    "dGhlIHNhbXBsZSBub25jZQ===", "dGhlIHNhbXBsZSBub25jZ===", "dGhlIHNhbXBsZSBub25jZQAA", "dGhlIHNhbXBsZSBub25jZ-==",
                    "dGhlIHNhbXBsZSBub25j ZQ=", "dGhlIHNhbXBsZSBub25jZQ=\n", "c2hvcnQ=", "", "dGhlIHNhbXBsZSBub25jZWVl",
                    "dGhlIHNhbXBsZSBub25jZé=", "dGhlIHNhbXBsZSBub25jZQ==dGhl"]
        for key in keys {
            #expect(isSixteenByteBase64(key) == (Crypto.base64Decoded(key)?.count == 16), "\(key)")
        }
        for _ in 0..<100 {
            #expect(isSixteenByteBase64(Crypto.base64Encoded(Crypto.randomBytes(16))))
        }
    }

    @Test("the server refuses two keys, takes the first version, and finds websocket in a list of upgrades")
    func serverFieldRules() {
        let base = WebSocketClientHandshake(host: "h", port: 80, isSecure: false, keyBytes: sampleKey).request
        var twoKeys = base
        twoKeys.headers.add(name: "sec-websocket-key", value: "dGhlIHNhbXBsZSBub25jZQ==")
        guard case .reject(let refused, _) = WebSocketServerHandshake.respond(to: twoKeys) else { Issue.record("accepted two keys"); return }
        #expect(refused.status == 400)
        var laterVersion = base
        laterVersion.headers.add(name: "Sec-WebSocket-Version", value: "8")
        guard case .accept = WebSocketServerHandshake.respond(to: laterVersion) else { Issue.record("refused version 13 then 8"); return }
        var listed = base
        listed.headers.replaceOrAdd(name: "upgrade", value: "h2c, WebSocket")
        listed.headers.replaceOrAdd(name: "CONNECTION", value: "keep-alive, upgrade")
        guard case .accept(let answer, _, _) = WebSocketServerHandshake.respond(to: listed) else { Issue.record("refused a list"); return }
        #expect(answer.headers["Sec-WebSocket-Accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
