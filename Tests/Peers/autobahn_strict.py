#!/usr/bin/env python3
"""A miniature strict Autobahn|Testsuite fuzzing server (python3 stdlib only) for `wsload autobahn`.

It speaks the protocol the real fuzzing server speaks to a client testee:

  /getCaseCount                 send the number of cases as text, close 1000
  /runCase?case=N&agent=A       run case N (1-based, in the order of CASES below), print its verdict line
                                `case N ID VERDICT behavior=.. close=.. received=..`
  /updateReports?agent=A        print `reports A ok=X non-strict=Y failed=Z`, close 1000

The handshake and every frame are written by hand (no websockets library), so a case can send what a
conforming library never would: reserved bits and opcodes, continuations with nothing to continue, and one
frame's payload in chops with pauses between them (the 6.4.x cases). Each case is Autobahn's own
(autobahntestsuite/case/caseX_Y.py): the same frames, the same expected event lists (`OK`, `NON_STRICT`) and
the same closing-behaviour rules (Case.onConnectionLost), so the verdicts mean what Autobahn's mean:

  OK          the events match the OK list and the close was right
  NON-STRICT  the events match only the NON_STRICT list (RFC-conformant, not canonical)
  FAILED      no list matched, or the connection was closed by the wrong side or with the wrong code

Timing: Autobahn waits 1 s between chops and kills the connection 1 s after a case's last frame. Here the
wait after a *valid* chop is --delay (default 1 s: a client that fails too early is caught regardless of
speed) and the wait after an *invalid* chop and before the kill is --patience (default 1 s; tests pass a
generous value so a busy CPU cannot turn a fail-fast client into a late one).

Loopback only. Prints `listening PORT`. Exits when stdin closes, so a killed test never leaves it running.
"""
import argparse
import asyncio
import base64
import hashlib
import os
import socket
import struct
import sys
import urllib.parse

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

UTF8_PAYLOAD1 = b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"
UTF8_PAYLOAD2 = b"\xf4\x90\x80\x80"  # invalid exactly on byte 12 (\x90)
UTF8_PAYLOAD3 = b"\x65\x64\x69\x74\x65\x64"
UTF8_PAYLOAD = UTF8_PAYLOAD1 + UTF8_PAYLOAD2 + UTF8_PAYLOAD3

HELLO = b"Hello, world!"


def frame(opcode, payload=b"", fin=True, rsv=0):
    """A server frame (unmasked), shortest length encoding."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    length = len(payload)
    if length < 126:
        head = struct.pack("!BB", first, length)
    elif length < 65536:
        head = struct.pack("!BBH", first, 126, length)
    else:
        head = struct.pack("!BBQ", first, 127, length)
    return head + payload


def frame_head(opcode, length, fin=True):
    """The head of a frame whose payload follows in chops (Autobahn's beginMessageFrame)."""
    return frame(opcode, b"\0" * length, fin)[:-length] if length else frame(opcode, b"", fin)


class Peer:
    """One connection's server side: frames out, the client's events in, Autobahn's bookkeeping."""

    def __init__(self, reader, writer, options):
        self.reader = reader
        self.writer = writer
        self.options = options
        self.received = []
        self.open = True
        self.closed_by_me = False
        self.close_sent = False
        self.close_received = False
        self.remote_close_code = None
        self.lost = asyncio.Event()

    async def send(self, data):
        if self.writer.is_closing():
            return
        self.writer.write(data)
        try:
            await self.writer.drain()
        except ConnectionError:
            pass

    async def send_close(self, code):
        if self.close_sent:
            return
        self.close_sent = True
        if not self.close_received:
            self.closed_by_me = True
        self.open = False
        await self.send(frame(8, struct.pack("!H", code)))

    def drop(self):
        self.open = False
        if not self.writer.is_closing():
            self.writer.close()

    async def wait(self, seconds, label):
        """Autobahn's continueLater: after `seconds`, record ("timeout", label) if still open."""
        try:
            await asyncio.wait_for(self.lost.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        if self.open:
            self.received.append(("timeout", label))
            return True
        return False

    async def kill_after(self, seconds):
        try:
            await asyncio.wait_for(self.lost.wait(), seconds)
        except asyncio.TimeoutError:
            self.drop()

    async def read_frames(self, on_event):
        """Reads the client's (masked) frames until the transport ends; reassembles messages."""
        message_opcode = None
        parts = []
        try:
            while True:
                head = await self.reader.readexactly(2)
                fin, opcode, masked, length = head[0] & 0x80, head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
                if length == 126:
                    length = struct.unpack("!H", await self.reader.readexactly(2))[0]
                elif length == 127:
                    length = struct.unpack("!Q", await self.reader.readexactly(8))[0]
                if length > 16 * 1024 * 1024:
                    break
                key = await self.reader.readexactly(4) if masked else b"\0\0\0\0"
                payload = bytes(b ^ key[i % 4] for i, b in enumerate(await self.reader.readexactly(length)))
                if opcode == 8:
                    self.close_received = True
                    self.open = False
                    if len(payload) >= 2:
                        self.remote_close_code = struct.unpack("!H", payload[:2])[0]
                    if not self.close_sent:
                        self.close_sent = True
                        echo = payload[:2] if len(payload) >= 2 else b""
                        await self.send(frame(8, echo))
                    break  # the server closes TCP first (RFC 6455 §7.1.1)
                if opcode == 9:
                    await self.send(frame(10, payload))
                    continue
                if opcode == 10:
                    self.received.append(("pong", payload))
                    await on_event()
                    continue
                if opcode in (1, 2):
                    message_opcode, parts = opcode, [payload]
                elif opcode == 0:
                    parts.append(payload)
                if fin and message_opcode is not None:
                    self.received.append(("message", b"".join(parts), message_opcode == 2))
                    message_opcode, parts = None, []
                    await on_event()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        self.drop()
        self.lost.set()


class Case:
    """One Autobahn case: `run` sends its frames; `expected` and `expected_close` are Autobahn's."""

    def __init__(self, ident, expected, closed_by_me, close_codes, run, require_clean=False, fatal=False):
        self.ident = ident
        self.expected = expected
        self.expected_close = {"closedByMe": closed_by_me, "closeCode": close_codes, "requireClean": require_clean,
                               "closedByWrongEndpointIsFatal": fatal}
        self.run = run

    def verdict(self, peer):
        behavior = "FAILED"
        for name in ("OK", "NON_STRICT"):
            if name in self.expected and peer.received == self.expected[name]:
                behavior = name
                break
        close = self.expected_close
        was_clean = peer.close_sent and peer.close_received
        if close["closedByMe"] != peer.closed_by_me:
            behavior_close = "FAILED"
        elif close["requireClean"] and not was_clean:
            behavior_close = "UNCLEAN"
        elif peer.remote_close_code is not None and peer.remote_close_code not in close["closeCode"]:
            behavior_close = "WRONG_CODE"
        else:
            behavior_close = "OK"
        if close["closedByWrongEndpointIsFatal"] and close["closedByMe"] != peer.closed_by_me:
            behavior = "FAILED"
        if behavior == "FAILED" or behavior_close != "OK":
            overall = "FAILED"
        elif behavior == "NON_STRICT":
            overall = "NON-STRICT"
        else:
            overall = "OK"
        return overall, behavior, behavior_close


# --- the cases, as Autobahn sends them -------------------------------------------------------------------

async def send_then_kill(peer, frames):
    # Autobahn's sendFrame without sync: the frames leave in one write ("all sent in one chop").
    await peer.send(b"".join(frames))
    await peer.kill_after(peer.options.patience)


def failing(ident, frames, ok):
    """A case whose frames end in a protocol violation (1002): `ok` is what must be echoed first."""
    return Case(ident, {"OK": ok, "NON_STRICT": []} if ok else {"OK": []}, False, [1002],
                lambda peer: send_then_kill(peer, frames))


def echoing(ident, frames, expected):
    """A passing neighbour: the echo is expected, then we close 1000 (finishWhenDone)."""
    async def run(peer):
        for data in frames:
            await peer.send(data)
        await peer.kill_after(peer.options.patience * 4)
    return Case(ident, {"OK": expected}, True, [1000], run, require_clean=True)


def utf8_chops(ident, chops, as_frames):
    """6.4.x: a text message whose 2nd chop makes it invalid UTF-8, with a pause after each chop."""
    async def run(peer):
        if as_frames:
            await peer.send(frame(1, chops[0], fin=False))
        else:
            await peer.send(frame_head(1, len(UTF8_PAYLOAD)) + chops[0])
        if not await peer.wait(peer.options.delay, "A"):
            return
        await peer.send(frame(0, chops[1], fin=False) if as_frames else chops[1])
        if not await peer.wait(peer.options.patience, "B"):
            return
        await peer.send(frame(0, chops[2], fin=True) if as_frames else chops[2])
        await peer.kill_after(peer.options.patience)
    return Case(ident, {"OK": [("timeout", "A")], "NON_STRICT": [("timeout", "A"), ("timeout", "B")]},
                False, [1007], run, fatal=True)


def fragments_5_16(fin):
    frames = []
    for _ in range(2):
        frames += [frame(0, b"fragment1", fin=fin), frame(1, b"fragment2", fin=False), frame(0, b"fragment3")]
    return frames


CASES = [
    echoing("1.1.2", [frame(1, b"*" * 125)], [("message", b"*" * 125, False)]),
    echoing("2.2", [frame(9, HELLO)], [("pong", HELLO)]),
    failing("3.2", [frame(1, HELLO), frame(1, HELLO, rsv=2), frame(9)], [("message", HELLO, False)]),
    failing("4.1.3", [frame(1, HELLO), frame(5), frame(9)], [("message", HELLO, False)]),
    failing("4.1.5", [frame(1, HELLO), frame(7, HELLO), frame(9)], [("message", HELLO, False)]),
    failing("4.2.4", [frame(1, HELLO), frame(14), frame(9)], [("message", HELLO, False)]),
    failing("4.2.5", [frame(1, HELLO), frame(15, HELLO), frame(9)], [("message", HELLO, False)]),
    echoing("5.3", [frame(1, b"fragment1", fin=False), frame(0, b"fragment2")], [("message", b"fragment1fragment2", False)]),
    failing("5.9", [frame(0, b"non-continuation payload"), frame(1, HELLO)], []),
    failing("5.15", [frame(1, b"fragment1", fin=False), frame(0, b"fragment2"), frame(0, b"fragment3", fin=False),
                     frame(1, b"fragment4")], [("message", b"fragment1fragment2", False)]),
    failing("5.16", fragments_5_16(False), []),
    failing("5.17", fragments_5_16(True), []),
    utf8_chops("6.4.1", [UTF8_PAYLOAD1, UTF8_PAYLOAD2, UTF8_PAYLOAD3], as_frames=True),
    utf8_chops("6.4.2", [UTF8_PAYLOAD[:12], UTF8_PAYLOAD[12:13], UTF8_PAYLOAD[13:]], as_frames=True),
    utf8_chops("6.4.3", [UTF8_PAYLOAD1, UTF8_PAYLOAD2, UTF8_PAYLOAD3], as_frames=False),
    utf8_chops("6.4.4", [UTF8_PAYLOAD[:12], UTF8_PAYLOAD[12:13], UTF8_PAYLOAD[13:]], as_frames=False),
]

RESULTS = {}  # agent -> {case ident: verdict}
# Cases still being judged. The client may see a case's close and ask for /updateReports before this loop has
# handled that case's connection loss (seen under AddressSanitizer: cases=15 of 16), so reports wait for them.
IN_FLIGHT = {"cases": 0, "idle": None}


async def handshake(reader, writer):
    """Reads the upgrade request (bounded), answers 101 without extensions. Returns the request target."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    if len(head) > 16384:
        raise ConnectionError("head too long")
    lines = head.decode("latin-1").split("\r\n")
    target = lines[0].split(" ")[1]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + GUID).encode()).digest()).decode()
    writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
    await writer.drain()
    return target


async def serve_case(peer, case, agent, number):
    IN_FLIGHT["cases"] += 1
    IN_FLIGHT["idle"].clear()
    try:
        await judge_case(peer, case, agent, number)
    finally:
        IN_FLIGHT["cases"] -= 1
        if IN_FLIGHT["cases"] == 0:
            IN_FLIGHT["idle"].set()


async def judge_case(peer, case, agent, number):
    async def on_event():
        # finishWhenDone: once the events match every expected list, a closedByMe case starts the close.
        if all(peer.received == events for events in case.expected.values()) and case.expected_close["closedByMe"]:
            await peer.send_close(case.expected_close["closeCode"][0])
    reading = asyncio.ensure_future(peer.read_frames(on_event))
    await case.run(peer)
    await asyncio.wait_for(peer.lost.wait(), peer.options.patience * 10)
    await reading
    overall, behavior, behavior_close = case.verdict(peer)
    RESULTS.setdefault(agent, {})[case.ident] = overall
    print(f"case {number} {case.ident} {overall} behavior={behavior} close={behavior_close} "
          f"remote_close={peer.remote_close_code} received={peer.received!r}", flush=True)


async def handle(reader, writer, options):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        target = await handshake(reader, writer)
    except Exception:
        writer.close()
        return
    parsed = urllib.parse.urlsplit(target)
    query = urllib.parse.parse_qs(parsed.query)
    agent = query.get("agent", ["?"])[0]
    peer = Peer(reader, writer, options)
    try:
        if parsed.path == "/runCase":
            number = int(query["case"][0])
            await serve_case(peer, CASES[number - 1], agent, number)
            return
        if parsed.path == "/getCaseCount":
            await peer.send(frame(1, str(len(CASES)).encode()))
        elif parsed.path == "/updateReports":
            await asyncio.wait_for(IN_FLIGHT["idle"].wait(), options.patience * 20)
            verdicts = RESULTS.get(agent, {})
            counts = {name: sum(1 for v in verdicts.values() if v == name) for name in ("OK", "NON-STRICT", "FAILED")}
            print(f"reports {agent} cases={len(verdicts)} ok={counts['OK']} non-strict={counts['NON-STRICT']} "
                  f"failed={counts['FAILED']}", flush=True)
        await peer.send_close(1000)
        await asyncio.wait_for(peer.read_frames(lambda: asyncio.sleep(0)), 10)
    except (asyncio.TimeoutError, ConnectionError, IndexError, KeyError, ValueError) as error:
        print(f"error {parsed.path}: {error!r}", file=sys.stderr, flush=True)
    finally:
        peer.drop()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds to wait after a valid chop")
    parser.add_argument("--patience", type=float, default=1.0,
                        help="seconds to wait after an invalid chop, and before killing a case")
    options = parser.parse_args()
    IN_FLIGHT["idle"] = asyncio.Event()
    IN_FLIGHT["idle"].set()
    server = await asyncio.start_server(lambda r, w: handle(r, w, options), "127.0.0.1", options.port)
    print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    os._exit(0)


asyncio.run(main())
