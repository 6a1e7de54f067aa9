"""A hostile HTTP peer for the URL and terminal-text tests (python3 stdlib, 127.0.0.1 only).

Prints "listening PORT", then answers each request by its path; every request line it receives is printed as
"request <hex of the raw line>" so a test can prove what went on the wire. Exits when stdin closes.
  /reason          500 with escape sequences in the status reason and the error page
  /redirect-space  302 to "/a b" (a space: must never become a request line)
  /redirect-ctl    302 to "/a<ESC>[31m"
  /redirect-scheme 302 to "mailto:x" (leaves http)
  anything else    404
"""
import socket
import sys
import threading

ESC = b"\x1b"
RESPONSES = {
    b"/reason": b"HTTP/1.1 500 " + ESC + b"[2J" + ESC + b"]0;pwned\x07Oops\r\nContent-Length: 19\r\nConnection: close\r\n\r\n"
    + ESC + b"[31mred body" + ESC + b"[0m!!",
    b"/redirect-space": b"HTTP/1.1 302 Found\r\nLocation: /a b\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    b"/redirect-ctl": b"HTTP/1.1 302 Found\r\nLocation: /a" + ESC + b"[31m\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    b"/redirect-scheme": b"HTTP/1.1 302 Found\r\nLocation: mailto:x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
}
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
lock = threading.Lock()


def serve(connection):
    with connection:
        connection.settimeout(30)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                data = connection.recv(4096)
                if not data:
                    return
                head += data
        except OSError:
            return
        line = head.split(b"\r\n", 1)[0]
        with lock:
            print("request " + line.hex(), flush=True)
        parts = line.split(b" ")
        path = parts[1] if len(parts) > 1 else b""
        try:
            connection.sendall(RESPONSES.get(path, NOT_FOUND))
        except OSError:
            pass


def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print("listening %d" % listener.getsockname()[1], flush=True)

    def accept():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
