#!/usr/bin/env python3
"""Hostile clients for `wsload serve` / the embedded server (python3 stdlib only; loopback only).

  slow-read PORT PATH RATE   GET PATH with a 4 KiB receive buffer and 536-byte segments and read it at RATE bytes per second until
                             the server closes; prints `result received=N seconds=S`
  ws-no-read PORT LIMIT      upgrade to WebSocket, then send 1 KiB binary messages (the server echoes them)
                             and never read one, with a 4 KiB receive buffer; prints `result closed=1|0 sent=N
                             seconds=S` once the server closes the connection (or after LIMIT seconds)

Each mode runs once, then the script exits; it exits as well when stdin closes, so a killed test never leaves it.
"""
import base64
import os
import socket
import sys
import threading
import time


def watch_stdin():
    sys.stdin.read()
    os._exit(0)


def connect(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # Small segments keep the server's send buffer small (its autotuning follows them): ~100 KB instead of
    # ~2.8 MB, so a body of a few hundred KiB backs up into the server's write queue.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
    sock.connect(("127.0.0.1", port))
    return sock


def slow_read(port, path, rate):
    sock = connect(port)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    received, start, step = 0, time.time(), max(1, rate // 8)
    sock.settimeout(120)
    while True:
        try:
            data = sock.recv(step)
        except OSError:
            break
        if not data:
            break
        received += len(data)
        time.sleep(len(data) / rate)
    print(f"result received={received} seconds={time.time() - start:.1f}", flush=True)


def masked_binary(payload):
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x82, 0x80 | 126]) + len(payload).to_bytes(2, "big") + mask + body


def ws_no_read(port, limit):
    sock = connect(port)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            print("result closed=1 sent=0 seconds=0 (no 101)", flush=True)
            return
        head += chunk
    frame = masked_binary(b"x" * 1024)
    sock.setblocking(False)
    sent, start, closed, rest = 0, time.time(), 0, b""
    while time.time() - start < limit:
        try:
            if not rest:
                rest = frame
                sent += 1
            rest = rest[sock.send(rest):]  # a partial send goes on where it stopped: frames stay whole
        except BlockingIOError:
            time.sleep(0.05)
        except OSError:
            closed = 1
            break
    print(f"result closed={closed} sent={sent} seconds={time.time() - start:.1f}", flush=True)


def main():
    threading.Thread(target=watch_stdin, daemon=True).start()
    mode = sys.argv[1]
    if mode == "slow-read":
        slow_read(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    elif mode == "ws-no-read":
        ws_no_read(int(sys.argv[2]), float(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
