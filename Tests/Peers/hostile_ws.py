#!/usr/bin/env python3
"""A hostile WebSocket server kit (python3 stdlib asyncio only) for the client's hostile-peer tests.

The request path picks the misbehaviour (the query string is ignored, except `n=` for /flood):

  /random          a valid 101, then 64 KiB of seeded random bytes (the first byte is FIN+RSV2+binary, so
                   the violation is certain: 1002 on the first frame header), then silence
  /not-http        the reply is no HTTP at all (an SSH banner and random bytes)
  /endless-head    `HTTP/1.1 101 ...` and then header lines forever, 1 KiB every 10 ms
  /bad-accept      a 101 whose Sec-WebSocket-Accept is wrong
  /huge-63         a binary frame declaring 2^63-1 bytes, then 16 bytes of it
  /huge-64         a binary frame declaring 2^64-1 bytes (the most significant bit must be 0: RFC 6455 §5.2)
  /bfinal          permessage-deflate (if offered): "first message, first message" deflated and ended with a
                   BFINAL block, then a second message deflated against the first as its window (context
                   takeover), then close 1000
  /trickle         a valid 1,000-byte text message, one byte every 2 ms, then close 1000
  /bad-close-code  a close frame with code 1005 (never on the wire: RFC 6455 §7.4.1)
  /bad-close-utf8  a close frame 1000 whose reason is not UTF-8
  /ping-126        a ping with 126 bytes of payload (control frames carry at most 125: §5.5)
  /flood?n=N       N text messages `m<i>` as fast as TCP takes them (default 100000), then close 1000
  /echo            a plain echo (what a load profile's other connections may need)
  /ping-echo       the echo, each reply after a ping `p<i>`; prints `pongs K of N` (pongs that answered a ping)

After its misbehaviour the server reads what the client sends until the client closes (at most 30 s) and
prints `client-close MODE CODE` (CODE: the first close frame's code, `none` without one). Loopback only.
Prints `listening PORT`. Exits when stdin closes, so a killed test never leaves it running.
"""
import asyncio
import base64
import hashlib
import random
import struct
import sys
import urllib.parse
import zlib

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(opcode, payload=b"", fin=True, rsv1=False):
    """A server frame (unmasked), shortest length encoding."""
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    length = len(payload)
    if length < 126:
        head = struct.pack("!BB", first, length)
    elif length < 65536:
        head = struct.pack("!BBH", first, 126, length)
    else:
        head = struct.pack("!BBQ", first, 127, length)
    return head + payload


def accept_value(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


async def read_head(reader):
    """The request head (bounded: 16 KiB), or None."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await reader.read(4096)
        if not chunk or len(data) > 16384:
            return None
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    lines = head.split("\r\n")
    target = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return target, headers


def upgrade_reply(headers, accept=None, extensions=None):
    lines = [
        "HTTP/1.1 101 Switching Protocols",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Accept: " + (accept or accept_value(headers.get("sec-websocket-key", ""))),
    ]
    if extensions:
        lines.append("Sec-WebSocket-Extensions: " + extensions)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def unmask(data):
    """Client frames from `data`: yields (opcode, payload) of each complete one."""
    frames = []
    index = 0
    while len(data) - index >= 2:
        first, second = data[index], data[index + 1]
        length = second & 0x7F
        at = index + 2
        if length == 126:
            if len(data) - at < 2:
                break
            length = struct.unpack("!H", data[at:at + 2])[0]
            at += 2
        elif length == 127:
            if len(data) - at < 8:
                break
            length = struct.unpack("!Q", data[at:at + 8])[0]
            at += 8
        key = b""
        if second & 0x80:
            key = data[at:at + 4]
            at += 4
        if len(data) - at < length:
            break
        payload = bytes(data[at:at + length])
        if key:
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        frames.append((first & 0x0F, payload))
        index = at + length
    return frames, data[index:]


async def drain_client(reader, mode, echo_writer=None):
    """Reads what the client sends until it closes (at most 30 s); prints its close code. `ping-echo` sends a ping
    ("p" and the message's number) before each echo and prints how many pongs carried the payload of a ping sent."""
    code = "none"
    pings = []
    pongs = 0
    buffered = b""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        try:
            chunk = await asyncio.wait_for(reader.read(65536), remaining)
        except (asyncio.TimeoutError, ConnectionError):
            break
        if not chunk:
            break
        buffered += chunk
        frames, buffered = unmask(buffered)
        for opcode, payload in frames:
            if opcode == 0x8 and code == "none":
                code = str(struct.unpack("!H", payload[:2])[0]) if len(payload) >= 2 else "1005"
                if echo_writer is not None:
                    echo_writer.write(frame(0x8, payload[:2]))
            elif opcode == 0xA and payload in pings:
                pongs += 1
            elif echo_writer is not None and opcode in (0x1, 0x2):
                if mode == "ping-echo":
                    pings.append(b"p%d" % len(pings))
                    echo_writer.write(frame(0x9, pings[-1]))
                echo_writer.write(frame(opcode, payload))
    if mode == "ping-echo":
        print(f"pongs {pongs} of {len(pings)}", flush=True)
    print(f"client-close {mode} {code}", flush=True)


async def handle(reader, writer):
    try:
        request = await read_head(reader)
        if request is None:
            return
        target, headers = request
        parsed = urllib.parse.urlsplit(target)
        mode = parsed.path.strip("/") or "echo"
        query = urllib.parse.parse_qs(parsed.query)
        if mode == "not-http":
            writer.write(b"SSH-2.0-OpenSSH_9.2\r\n" + random.Random(7).randbytes(512))
            await writer.drain()
            await drain_client(reader, mode)
            return
        if mode == "endless-head":
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\n")
            count = 0
            while True:
                writer.write(b"X-Pad-%d: %s\r\n" % (count, b"a" * 1000))
                count += 1
                await writer.drain()
                await asyncio.sleep(0.01)
        if mode == "bad-accept":
            writer.write(upgrade_reply(headers, accept="AAAAAAAAAAAAAAAAAAAAAAAAAAA="))
            await writer.drain()
            await drain_client(reader, mode)
            return
        offered = headers.get("sec-websocket-extensions", "")
        deflate = mode == "bfinal" and "permessage-deflate" in offered
        writer.write(upgrade_reply(headers, extensions="permessage-deflate" if deflate else None))
        if mode == "random":
            noise = bytearray(random.Random(13).randbytes(65536))
            noise[0] = 0xA2  # FIN, RSV2, binary: no extension defines RSV2, so the first header is a certain violation
            writer.write(bytes(noise))
        elif mode == "huge-63":
            writer.write(b"\x82\x7f" + struct.pack("!Q", (1 << 63) - 1) + b"x" * 16)
        elif mode == "huge-64":
            writer.write(b"\x82\x7f" + struct.pack("!Q", (1 << 64) - 1) + b"x" * 16)
        elif mode == "bfinal":
            first = b"first message, first message"
            second = b"second message refers to the first message"
            if deflate:
                one = zlib.compressobj(wbits=-15)
                body = one.compress(first) + one.flush(zlib.Z_FINISH)  # ends with a BFINAL block
                writer.write(frame(0x1, body, rsv1=True))
                two = zlib.compressobj(wbits=-15, zdict=first)  # the window after the first message
                body = two.compress(second) + two.flush(zlib.Z_SYNC_FLUSH)
                writer.write(frame(0x1, body[:-4], rsv1=True))
            else:
                writer.write(frame(0x1, first) + frame(0x1, second))
            writer.write(frame(0x8, struct.pack("!H", 1000)))
        elif mode == "trickle":
            message = frame(0x1, bytes(ord("a") + i % 26 for i in range(1000)))
            for byte in message:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.002)
            writer.write(frame(0x8, struct.pack("!H", 1000)))
        elif mode == "bad-close-code":
            writer.write(frame(0x8, struct.pack("!H", 1005)))
        elif mode == "bad-close-utf8":
            writer.write(frame(0x8, struct.pack("!H", 1000) + b"\xc3\x28 bad"))
        elif mode == "ping-126":
            writer.write(b"\x89\x7e\x00\x7e" + b"p" * 126)
        elif mode == "flood":
            count = int(query.get("n", ["100000"])[0])
            for index in range(count):
                writer.write(frame(0x1, b"m%d" % index))
                if index % 256 == 255:
                    await writer.drain()
            writer.write(frame(0x8, struct.pack("!H", 1000)))
        await writer.drain()
        await drain_client(reader, mode, echo_writer=writer if mode in ("echo", "ping-echo") else None)
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
    # Serve until stdin closes (the test ended, or was killed).
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.close()


asyncio.run(main())
