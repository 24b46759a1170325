"""A server with an extension of its own: a shared counter with methods beyond the spec.

Run it (stdio)::

    mcpkit run examples/extension_server.py

or on Streamable HTTP at http://127.0.0.1:8000/mcp::

    mcpkit run examples/extension_server.py --transport http

What it shows (see docs/server.md, "Extensions and additional methods"):

- the ``com.example/counter`` extension, advertised with its settings in
  ``capabilities.extensions`` (``initialize`` and ``server/discover``);
- two additional JSON-RPC methods, ``com.example.counter/add`` and
  ``com.example.counter/get``, served through the middleware chain on every
  transport and both eras;
- a lifespan that opens the counter's storage before the first request and
  closes it after the last, and a middleware that counts every request;
- a ``count`` tool that reads the same counter, for clients that only know tools.

Call the extension's methods from Python, with a hook that tags each request's
``_meta`` (the extension's client side)::

    from mcpkit import Client
    from examples.extension_server import counter

    async with Client(url="http://127.0.0.1:8000/mcp", extensions=[counter]) as client:
        await client.request("com.example.counter/add", {"by": 2})
        print(await client.request("com.example.counter/get"))
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcpkit import CallNext, Context, Extension, InvalidParams, MCPServer, MiddlewareContext

MAX_VALUE = 1_000


class Storage:
    """Stands for a database or a Redis connection the extension owns."""

    def __init__(self) -> None:
        self.value = 0
        self.requests = 0
        self.open = False


storage = Storage()


@contextlib.asynccontextmanager
async def open_storage(server: MCPServer) -> AsyncIterator[None]:
    storage.open = True
    try:
        yield
    finally:
        storage.open = False


async def count_requests(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
    storage.requests += 1
    return await call_next(ctx)


async def add(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    by = params.get("by", 1)
    if isinstance(by, bool) or not isinstance(by, int) or by < 1:
        raise InvalidParams("com.example.counter/add: 'by' must be a positive integer")
    if storage.value + by > MAX_VALUE:
        raise InvalidParams(f"the counter stops at {MAX_VALUE}")
    storage.value += by
    await ctx.info(f"counter now {storage.value}")
    return {"value": storage.value}


async def get(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {"value": storage.value, "requests": storage.requests}


def tag_request(method: str, meta: dict[str, Any]) -> None:
    """The client side: say which client build sent each request (an opt-in)."""
    meta["com.example/counter-client"] = "example/1"


counter = Extension(
    identifier="com.example/counter",
    settings={"max": MAX_VALUE},
    methods={"com.example.counter/add": add, "com.example.counter/get": get},
    middleware=[count_requests],
    lifespan=open_storage,
    request_meta=tag_request,
)

server = MCPServer(name="mcpkit extension demo", version="1.0.0", extensions=[counter])


@server.tool
async def count() -> int:
    """The counter's current value."""
    return storage.value
