"""The app the multi-node tests run with ``mcpkit run ... --redis``: tasks that wait, ask and
count, and a heartbeat fast enough that a killed node is noticed within a second."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcpkit import Context, MCPServer
from mcpkit.extensions.tasks import tasks_extension

HEARTBEAT_S = 0.2

server = MCPServer(name="tasks-node", version="1")


@server.tool
async def wait_long(marker: str) -> str:
    """Wait a minute; write ``marker`` if cancelled first (the test reads it)."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        Path(marker).write_text("cancelled")
        raise
    return "waited"


@server.tool
async def ask_name(ctx: Context) -> str:
    """Ask for a name inside the task."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = await ctx.elicit("Name?", schema)
    return f"hello {(answer.content or {}).get('name')}"


@server.tool
async def count(n: int, ctx: Context) -> str:
    """Count to n, a step every 0.1 s, each step a status message."""
    for i in range(1, n + 1):
        await asyncio.sleep(0.1)
        await ctx.progress(i, total=n, message=f"step {i} of {n}")
    return f"counted to {n}"


server.add_extension(
    tasks_extension(
        tools={"wait_long": "required", "ask_name": "required", "count": "required"},
        heartbeat_s=HEARTBEAT_S,
        poll_interval_ms=100,
    )
)
