"""Input-required rounds cost nothing to a call that never asks: it is parked only when it asks.

``InputRounds`` registers a call (and arms its expiry timer) when the call's
first question goes back to the client, not when the call starts; the
handler's wake-up (it asks, or it ends) is one future. These tests pin the
behaviour around that: a slow call that asks nothing is never parked, a call
that asks late is parked then and resumed, and a call that ends while the
serving side waits for it is answered.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit import Context, MCPServer
from tests.server.stateless.test_input_required import NAME, accept, call, send


def make_server(release: asyncio.Event, started: asyncio.Event) -> MCPServer:
    server = MCPServer(name="fast", version="1")

    @server.tool
    async def slow_echo(text: str) -> str:
        """Wait for the test, ask nothing."""
        started.set()
        await release.wait()
        return text

    @server.tool
    async def asks_late(ctx: Context) -> str:
        """Wait for the test, then ask one question."""
        started.set()
        await release.wait()
        answer = await ctx.elicit("Name?", NAME, key="q")
        return f"hello {(answer.content or {})['name']}"

    return server


async def test_a_call_that_asks_nothing_is_never_parked() -> None:
    release, started = asyncio.Event(), asyncio.Event()
    server = make_server(release, started)
    pending = asyncio.ensure_future(send(server, call("slow_echo", {"text": "hi"}, 1)))
    await asyncio.wait_for(started.wait(), 5)
    assert len(server.input_rounds) == 0  # running, suspended, but nothing to park
    release.set()
    resp = await asyncio.wait_for(pending, 5)
    assert resp["result"]["resultType"] == "complete"
    assert resp["result"]["content"][0]["text"] == "hi"
    assert len(server.input_rounds) == 0


async def test_a_call_that_asks_after_suspending_is_parked_then_resumed() -> None:
    release, started = asyncio.Event(), asyncio.Event()
    server = make_server(release, started)
    pending = asyncio.ensure_future(send(server, call("asks_late", {}, 1)))
    await asyncio.wait_for(started.wait(), 5)
    assert len(server.input_rounds) == 0
    release.set()
    first: dict[str, Any] = (await asyncio.wait_for(pending, 5))["result"]
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["q"]
    assert len(server.input_rounds) == 1  # parked when it asked
    final = await send(
        server,
        call("asks_late", {}, 2, state=first["requestState"], responses={"q": accept("Ada")}),
    )
    assert final["id"] == 2
    assert final["result"]["content"][0]["text"] == "hello Ada"
    assert len(server.input_rounds) == 0
