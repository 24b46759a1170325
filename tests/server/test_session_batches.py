"""How a session serves a JSON-RPC batch (2025-03-26): bounded in count and in memory.

A batch within ``ServerLimits.max_batch_size`` is served by a few worker tasks, not a task per
member, so its cost is the answers it returns, and nothing stays behind once they are
written. (The refusal of a bigger batch over a real socket:
tests/transports/test_batch_limits.py.)
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

import pytest

from mcpkit import Context, MCPServer, ServerLimits
from mcpkit.errors import INVALID_REQUEST, ConfigurationError
from mcpkit.server.session import ServerSession
from mcpkit.testing import connect


async def _nowhere(message: dict[str, Any]) -> None:
    pass


async def _session(server: MCPServer) -> ServerSession:
    session = server.create_session()
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    session.receive(init)
    assert "result" in (await session.serve(init, _nowhere) or {})
    return session


async def test_serving_a_batch_costs_its_answers_and_nothing_is_left_behind() -> None:
    # 20,000 pings (~0.9 MB on the wire). A task per member used to peak at ~1.2 KB a
    # member and keep ~1 KB of it after the answers were gone (finished tasks held in
    # the gather's reference cycles until a collection): 3.5 MB of pings added ~130 MB.
    count = 20_000
    session = await _session(
        MCPServer(name="b", version="1", limits=ServerLimits(max_batch_size=count))
    )
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(count)]
    gc.collect()
    tracemalloc.start()
    try:
        answers = await session.serve_batch(batch, _nowhere)
        _, peak = tracemalloc.get_traced_memory()
        assert isinstance(answers, list) and len(answers) == count
        del answers
        left, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / count < 450, f"{peak / count:.0f} B a member at the peak"  # ~270 B: answers
    assert left / count < 50, f"{left / count:.0f} B a member left behind"


async def test_the_limit_refuses_a_batch_before_any_member_runs() -> None:
    server = MCPServer(name="b", version="1", limits=ServerLimits(max_batch_size=2))
    ran: list[int] = []

    @server.tool
    def mark(n: int) -> int:
        ran.append(n)
        return n

    async with connect(server, protocol_version="2025-03-26") as client:
        calls = [
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "mark", "arguments": {"n": n}},
            }
            for n in range(3)
        ]
        out = await client.send_raw(calls)
        assert out["error"]["code"] == INVALID_REQUEST
        assert "over the limit of 2 (max_batch_size)" in out["error"]["message"]
        assert ran == []
        assert len(await client.send_raw(calls[:2])) == 2
        assert sorted(ran) == [0, 1]


async def test_cancelling_one_member_leaves_the_rest_of_the_batch_served() -> None:
    server = MCPServer(name="b", version="1")
    started = asyncio.Event()

    @server.tool
    async def hang(ctx: Context) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    session = await _session(server)
    # More members than workers, the hanging one first: its worker must move on.
    batch: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": "h", "method": "tools/call", "params": {"name": "hang"}}
    ]
    batch += [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(40)]
    serving = asyncio.create_task(session.serve_batch(batch, _nowhere))
    await asyncio.wait_for(started.wait(), 5)
    session.receive(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "h"}}
    )
    answers = await asyncio.wait_for(serving, 5)
    assert isinstance(answers, list)
    assert sorted(a["id"] for a in answers) == list(range(40))  # no answer for "h"


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "10"])
def test_max_batch_size_is_validated(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_batch_size"):
        MCPServer(name="b", version="1", limits=ServerLimits(max_batch_size=value))
