#!/usr/bin/env python3
"""Regenerates the seed corpora in Fuzz/Corpus/<target>/ from RFC examples, Profiles/ and Reports/.

Run from the repository root: python3 Fuzz/Tools/make_seeds.py. Seeds are small and committed; the files
are named by content so rerunning is idempotent. Each target's input layout is described in its main.swift.
"""
import base64, hashlib, json, os, struct, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "Fuzz", "Corpus")


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def mask(payload, key=b"\x37\xfa\x21\x3d"):
    return bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def frame(opcode, payload, fin=True, rsv1=False, masked=False):
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    n = len(payload)
    mbit = 0x80 if masked else 0
    if n < 126:
        head = bytes([first, mbit | n])
    elif n <= 0xFFFF:
        head = bytes([first, mbit | 126]) + struct.pack(">H", n)
    else:
        head = bytes([first, mbit | 127]) + struct.pack(">Q", n)
    if masked:
        return head + b"\x37\xfa\x21\x3d" + mask(payload)
    return head + payload


# RFC 6455 §5.7 examples (unmasked: a client reads them; masked: a server does).
hello_unmasked = bytes.fromhex("810548656c6c6f")
hello_masked = bytes.fromhex("818537fa213d7f9f4d5158")
fragments = bytes.fromhex("010348656c80026c6f")
ping = bytes.fromhex("890548656c6c6f")
pong_masked = bytes.fromhex("8a8537fa213d7f9f4d5158")
binary_256 = bytes.fromhex("827e0100") + bytes(range(256))
close_1000 = frame(8, b"\x03\xe8bye")

put("WebSocketFrames", "rfc6455-hello", b"\x00\x00" + hello_unmasked)
put("WebSocketFrames", "rfc6455-hello-masked", b"\x01\x03" + hello_masked + pong_masked)
put("WebSocketFrames", "rfc6455-fragments", b"\x00\x01" + fragments + ping)
put("WebSocketFrames", "binary-256", b"\x04\x00" + binary_256)
put("WebSocketFrames", "length-64bit", b"\x04\x07" + bytes.fromhex("827f0000000000010000") + b"x" * 64)
put("WebSocketFrames", "close", b"\x00\x00" + close_1000)

# RFC 7692 §7.2.3 samples: "Hello" compressed; the same again with context takeover; BFINAL block;
# a stored (uncompressed) block; two DEFLATE blocks in one message.
deflate_hello = bytes.fromhex("f248cdc9c90700")
deflate_hello_again = bytes.fromhex("f200110000")
deflate_bfinal = bytes.fromhex("f348cdc9c90700" "00")
deflate_stored = bytes.fromhex("0005 00faff48656c6c6f 00".replace(" ", ""))
deflate_two_blocks = bytes.fromhex("f24805000000ffffcac9c90700")
put("WebSocketConnection", "rfc7692-hello-takeover", b"\x01\x00" + frame(1, deflate_hello, rsv1=True) + frame(1, deflate_hello_again, rsv1=True) + close_1000)
put("WebSocketConnection", "rfc7692-hello-no-takeover", b"\x07\x03" + frame(1, deflate_hello, rsv1=True) + frame(1, deflate_hello, rsv1=True))
put("WebSocketConnection", "rfc7692-bfinal", b"\x01\x00" + frame(1, deflate_bfinal, rsv1=True) + frame(1, deflate_hello, rsv1=True))
put("WebSocketConnection", "rfc7692-fragmented", b"\x01\x02" + frame(1, deflate_two_blocks[:5], fin=False, rsv1=True) + frame(0, deflate_two_blocks[5:]))
put("WebSocketConnection", "plain-client", b"\x00\x00" + hello_unmasked + fragments + ping + close_1000)
put("WebSocketConnection", "plain-server", b"\x08\x05" + hello_masked + pong_masked + frame(8, b"\x03\xe8", masked=True))
put("WebSocketConnection", "deflate-server", b"\x19\x00" + frame(1, deflate_stored, rsv1=True, masked=True) + frame(2, b"\x00", masked=True))

for name, message in [("hello", deflate_hello), ("hello-again", deflate_hello_again), ("bfinal", deflate_bfinal),
                      ("stored", deflate_stored), ("two-blocks", deflate_two_blocks)]:
    put("PerMessageDeflate", "rfc7692-" + name, b"\x00" + bytes([len(message)]) + message + bytes([len(deflate_hello)]) + deflate_hello)
put("PerMessageDeflate", "takeover-sequence", b"\x0c" + bytes([len(deflate_hello)]) + deflate_hello + bytes([len(deflate_hello_again)]) + deflate_hello_again)
put("PerMessageDeflate", "no-takeover", b"\x01" + bytes([len(deflate_hello)]) + deflate_hello + bytes([len(deflate_hello)]) + deflate_hello)

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
client_key = base64.b64encode(bytes(range(16)))
accept = base64.b64encode(hashlib.sha1(client_key + GUID).digest()).decode()
put("Handshake", "client-101", b"\x00" + f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n".encode())
put("Handshake", "client-101-deflate", b"\xfe" + f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: chat\r\nSec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_max_window_bits=10\r\n\r\n".encode())
put("Handshake", "client-302", b"\x00HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n")
rfc_request = ("GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://example.com\r\n"
               "Sec-WebSocket-Protocol: chat, superchat\r\nSec-WebSocket-Version: 13\r\n")
put("Handshake", "server-rfc6455", b"\x01" + (rfc_request + "\r\n").encode())
put("Handshake", "server-deflate", b"\x03" + (rfc_request + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits, permessage-deflate\r\n\r\n").encode())
put("Handshake", "server-deflate-params", b"\x03" + (rfc_request + "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=10; client_no_context_takeover; server_no_context_takeover\r\n\r\n").encode())

requests = {
    "get": "GET /bytes?size=1024 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: wsload\r\nAccept: */*\r\n\r\n",
    "post-chunked": "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: multipart/form-data; boundary=abc\r\n\r\n",
    "range": "GET /files/a.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=100-199\r\nIf-Range: \"etag-1\"\r\n\r\n",
}
responses = {
    "200": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nETag: \"v1\"\r\nLast-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n",
    "206": "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-199/1000\r\nContent-Length: 100\r\n\r\n",
    "folded": "HTTP/1.0 404 Not Found\r\nServer: nginx\r\nX-Multi: a,\r\n b\r\n\r\n",
}
for name, text in requests.items():
    put("HTTPHead", "request-" + name, b"\x00\x00" + text.encode())
    put("HTTPHead", "request-" + name + "-split", b"\x00\x05" + text.encode())
for name, text in responses.items():
    put("HTTPHead", "response-" + name, b"\x01\x00" + text.encode())
    put("HTTPHead", "response-" + name + "-split", b"\x01\x03" + text.encode())

put("HTTPBody", "content-length", b"\x00\x00HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1")
put("HTTPBody", "chunked", b"\x00\x03HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\nnext")
put("HTTPBody", "chunked-hex", b"\x00\x01HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n")
put("HTTPBody", "until-close", b"\x00\x07HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of this until the end")
put("HTTPBody", "head", b"\x01\x00HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
put("HTTPBody", "no-content", b"\x00\x00HTTP/1.1 204 No Content\r\n\r\n")

for name, fields in {
    "closed": [b"bytes=0-499", b"bytes 0-499/1234", b"\"abc\"", b"Sun, 06 Nov 1994 08:49:37 GMT", b"http://example.com:8080/a/b?q=1", b"../c?d"],
    "suffix": [b"bytes=-500", b"bytes */1234", b"W/\"weak\"", b"Sunday, 06-Nov-94 08:49:37 GMT", b"https://[::1]/x", b"//other.example/y"],
    "from": [b"bytes=9500-", b"bytes 100-199/*", b"\"\"", b"Sun Nov  6 08:49:37 1994", b"http://127.0.0.1/", b"https://example.org/z#frag"],
}.items():
    put("HTTPFields", name, b"\x04\xd2\x00" + b"\x00".join(fields))

for name, text in {
    "object": '{"a": 1, "b": [true, false, null], "c": {"d": "e\\u00e9\\ud83d\\ude00"}, "f": -0.5e-3}',
    "numbers": '[0, -0, 1e308, 2.2250738585072014e-308, 123456789012345678901234567890, 0.1, 9007199254740993]',
    "strings": '["\\"\\\\\\/\\b\\f\\n\\r\\t", "", "plain", "\\u0000"]',
    "nested": '[[[[[[[[{"x": [[[]]]}]]]]]]]]',
    "scalar": '"just a string"',
}.items():
    put("JSON", name, text)

for profile in sorted(os.listdir(os.path.join(ROOT, "Profiles"))):
    if profile.endswith(".json") and profile != "profile.schema.json":
        with open(os.path.join(ROOT, "Profiles", profile), "rb") as f:
            put("Profile", profile, f.read())
with open(os.path.join(ROOT, "Profiles", "reconnect-storm.json")) as f:
    put("Profile", "chaos-list", "#" + json.dumps(json.load(f)["chaos"]))

with open(os.path.join(ROOT, "Reports", "baseline", "quickstart.json"), "rb") as f:
    report = f.read()
put("Report", "quickstart-report.json", report)
blobs = []
def walk(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "histogram" and isinstance(item, str):
                blobs.append(item)
            walk(item)
    elif isinstance(value, list):
        for item in value:
            walk(item)
walk(json.loads(report))
for blob in sorted(set(blobs), key=len)[:4]:
    raw = base64.b64decode(blob)
    put("Histogram", "report-" + hashlib.sha1(raw).hexdigest()[:12], raw)
    # The same payload on the odd-first-byte path (the target adds the 8-byte header itself).
    put("Histogram", "payload-" + hashlib.sha1(raw).hexdigest()[:12], b"\x01" + raw[8:])

resume = {"version": 1, "url": "http://127.0.0.1:8080/files/big.bin", "destination": "big.bin", "partPath": "big.bin.part",
          "etag": "\"v1\"", "lastModified": "Sun, 06 Nov 1994 08:49:37 GMT", "totalLength": 3000,
          "segments": [[0, 999, 1000], [1000, 1999, 10], [2000, None, 0]]}
put("ResumeData", "three-segments", json.dumps(resume, separators=(",", ":")))
put("ResumeData", "open-ended", json.dumps({"version": 1, "url": "https://example.com/x", "destination": "x", "partPath": "x.part", "segments": [[0, None, 42]]}))

task = {"op": "task", "id": 1, "kind": "download", "url": "http://127.0.0.1:8080/files/big.bin", "destination": "big.bin",
        "segments": 2, "connections": 2, "minimumSegmentSize": 1048576}
upload = {"op": "task", "id": 2, "kind": "upload", "url": "http://127.0.0.1:8080/upload", "method": "PUT", "file": "a.bin",
          "contentType": "application/octet-stream"}
lines = [task, upload, {"op": "checkpoint", "id": 1, "resume": resume},
         {"op": "completed", "id": 2, "outcome": {"kind": "uploaded", "status": 201, "bytesSent": 10, "sha256": "00" * 32}},
         {"op": "delivered", "id": 2}]
journal = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
put("SessionJournal", "journal", journal)
put("SessionJournal", "journal-torn", journal + '{"op":"completed","id":1,"outcome":{"kind":"downloaded","loc')
put("SessionJournal", "journal-done", json.dumps(task) + "\n" + json.dumps({"op": "completed", "id": 1, "outcome": {"kind": "downloaded", "location": "big.bin", "length": 3000, "sha256": None}}) + "\n" + json.dumps({"op": "cancelled", "id": 1}) + "\n")
