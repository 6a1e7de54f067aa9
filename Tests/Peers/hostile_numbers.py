#!/usr/bin/env python3
"""A hostile echo server for `wsload run` (issue 13): before each honest echo it sends a reply that answers
no request, in turn: one whose header begins with eight 0xFF bytes (sequence 2^64-1), one whose sequence
is far beyond anything sent (+2^40), and one cut short (5 bytes). Text messages get the same lies as hex.
On `/push` it is a push stream whose sequences lie (2^64-1, past 2^53, 2^20+1 ahead) between honest ones.
Prints `listening PORT`; loopback only; a free port. Exits when stdin closes, so a killed test never
leaves it running.
"""
import asyncio
import sys

from websockets.asyncio.server import serve


def lies(message):
    """The hostile replies for one echo request (binary: 16-byte header; text: 32 hex digits)."""
    if isinstance(message, bytes):
        sequence = int.from_bytes(message[:8], "big")
        beyond = ((sequence + (1 << 40)) % (1 << 64)).to_bytes(8, "big")
        return [b"\xff" * 8 + message[8:], beyond + message[8:], message[:5]]
    sequence = int(message[:16], 16)
    beyond = format((sequence + (1 << 40)) % (1 << 64), "016x")
    return ["f" * 16 + message[16:], beyond + message[16:], message[:5]]


def push(sequence):
    """A `/push` stream message (Sources/Profile/PushStream.swift): magic, sequence, send time, filler."""
    return b"WSLPUSH1" + (sequence % (1 << 64)).to_bytes(8, "big") + (0).to_bytes(8, "big") + b"p" * 40


async def push_handler(connection):
    """On `/push`: honest pushes 0..N, and between them the lies: eight 0xFF bytes (2^64-1), a jump past 2^53
    and one just past 2^20 ahead. Then it waits for the client to close."""
    honest = 0
    for lie in [b"\xff" * 8, ((1 << 53) + 12345).to_bytes(8, "big"), None]:
        for _ in range(3):
            await connection.send(push(honest))
            honest += 1
        sequence = int.from_bytes(lie, "big") if lie is not None else honest + (1 << 20) + 1
        await connection.send(push(sequence))
    for _ in range(3):
        await connection.send(push(honest))
        honest += 1
    await connection.wait_closed()


async def handler(connection):
    if connection.request.path.startswith("/push"):
        await push_handler(connection)
        return
    count = 0
    async for message in connection:
        await connection.send(lies(message)[count % 3])
        count += 1
        await connection.send(message)


async def main():
    async with serve(handler, "127.0.0.1", 0, max_queue=None) as server:
        print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


asyncio.run(main())
