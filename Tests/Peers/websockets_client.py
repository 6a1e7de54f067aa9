#!/usr/bin/env python3
"""A Python `websockets` client that checks the embedded server as a third party sees it.

Usage: websockets_client.py URL
Connects with permessage-deflate offered, then: a text message (non-ASCII), a binary message, a fragmented text
message, a 1 MiB binary message, a ping; every echo must be identical and of the same type. Closes with 4001 and
prints one JSON line: {"compression": ..., "echoes": N, "ping": true, "close_code": ..., "subprotocol": ...}.
Every step has a timeout, so a server that stops answering fails the test instead of hanging it.
"""
import asyncio
import json
import os
import sys

from websockets.asyncio.client import connect


async def main(url):
    result = {"echoes": 0}
    async with asyncio.timeout(30):
        async with connect(url, compression="deflate", max_size=4 << 20, open_timeout=10, close_timeout=10) as socket:
            extensions = [type(extension).__name__ for extension in socket.protocol.extensions]
            result["compression"] = any("Deflate" in name for name in extensions)
            result["subprotocol"] = socket.subprotocol
            big = os.urandom(1 << 20)
            for message in ["héllo κόσμε", b"\x00\x01\x02\xff", big]:
                await socket.send(message)
                echo = await socket.recv()
                if echo != message or type(echo) is not type(message):
                    raise SystemExit(f"echo mismatch for a {type(message).__name__} of {len(message)}")
                result["echoes"] += 1
            # A fragmented text message: the echo is the whole message, reassembled.
            await socket.send(["frag", "mented ", "text"])
            if await socket.recv() != "fragmented text":
                raise SystemExit("fragmented echo mismatch")
            result["echoes"] += 1
            pong = await socket.ping(b"are you there")
            await asyncio.wait_for(pong, 10)
            result["ping"] = True
            await socket.close(code=4001, reason="third party done")
            result["close_code"] = socket.protocol.close_rcvd.code if socket.protocol.close_rcvd else None
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
