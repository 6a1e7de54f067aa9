#!/usr/bin/env python3
"""A strawberry-graphql server on uvicorn (ASGI) speaking graphql-transport-ws at /graphql, meeting the flow
presets' GraphQL contract. Prints `listening PORT`, then serves:

  query { hello }                          "world"
  mutation { post(text: String!) { id text } }   an increasing id (1, 2, ...) and the text
  subscription { count(to: Int, everyMs: Int) }  0 ... to-1, everyMs apart, then completes

Only the graphql-transport-ws subprotocol is accepted (a client that does not offer it is refused).
Options: --port N (default a free one); --break MODE breaks the contract for the broken-contract tests:
  error  `hello` raises (the result carries `errors`)
  slow   `count` waits everyMs x 50 between values
Loopback only. Exits when stdin closes, so a killed test never leaves it running.
"""
import argparse
import asyncio
import itertools
import socket
import sys
from typing import AsyncGenerator

import strawberry
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route, WebSocketRoute
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--break", dest="break_mode", choices=["error", "slow"])
arguments = parser.parse_args()
post_ids = itertools.count(1)


@strawberry.type
class Post:
    id: int
    text: str


@strawberry.type
class Query:
    @strawberry.field
    def hello(self) -> str:
        if arguments.break_mode == "error":
            raise ValueError("hello is broken on purpose (--break error)")
        return "world"


@strawberry.type
class Mutation:
    @strawberry.mutation
    def post(self, text: str) -> Post:
        return Post(id=next(post_ids), text=text)


@strawberry.type
class Subscription:
    @strawberry.subscription
    async def count(self, to: int = 3, every_ms: int = 100) -> AsyncGenerator[int, None]:
        pause = every_ms * (50 if arguments.break_mode == "slow" else 1) / 1000
        for value in range(to):
            if value > 0:
                await asyncio.sleep(pause)
            yield value


schema = strawberry.Schema(query=Query, mutation=Mutation, subscription=Subscription)
graphql = GraphQL(schema, subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL])
application = Starlette(routes=[Route("/graphql", graphql), WebSocketRoute("/graphql", graphql)])


async def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", arguments.port))
    # Listening before uvicorn starts: a client that connects as soon as the port is printed waits in the backlog.
    listener.listen(128)
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning", lifespan="off", ws="websockets-sansio"))
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    print(f"listening {listener.getsockname()[1]}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.should_exit = True
    await serving


asyncio.run(main())
