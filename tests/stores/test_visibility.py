"""Per-principal visibility rules in a store: memory and Redis alike, and two servers on one Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo
from mcpkit.errors import RemoteError
from mcpkit.stores.redis import RedisStore
from mcpkit.stores.visibility import MemoryVisibilityStore, VisibilityStore
from mcpkit.testing import connect
from tests.redis_server import RedisServer


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, redis_server: RedisServer) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield MemoryVisibilityStore()
        return
    redis = RedisStore(redis_server.url, prefix=f"vis-{uuid4().hex}:")
    try:
        yield redis.visibility
    finally:
        await redis.aclose()


async def test_a_store_keeps_each_principals_rules_until_reset(store: VisibilityStore) -> None:
    assert isinstance(store, VisibilityStore)
    assert await store.get("alice") is None
    await store.put("alice", {"s": 1, "k": [["tools", "x", 1, False]], "t": []})
    await store.put("bob", {"s": 2, "k": [], "t": []})
    assert await store.get("alice") == {"s": 1, "k": [["tools", "x", 1, False]], "t": []}
    await store.put("alice", None)
    assert await store.get("alice") is None
    assert await store.get("bob") == {"s": 2, "k": [], "t": []}


def test_the_memory_store_keeps_the_latest_principals() -> None:
    import asyncio

    store = MemoryVisibilityStore(max_entries=2)
    for who in ("a", "b", "c"):
        asyncio.run(store.put(who, {"s": 0}))
    assert asyncio.run(store.get("a")) is None and asyncio.run(store.get("c")) == {"s": 0}


def node(store: RedisStore) -> MCPServer:
    server = MCPServer("node", store=store)

    @server.tool(tags={"admin"})
    def purge() -> str:
        return "purged"

    @server.tool
    async def hide_admin(ctx: Context) -> str:
        await ctx.disable_components(tags={"admin"})
        return "hidden"

    @server.tool
    async def reset(ctx: Context) -> str:
        await ctx.reset_visibility()
        return "reset"

    return server


async def test_two_servers_on_one_redis_agree_on_a_principals_rules(
    redis_server: RedisServer,
) -> None:
    prefix = f"nodes-{uuid4().hex}:"
    store_a, store_b = (
        RedisStore(redis_server.url, prefix=prefix),
        RedisStore(redis_server.url, prefix=prefix),
    )
    a, b = node(store_a), node(store_b)
    # What the cluster's bus does (transports/cluster.py, kind "v"): node A's fan-out
    # reaches node B, which forgets what it remembers of the principal's rules.
    sent: list[dict[str, Any]] = []

    async def bus(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["k"] == "v":
            b.visibility.forget(message["p"])

    a.connect_fanout(bus)
    alice = AuthInfo(token="t", subject="alice", scopes=frozenset())
    bob = AuthInfo(token="u", subject="bob", scopes=frozenset())

    def at(server: MCPServer, who: AuthInfo) -> Any:
        return connect(server, protocol_version="2026-07-28", initialize=False, auth_info=who)

    async def names(server: MCPServer, who: AuthInfo) -> set[str]:
        async with at(server, who) as client:
            return {t["name"] for t in await client.list_tools()}

    try:
        assert "purge" in await names(b, alice)  # node B has read (and remembers) no rules
        async with at(a, alice) as client:
            await client.call_tool("hide_admin")
        assert {"k": "v", "p": alice.principal} in sent
        assert "purge" not in await names(b, alice)  # B reads alice's rules from Redis
        assert "purge" in await names(b, bob)
        async with at(b, alice) as client:
            with pytest.raises(RemoteError, match="Tool 'purge' is disabled"):
                await client.call_tool("purge")
        async with at(a, alice) as client:
            await client.call_tool("reset")
        assert "purge" in await names(b, alice)
    finally:
        await store_a.aclose()
        await store_b.aclose()
