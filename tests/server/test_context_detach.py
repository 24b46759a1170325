"""detach_from_request: from the call on, the rest of the task reports progress to a sink
and asks through an asker; before it, the request's own channels; other tasks unaffected."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit import Context, MCPServer
from mcpkit.server.context import detach_from_request, progress_sink, request_asker
from mcpkit.testing import connect

ELICIT = {"elicitation": {}}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


async def test_a_tool_detached_halfway_asks_and_reports_through_its_own_channels() -> None:
    sunk: list[tuple[float, float | None, str | None]] = []
    asked: list[str] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        sunk.append((progress, total, message))

    async def ask(
        method: str, params: dict[str, Any] | None, key: str | None, timeout: float | None
    ) -> dict[str, Any]:
        asked.append(method)
        return {"action": "accept", "content": {"name": "from the asker"}}

    server = MCPServer(name="detach", version="1")

    @server.tool
    async def halfway(ctx: Context) -> str:
        before = await ctx.elicit("Name?", NAME)  # to the client, as usual
        await ctx.progress(1, total=2, message="on the wire")
        detach_from_request(progress=sink, ask=ask)
        after = await ctx.elicit("Again?", NAME)
        await ctx.progress(2, total=2, message="to the sink")
        return f"{(before.content or {}).get('name')} / {(after.content or {}).get('name')}"

    async with connect(
        server,
        capabilities=ELICIT,
        handlers={
            "elicitation/create": lambda p: {"action": "accept", "content": {"name": "client"}}
        },
    ) as client:
        # A task of its own, as the tasks extension gives it (in memory, a call may run
        # in its caller's task).
        result = await asyncio.create_task(client.call_tool("halfway", progress_token="p"))
        wire = [n for n in client.notifications if n["method"] == "notifications/progress"]
    assert result["content"][0]["text"] == "client / from the asker"
    assert asked == ["elicitation/create"]
    assert sunk == [(2, 2, "to the sink")]
    assert [n["params"]["message"] for n in wire] == ["on the wire"]
    # Set in the tool's task only: this task never saw it.
    assert progress_sink() is None and request_asker() is None
