"""The server of the deployment example (docs/deployment.md): served by every node.

Each node runs ``mcpkit run app.py -t http --workers N`` with ``MCPKIT_REDIS_URL``
set, so it shares its sessions, streams and input rounds with the others through
Redis. ``MCPKIT_REQUEST_STATE_KEY`` (64 hex digits, the same on every node) signs
2026-07-28 ``requestState``; without it the nodes share a key kept in Redis
(``<prefix>rsk``), which whoever can read Redis could use to forge states.
"""

from __future__ import annotations

import asyncio
import os
import socket

from mcpkit import Context, InputRoundOptions, MCPServer

_key = os.environ.get("MCPKIT_REQUEST_STATE_KEY")

server = MCPServer(
    name="deployed",
    version="1.0.0",
    input_rounds=InputRoundOptions(request_state_keys=[bytes.fromhex(_key)] if _key else None),
)


@server.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
async def where() -> str:
    """Which node and process answered (to watch the balancer spread requests)."""
    return f"{socket.gethostname()} pid {os.getpid()}"


@server.tool
async def countdown(n: int, ctx: Context) -> str:
    """Count down from n, one progress notification a second (a stream to cut and resume)."""
    for i in range(n, 0, -1):
        await ctx.progress(n - i + 1, n, f"{i}...")
        await asyncio.sleep(1)
    return "lift-off"
