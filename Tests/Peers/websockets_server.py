#!/usr/bin/env python3
"""A Python `websockets` server that the interop tests drive. Prints `listening PORT`, then serves:

  /            echo every message (text stays text, binary stays binary)
  /whoami      send the Authorization header the server saw, then echo
  /close/CODE  echo one message, then close with CODE and reason "bye"
  /slow/MS     echo every message MS milliseconds after it arrived; a close is answered at once, and the echoes
               still pending then are never sent (a client that closes before its replies are in loses them)

and a miniature Autobahn fuzzing server (the protocol `wsload autobahn` speaks):

  /getCaseCount                 send "3" and close
  /runCase?case=N&agent=A       send N text messages and one binary, check the echoes, print
                                `case N ok` or `case N mismatch`, close 1000
  /updateReports?agent=A        print `reports A`, close 1000

Options: --cert FILE --key FILE serve wss; --subprotocol NAME (repeatable) accepted subprotocols;
--port N listens on N (a restarted server takes its predecessor's port), default a free one.
Loopback only. Exits when stdin closes, so a killed test never leaves it running.
"""
import argparse
import asyncio
import ssl
import sys
import urllib.parse

from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed


async def autobahn(connection, path, query):
    if path == "/getCaseCount":
        await connection.send("3")
    elif path == "/runCase":
        number = int(query["case"][0])
        sent = [f"case {number} message {index} ✓" for index in range(number)] + [bytes([number]) * (number * 100)]
        matched = True
        for message in sent:
            await connection.send(message)
            matched = matched and (await connection.recv()) == message
        print(f"case {number} {'ok' if matched else 'mismatch'} agent={query['agent'][0]}", flush=True)
    elif path == "/updateReports":
        print(f"reports {query['agent'][0]}", flush=True)
    await connection.close(code=1000)


async def slow_echo(connection, delay):
    pending = set()

    async def later(message):
        await asyncio.sleep(delay)
        try:
            await connection.send(message)
        except ConnectionClosed:
            pass  # the client closed first: this echo is lost

    async for message in connection:
        task = asyncio.get_running_loop().create_task(later(message))
        pending.add(task)
        task.add_done_callback(pending.discard)


async def handler(connection):
    parsed = urllib.parse.urlsplit(connection.request.path)
    if parsed.path in ("/getCaseCount", "/runCase", "/updateReports"):
        await autobahn(connection, parsed.path, urllib.parse.parse_qs(parsed.query))
        return
    path = connection.request.path
    if path.startswith("/slow/"):
        await slow_echo(connection, int(path.split("/")[2]) / 1000)
        return
    if path == "/whoami":
        await connection.send(connection.request.headers.get("Authorization", "<none>"))
    close_code = int(path.split("/")[2]) if path.startswith("/close/") else None
    async for message in connection:
        await connection.send(message)
        if close_code is not None:
            await connection.close(code=close_code, reason="bye")
            return


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--subprotocol", action="append", default=[])
    parser.add_argument("--port", type=int, default=0)
    arguments = parser.parse_args()
    context = None
    if arguments.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(arguments.cert, arguments.key)
    # max_queue=None: websockets otherwise fails messages of more fragments than its queue (1009
    # "too many fragments"), a policy of its own that the fragmentation tests would trip.
    async with serve(handler, "127.0.0.1", arguments.port, ssl=context, max_size=32 * 1024 * 1024, max_queue=None,
                     subprotocols=arguments.subprotocol or None) as server:
        print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


asyncio.run(main())
