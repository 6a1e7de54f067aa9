#!/usr/bin/env python3
"""A python-socketio server (Socket.IO 5 over Engine.IO 4, on aiohttp) meeting the flow presets' chat contract.
Prints `listening PORT`, then serves the default namespace at /socket.io/:

  on connect   emits `welcome` {"sid": <the namespace session id>} to the new client
  echo DATA    acks DATA unchanged
  join {"room"}           enters the room, acks {"joined": room}
  say {"room", "text"}    emits `said` {"room", "text", "from": sid} to the room (the sender too), acks {"ok": true}

Options: --port N (default a free one); --ping-interval S and --ping-timeout S (seconds, fractions allowed) for the
Engine.IO heartbeat; --break MODE breaks the contract for the broken-contract tests:
  wrong-event  `say` emits `sad` instead of `said`
  no-ack       `say` is never acked
  late         `echo` acks after 3 s
  flood-names  after `welcome`, pushes 3000 events of distinct names (`e0`…`e2999`), then hostile names (a quote, a
               line feed, braces, non-ASCII, 100 bytes, a space, `other`), then `flooded`: a peer growing the
               client's per-event counters without bound
Loopback only. Exits when stdin closes, so a killed test never leaves it running.
"""
import argparse
import asyncio
import sys

import socketio
from aiohttp import web


FLOOD_COUNT = 3000
HOSTILE_NAMES = ['x"y', "a\nb", "a{b}", "caf\u00e9", "x" * 100, "two words", "other"]


def build(arguments):
    server = socketio.AsyncServer(
        async_mode="aiohttp", cors_allowed_origins="*", ping_interval=arguments.ping_interval,
        ping_timeout=arguments.ping_timeout, transports=["websocket", "polling"], always_connect=True)
    broken = arguments.break_mode

    @server.event
    async def connect(sid, environ, auth=None):
        await server.emit("welcome", {"sid": sid}, to=sid)
        if broken == "flood-names":
            for index in range(FLOOD_COUNT):
                await server.emit(f"e{index}", index, to=sid)
            for name in HOSTILE_NAMES:
                await server.emit(name, 0, to=sid)
            await server.emit("flooded", {}, to=sid)

    @server.event
    async def echo(sid, data=None):
        if broken == "late":
            await asyncio.sleep(3)
        return data

    @server.event
    async def join(sid, data):
        room = data.get("room") if isinstance(data, dict) else None
        if not isinstance(room, str):
            return {"error": "join needs {\"room\": string}"}
        await server.enter_room(sid, room)
        return {"joined": room}

    @server.event
    async def say(sid, data):
        if not isinstance(data, dict) or not isinstance(data.get("room"), str):
            return {"error": "say needs {\"room\": string, \"text\": ...}"}
        event = "sad" if broken == "wrong-event" else "said"
        await server.emit(event, {"room": data["room"], "text": data.get("text"), "from": sid}, room=data["room"])
        if broken == "no-ack":
            return None
        return {"ok": True}

    return server


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ping-interval", type=float, default=25.0)
    parser.add_argument("--ping-timeout", type=float, default=20.0)
    parser.add_argument("--break", dest="break_mode", choices=["wrong-event", "no-ack", "late", "flood-names"])
    arguments = parser.parse_args()
    application = web.Application()
    build(arguments).attach(application)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", arguments.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await runner.cleanup()


asyncio.run(main())
