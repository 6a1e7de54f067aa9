#!/usr/bin/env python3
"""A Python `websockets` server for `wsload run` tests: a target we do not control. Prints `listening PORT`,
then for every connection one line `request PATH HEADERS` (HEADERS: the request's headers as a JSON object,
names lower-cased), and echoes every message (text stays text, binary stays binary).

  --duplicate-every N   send every Nth message's echo twice (a server that duplicates: the oracle's
                        messages.in_sequence must flag it)
  --require-header NAME=VALUE
                        refuse the upgrade (HTTP 401) unless the request carries this header value

Loopback only; a free port. Exits when stdin closes, so a killed test never leaves it running.
"""
import argparse
import asyncio
import json
import sys
from http import HTTPStatus

from websockets.asyncio.server import serve


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--duplicate-every", type=int, default=0)
    parser.add_argument("--require-header")
    arguments = parser.parse_args()
    required = arguments.require_header.split("=", 1) if arguments.require_header else None

    def check(connection, request):
        headers = {name.lower(): value for name, value in request.headers.raw_items()}
        print(f"request {request.path} {json.dumps(headers, sort_keys=True)}", flush=True)
        if required and headers.get(required[0].lower()) != required[1]:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "missing or wrong credentials\n")
        return None

    async def handler(connection):
        count = 0
        async for message in connection:
            count += 1
            await connection.send(message)
            if arguments.duplicate_every and count % arguments.duplicate_every == 0:
                await connection.send(message)

    async with serve(handler, "127.0.0.1", 0, process_request=check, max_queue=None) as server:
        print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


asyncio.run(main())
