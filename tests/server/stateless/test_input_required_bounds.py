"""Parked input-required calls (2026-07-28) are bounded per principal and in all, and an
expired one hands its memory back at once.

One client's flood of first rounds that ask and never come back used to fill the one
process-wide table (10,000) and push out the oldest calls, other users' included; and
each expired call stayed in memory until a full garbage collection (its cancelled task's
traceback closes a cycle), which an idle server may not run for a long time.
"""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import Context, InputRoundOptions, MCPServer, ServerLimits
from mcpkit.errors import INVALID_REQUEST, ConfigurationError
from mcpkit.server.stateless.input_required import principal_of
from mcpkit.stores import MemoryInputRoundStore
from mcpkit.stores.input_required import ParkedTable
from tests.server.stateless.test_input_required_principal import call, post, with_principal
from tests.transports.conftest import run_app

V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def asking_server(runs: list[str], **options: Any) -> MCPServer:
    server = MCPServer(name="bounds", version="1", **options)

    @server.tool
    async def ask(ctx: Context) -> str:
        """Ask for a name."""
        runs.append("start")  # once per run: a replay would start it again
        answer = await ctx.elicit("Name?", NAME)
        return f"hello {(answer.content or {})['name']}"

    return server


async def _nowhere(message: dict[str, Any]) -> None:
    pass


async def first_round(server: MCPServer, rid: int, user: str | None) -> dict[str, Any]:
    """A first round of ``ask`` by ``user``, served by the core as the transports do."""
    session = server.create_session(stateless=True, revision=V)
    msg = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {}, "_meta": META},
    }
    auth = None if user is None else {"sub": user}
    resp = await session.serve(msg, _nowhere, auth_info=auth)
    assert resp is not None and resp["result"]["resultType"] == "input_required", resp
    return resp


@pytest.fixture
async def small_caps() -> AsyncIterator[tuple[str, list[str]]]:
    runs: list[str] = []
    server = asking_server(
        runs, input_rounds=InputRoundOptions(max_parked_calls=8, max_parked_per_principal=3)
    )
    async with run_app(with_principal(server.http_app())) as base:
        yield base + "/mcp", runs


async def test_a_flood_by_one_principal_displaces_only_its_own_calls(
    small_caps: tuple[str, list[str]],
) -> None:
    url, runs = small_caps
    bob = (await post(url, call(1), "bob"))["result"]["requestState"]
    anon = (await post(url, call(2), None))["result"]["requestState"]
    flood = [
        (await post(url, call(10 + i), "mallory"))["result"]["requestState"] for i in range(12)
    ]
    assert len(runs) == 14
    # Bob's and the anonymous call were parked first and are still there: their retries
    # resume them (no second run of the handler).
    done = await post(url, call(3, bob, name="Bob"), "bob")
    assert done["result"]["content"][0]["text"] == "hello Bob"
    done = await post(url, call(4, anon, name="Anon"), None)
    assert done["result"]["content"][0]["text"] == "hello Anon"
    assert len(runs) == 14
    # Mallory's oldest gave way to her newest: a retry of one replays it from its state
    # (the handler starts again), one of her last three resumes.
    oldest = await post(url, call(5, flood[0], name="M"), "mallory")
    assert oldest["result"]["content"][0]["text"] == "hello M"
    assert len(runs) == 15
    newest = await post(url, call(6, flood[-1], name="M"), "mallory")
    assert newest["result"]["content"][0]["text"] == "hello M"
    assert len(runs) == 15


async def test_the_default_caps_keep_a_flood_away_from_other_principals() -> None:
    # The defaults: 1,000 per principal, 10,000 in all. A flood of 10,001 used to push
    # out the oldest call of the process, whoever's it was.
    runs: list[str] = []
    server = asking_server(runs, limits=ServerLimits(request_timeout=120))
    state = (await first_round(server, 0, "bob"))["result"]["requestState"]
    for rid in range(1, 10_002):
        await first_round(server, rid, "mallory")
    rounds = server.input_rounds
    assert len(rounds) == 1001
    assert rounds.parked.owned(principal_of({"sub": "mallory"})) == 1000
    retry = server.create_session(stateless=True, revision=V)
    done = await retry.serve(call(1, state, name="Bob"), _nowhere, auth_info={"sub": "bob"})
    assert done is not None and done["result"]["content"][0]["text"] == "hello Bob"
    assert len(runs) == 10_002  # resumed, not replayed


async def test_a_principal_over_its_claim_bound_is_refused_and_others_go_on() -> None:
    # The store of used states (MemoryInputRoundStore) kept 100,000 claims in all and
    # dropped the oldest past that, whoever's: one client's flood of retries could make
    # the others' states replayable. Now each principal has its own bound.
    runs: list[str] = []
    store = MemoryInputRoundStore(max_entries_per_principal=2)
    server = asking_server(runs, input_rounds=InputRoundOptions(store=store))
    async with run_app(with_principal(server.http_app())) as base:
        url = base + "/mcp"
        bob = (await post(url, call(1), "bob"))["result"]["requestState"]
        states = [
            (await post(url, call(10 + i), "mallory"))["result"]["requestState"] for i in range(3)
        ]
        for i, state in enumerate(states[:2]):
            done = await post(url, call(20 + i, state, name="M"), "mallory")
            assert done["result"]["content"][0]["text"] == "hello M"
        refused = await post(url, call(22, states[2], name="M"), "mallory")
        assert refused["error"]["code"] == INVALID_REQUEST
        assert refused["error"]["data"] == {"maxRoundsPerPrincipal": 2}
        assert "too many input-required rounds" in refused["error"]["message"]
        # Not used up, nor its call dropped: still parked, still Mallory's.
        assert server.input_rounds.parked.owned(principal_of({"sub": "mallory"})) == 1
        done = await post(url, call(2, bob, name="Bob"), "bob")
        assert done["result"]["content"][0]["text"] == "hello Bob"
        assert store.owned(principal_of({"sub": "bob"})) == 1


async def test_expired_calls_hand_their_memory_back_without_a_collection() -> None:
    runs: list[str] = []
    server = asking_server(runs, limits=ServerLimits(request_timeout=1.0))  # expire after 1 s
    await first_round(server, 0, "warm-up")  # one-time allocations (caches, codecs)
    count = 300
    gc.collect()
    gc.disable()  # what an idle server does: no allocations, so no collection
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for rid in range(1, count + 1):
            await first_round(server, rid, "ada")
        parked, _ = tracemalloc.get_traced_memory()
        deadline = time.monotonic() + 10
        while len(server.input_rounds) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert len(server.input_rounds) == 0
        await asyncio.sleep(0.05)  # the cancelled handlers finish
        left, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    held = parked - base
    assert held > count * 5_000, held  # a parked call holds several KB
    assert left - base < held / 10, f"{(left - base) / count:.0f} B a call left after expiry"


def test_the_table_refuses_bad_bounds() -> None:
    for options in ({"max_total": 0}, {"max_per_owner": -1}, {"max_per_owner": 1.5}):
        with pytest.raises(ConfigurationError, match="must be a positive integer"):
            ParkedTable(**options)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="max_parked_per_principal"):
        InputRoundOptions(max_parked_per_principal=0)


def test_the_table_gives_way_oldest_first_per_owner_then_in_all() -> None:
    table: ParkedTable[str] = ParkedTable(max_total=4, max_per_owner=2)
    assert table.add("a1", "a", "A1") == []
    assert table.add("b1", "b", "B1") == []
    assert table.add("a2", "a", "A2") == []
    assert table.add("a3", "a", "A3") == [("A1", "max_parked_per_principal")]
    assert table.add("n1", None, "N1") == []
    assert table.add("c1", "c", "C1") == [("B1", "max_parked_calls")]  # full: oldest of all
    assert (len(table), table.owned("a"), table.owned("b")) == (4, 2, 0)
    assert table.pop("a2") == "A2" and table.pop("a2") is None
    assert table.get("a3") == "A3" and table.get("a1") is None
    assert "b" not in table._owned  # an owner without calls has no entry
