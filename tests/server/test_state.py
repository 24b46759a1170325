"""``ctx.state``: JSON values per session (handshake era) or per principal (2026-07-28)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import redis.asyncio

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo
from mcpkit.errors import ConfigurationError
from mcpkit.server.state import StateOptions, configure_state
from mcpkit.stores import MemoryStateStore, MemoryStore
from mcpkit.stores.redis import RedisStore
from mcpkit.testing import InMemoryClient, connect
from tests.redis_server import RedisServer

STATELESS = {"protocol_version": "2026-07-28", "initialize": False}
ALICE = AuthInfo(token="t-alice", subject="alice", issuer="https://idp")
BOB = AuthInfo(token="t-bob", subject="bob", issuer="https://idp")


def counter_server(**options: Any) -> MCPServer:
    server = MCPServer(name="state", version="1", **options)

    @server.tool
    async def visit(ctx: Context) -> int:
        """Count this caller's visits."""
        count: int = await ctx.state.get("visits", 0) + 1
        await ctx.state.set("visits", count)
        return count

    @server.tool
    def visit_sync(ctx: Context) -> int:
        """The same, from a worker thread."""
        count: int = ctx.state.get("visits", 0) + 1
        ctx.state.set("visits", count)
        return count

    @server.tool
    async def remember(value: Any, ttl: float | None = None, ctx: Context | None = None) -> str:
        """Keep a value."""
        assert ctx is not None
        await ctx.state.set("value", value, ttl=ttl)
        return "ok"

    @server.tool
    async def recall(ctx: Context) -> dict[str, Any]:
        """Read it back."""
        return {"value": await ctx.state.get("value", "unset")}

    @server.tool
    async def forget(ctx: Context) -> bool:
        """Delete it."""
        gone: bool = await ctx.state.delete("value")
        return gone

    return server


def text(result: dict[str, Any]) -> str:
    out: str = result["content"][0]["text"]
    return out


async def visits(client: InMemoryClient, tool: str = "visit") -> str:
    return text(await client.call_tool(tool, {}))


async def test_handshake_state_belongs_to_the_session() -> None:
    server = counter_server()
    async with connect(server) as one, connect(server) as two:
        assert [await visits(one), await visits(one), await visits(two)] == ["1", "2", "1"]
        assert await visits(one, "visit_sync") == "3"  # a sync tool sees the same values


async def test_stateless_state_belongs_to_the_principal_across_connections() -> None:
    server = counter_server()
    async with connect(server, auth_info=ALICE, **STATELESS) as alice:
        assert [await visits(alice), await visits(alice)] == ["1", "2"]
    async with (
        connect(server, auth_info=ALICE, **STATELESS) as again,
        connect(server, auth_info=BOB, **STATELESS) as bob,
    ):
        assert await visits(again) == "3"
        assert await visits(bob) == "1"


async def test_stateless_state_without_a_principal_is_refused_with_a_reason() -> None:
    server = counter_server(debug=True)  # debug: the tool error shows the exception's text
    async with connect(server, **STATELESS) as anonymous:
        result = await anonymous.call_tool("visit", {})
    assert result["isError"] is True
    assert "has no verified token" in text(result)


async def test_a_key_function_names_the_scope() -> None:
    server = counter_server()
    configure_state(server, StateOptions(key=lambda ctx: ctx.meta.get("tenant")))
    async with connect(server, **STATELESS) as client:
        for expected in ("1", "2"):
            result = await client.request(
                "tools/call", {"name": "visit", "arguments": {}, "_meta": {"tenant": "acme"}}
            )
            assert text(result) == expected


async def test_values_round_trip_as_json_and_delete() -> None:
    server = counter_server()
    value = {"cart": [1, 2.5, "three", None, True], "nested": {"é": "✓"}}
    async with connect(server) as client:
        await client.call_tool("remember", {"value": value})
        assert (await client.call_tool("recall", {}))["structuredContent"] == {"value": value}
        assert text(await client.call_tool("forget", {})) == "true"
        assert text(await client.call_tool("forget", {})) == "false"
        assert (await client.call_tool("recall", {}))["structuredContent"] == {"value": "unset"}


async def test_a_value_over_the_size_cap_is_refused_and_not_stored() -> None:
    server = counter_server(debug=True)
    configure_state(server, StateOptions(max_bytes=100))
    async with connect(server) as client:
        result = await client.call_tool("remember", {"value": "x" * 200})
        assert result["isError"] is True
        assert "over the limit of 100" in text(result)
        assert (await client.call_tool("recall", {}))["structuredContent"] == {"value": "unset"}
        await client.call_tool("remember", {"value": "x" * 50})
        assert (await client.call_tool("recall", {}))["structuredContent"] == {"value": "x" * 50}


async def test_a_value_expires_after_its_ttl() -> None:
    server = counter_server()
    async with connect(server) as client:
        await client.call_tool("remember", {"value": 1, "ttl": 0.05})
        assert (await client.call_tool("recall", {}))["structuredContent"] == {"value": 1}
        await asyncio.sleep(0.2)
        assert (await client.call_tool("recall", {}))["structuredContent"] == {"value": "unset"}


async def test_state_lives_in_the_servers_store() -> None:
    state = MemoryStateStore()
    server = counter_server(store=MemoryStore(state=state))
    async with connect(server) as client:
        await visits(client)
    assert len(state) == 1


def test_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="max_bytes"):
        StateOptions(max_bytes=0)
    with pytest.raises(ConfigurationError, match="ttl"):
        StateOptions(ttl=-1)


async def test_two_nodes_on_one_redis_see_the_same_state_in_one_round_trip_each(
    tmp_path: Path,
) -> None:
    # A Redis of the test's own: its command statistics count this test's commands only.
    redis_server = RedisServer(tmp_path)
    redis_server.start()
    prefix = f"state-{uuid4().hex}:"
    stores = [RedisStore(redis_server.url, prefix=prefix) for _ in range(2)]
    admin = redis.asyncio.Redis.from_url(redis_server.url)
    try:
        node_a, node_b = (counter_server(store=store) for store in stores)
        async with connect(node_a, auth_info=ALICE, **STATELESS) as on_a:
            assert await visits(on_a) == "1"
        async with connect(node_b, auth_info=ALICE, **STATELESS) as on_b:
            # Node B reads the principal's visibility rules once and keeps them
            # (server/visibility.py): done first, so only ctx.state's commands count.
            await on_b.list_tools()
            await admin.config_resetstat()
            assert await visits(on_b) == "2"  # node B read what node A wrote
        stats = await admin.info("commandstats")
        assert stats["cmdstat_get"]["calls"] == 1
        assert stats["cmdstat_set"]["calls"] == 1
        async with connect(node_a, auth_info=BOB, **STATELESS) as bob:
            assert await visits(bob) == "1"
    finally:
        await admin.aclose()
        for store in stores:
            await store.aclose()
        redis_server.stop()
