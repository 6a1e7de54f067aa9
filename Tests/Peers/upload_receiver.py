"""A small third-party upload receiver for the transfer tests (Python's http.server).

PUT or POST: reads the body (Content-Length or chunked), answers {"bytes": N, "sha256": "..."}.
Prints "listening PORT" once bound to 127.0.0.1 on a free port.
"""
import hashlib
import http.server
import json
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _receive(self):
        digest = hashlib.sha256()
        total = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data = self.rfile.read(size)
                digest.update(data)
                total += len(data)
                self.rfile.readline()
        else:
            remaining = int(self.headers.get("Content-Length", "0"))
            while remaining > 0:
                data = self.rfile.read(min(remaining, 1 << 20))
                if not data:
                    break
                digest.update(data)
                total += len(data)
                remaining -= len(data)
        body = json.dumps({"bytes": total, "sha256": digest.hexdigest()}).encode()
        self.send_response(201 if self.command == "PUT" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = _receive
    do_POST = _receive

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("listening", server.server_address[1], flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
