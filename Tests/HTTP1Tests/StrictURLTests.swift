import HTTP1
import Testing

/// RFC 3986 strictness for what goes on a request line: a URL or `Location` with a control character, a space or a
/// character RFC 3986 does not allow is refused (the error names its byte offset), never written raw; non-ASCII in a
/// path is percent-encoded as UTF-8; ports, IPv6 hosts and user info are checked without traps or leaks.
@Suite("HTTP URLs: strict RFC 3986", .timeLimit(.minutes(1)))
struct StrictURLTests {
    @Test("CR LF, a control character, a space or a raw ASCII delimiter in the path or query is refused with its offset",
          arguments: [
              ("http://h/a\r\nX-Evil:1", "offset 10"), ("http://h/a\u{0}b", "offset 10"), ("http://h/a\u{1B}[31m", "offset 10"),
              ("http://h/a\tb", "offset 10"), ("http://h/?q=a b", "offset 13"), ("http://h/a\"b", "offset 10"),
              ("http://h/{x}", "offset 9"), ("http://h/a|b", "offset 10"), ("http://h/%zz", "offset 9"), ("http://h/a%2", "offset 10"),
              ("http://h/a\u{7F}", "offset 10"), ("https://h/[x]", "offset 10"),
          ])
    func refusesBadTargets(text: String, place: String) {
        #expect {
            try HTTPURL(text)
        } throws: { error in
            let description = (error as? HTTPURL.ParseError)?.description ?? ""
            return description.contains(place) && !description.contains("\u{1B}") && !description.contains("\r")
        }
    }

    @Test("non-ASCII in the path and query is percent-encoded as UTF-8; %XX escapes and RFC 3986 delimiters pass as they are")
    func percentEncodesNonASCII() throws {
        #expect(try HTTPURL("http://h/ä/€?q=ü").target == "/%C3%A4/%E2%82%AC?q=%C3%BC")
        #expect(try HTTPURL("http://h/a%20b;p=1,2/~x@y:z?a=b&c=d/e?f!$'()*+").target == "/a%20b;p=1,2/~x@y:z?a=b&c=d/e?f!$'()*+")
        #expect(try HTTPURL("HTTP://H/a#frag ment\r\n").target == "/a")  // the fragment is dropped unread, never sent
    }

    @Test("ports: 1–65535 as plain digits; an empty port is the default; huge, signed or spaced ports are refused",
          arguments: ["http://h:99999999999999999999/", "http://h:+80/", "http://h:0/", "http://h:65536/", "http://h:8%30/",
                      "http://h:80 /", "http://h:-1/", "http://[::1]:99999999999999999999999/"])
    func refusesBadPorts(text: String) {
        #expect(throws: HTTPURL.ParseError.self) { try HTTPURL(text) }
    }

    @Test("an empty port means the scheme's default (RFC 3986 §3.2.3); 65535 is the highest")
    func portsParse() throws {
        #expect(try HTTPURL("http://h:/x").port == 80)
        #expect(try HTTPURL("https://h:/x").port == 443)
        #expect(try HTTPURL("http://h:65535/").port == 65535)
    }

    @Test("IPv6 hosts: bracketed RFC 3986 addresses only; zone identifiers, IPvFuture and unbracketed colons refused")
    func ipv6Hosts() throws {
        #expect(try HTTPURL("http://[::1]:8080/").host == "::1")
        #expect(try HTTPURL("http://[2001:db8::192.0.2.1]/").host == "2001:db8::192.0.2.1")
        #expect(try HTTPURL("http://[1:2:3:4:5:6:7:8]/").host == "1:2:3:4:5:6:7:8")
        for text in ["http://[fe80::1%25eth0]/", "http://[::1/", "http://::1/", "http://[1:2:3:4:5:6:7:8:9]/", "http://[v1.x]/",
                     "http://[:::1]/", "http://[1::2::3]/", "http://[]/", "http://[::1]x/", "http://[12345::]/",
                     "http://[::256.1.1.1]/"] {
            #expect(throws: HTTPURL.ParseError.self, "\(text)") { try HTTPURL(text) }
        }
    }

    @Test("hosts: empty, percent-encoded, non-ASCII, spaced or over 253 bytes refused")
    func badHosts() {
        for text in ["http:///x", "http://:80/", "http://h%41/", "http://exa mple/", "http://ä.example/", "http://h\r\n/",
                     "http://" + String(repeating: "a", count: 254) + "/"] {
            #expect(throws: HTTPURL.ParseError.self, "\(text)") { try HTTPURL(text) }
        }
    }

    @Test("user info is refused and the error never repeats it")
    func userInfoNotRepeated() {
        #expect {
            try HTTPURL("http://alice:s3cret@h/x")
        } throws: { error in
            let description = (error as? HTTPURL.ParseError)?.description ?? ""
            return !description.contains("s3cret") && !description.contains("alice") && description.contains("user info")
        }
    }

    /// RFC 3986 §5.4.1 and §5.4.2, byte-exact, with the fragment dropped (it is never sent) and "//g" given its "/" path.
    @Test("resolves every RFC 3986 §5.4 reference that stays in http(s)", arguments: [
        ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"), ("/g", "http://a/g"), ("//g", "http://g/"),
        ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"), ("#s", "http://a/b/c/d;p?q"), ("g#s", "http://a/b/c/g"),
        ("g?y#s", "http://a/b/c/g?y"), (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y"),
        ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../", "http://a/b/"),
        ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"), ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"), ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"), ("g#s/./x", "http://a/b/c/g"), ("g#s/../x", "http://a/b/c/g"),
        ("http://a/b/../c", "http://a/c"), ("HTTPS://Other:8443/x", "https://Other:8443/x"),
    ])
    func rfc3986References(reference: String, expected: String) throws {
        let base = try HTTPURL("http://a/b/c/d;p?q")
        #expect(try base.resolving(reference).description == expected)
    }

    @Test("a Location with a space, a control character or another scheme is refused, never resolved into a request line",
          arguments: ["/a b", "a b", "?q=a b", "/a\u{1B}[31m", "/a\u{0}", "g:h", "mailto:x", "javascript:alert(1)", "http:g",
                      "//h/a b", "//u:p@h/", "/a\"b"])
    func refusesBadLocations(reference: String) throws {
        let base = try HTTPURL("http://a/b/c/d;p?q")
        #expect(throws: HTTPURL.ParseError.self) { try base.resolving(reference) }
    }
}
