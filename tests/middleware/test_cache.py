"""Response caching: listings and reads served from the cache, dropped on change or ttl."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.errors import ConfigurationError, RemoteError
from mcpkit.middleware import MemoryCache, ResponseCache
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.stores import MemoryStore
from mcpkit.stores.redis import RedisStore
from mcpkit.testing import connect
from tests.middleware.conftest import ALICE, BOB, STATELESS, demo


def counted(server: MCPServer) -> Counter[str]:
    """Count the requests that get past the cache to the handlers (innermost middleware)."""
    calls: Counter[str] = Counter()

    async def count(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method != "initialize":
            calls[ctx.method] += 1
        return await call_next(ctx)

    server.add_middleware(count)
    return calls


def cached_server(**options: Any) -> tuple[MCPServer, Counter[str]]:
    server = demo()
    ResponseCache(**options).install(server)
    return server, counted(server)


async def test_listings_are_served_from_the_cache_until_the_list_changes() -> None:
    server, calls = cached_server()
    async with connect(server) as client:
        first = await client.list_tools()
        assert await client.list_tools() == first
        assert await client.list_prompts() == await client.list_prompts()
        assert calls == {"tools/list": 1, "prompts/list": 1}

        @server.tool
        async def added() -> str:
            """New."""
            return "new"

        assert await client.list_tools() == first  # not announced yet: still the cached page
        await server.tools.notify_list_changed()
        names = [t["name"] for t in await client.list_tools()]
        assert "added" in names and calls["tools/list"] == 2
        await client.list_prompts()
        assert calls["prompts/list"] == 1  # another group's change drops nothing here


async def test_reads_are_cached_per_uri_and_dropped_by_resources_updated() -> None:
    server, _ = cached_server()
    async with connect(server) as client:
        first = await client.read_resource("demo://readme")
        assert await client.read_resource("demo://readme") == first
        assert server.reads == ["readme"]  # type: ignore[attr-defined]
        await server.resources.notify_updated("demo://readme")
        second = await client.read_resource("demo://readme")
        assert second["contents"][0]["text"] == "read 2"


async def test_entries_expire_after_the_ttl() -> None:
    server, calls = cached_server(ttl=0.05)
    async with connect(server) as client:
        await client.list_tools()
        await client.list_tools()
        await asyncio.sleep(0.15)
        await client.list_tools()
    assert calls["tools/list"] == 2


async def test_entries_are_kept_per_principal_and_per_revision() -> None:
    server, calls = cached_server()
    async with connect(server, auth_info=ALICE, **STATELESS) as alice:
        await alice.list_tools()
        await alice.list_tools()
    async with connect(server, auth_info=ALICE, **STATELESS) as again:
        await again.list_tools()
    assert calls["tools/list"] == 1
    async with connect(server, auth_info=BOB, **STATELESS) as bob:
        await bob.list_tools()  # never Alice's entry
    async with connect(server, auth_info=ALICE) as handshake:
        await handshake.list_tools()  # another revision, another shape
    assert calls["tools/list"] == 3

    shared, shared_calls = cached_server(per_principal=False)
    for who in (ALICE, BOB):
        async with connect(shared, auth_info=who, **STATELESS) as client:
            await client.list_tools()
    assert shared_calls["tools/list"] == 1


async def test_errors_and_other_methods_are_not_cached() -> None:
    server, calls = cached_server(methods={"resources/read"})
    async with connect(server) as client:
        for _ in range(2):
            with pytest.raises(RemoteError):
                await client.read_resource("demo://missing")
            await client.list_tools()
            await client.call_tool("echo", {"text": "x"})
    assert calls == {"resources/read": 2, "tools/list": 2, "tools/call": 2}


async def test_a_cache_given_as_middleware_watches_the_server_from_its_first_request() -> None:
    cache = ResponseCache()
    server = demo(middleware=[cache])
    calls = counted(server)
    async with connect(server) as client:
        await client.list_tools()
        await server.tools.notify_list_changed()
        await client.list_tools()
    assert calls["tools/list"] == 2


def test_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="tools/call"):
        ResponseCache(methods={"tools/call"})
    with pytest.raises(ConfigurationError, match="ttl"):
        ResponseCache(ttl=0)
    with pytest.raises(ConfigurationError, match="store"):
        ResponseCache(store=object())
    assert isinstance(ResponseCache(store=MemoryStore()).store, MemoryCache)


async def test_the_memory_cache_is_bounded() -> None:
    cache = MemoryCache(max_entries=2)
    for key in "abc":
        await cache.put("g", key, key.encode(), 60)
    assert [await cache.get("g", k) for k in "abc"] == [None, b"b", b"c"]
    await cache.drop("g")
    assert len(cache) == 0


async def test_nodes_on_one_redis_share_entries_and_drops(
    redis_stores: Callable[[], RedisStore],
) -> None:
    nodes: list[tuple[MCPServer, Counter[str]]] = []
    for _ in range(2):
        store = redis_stores()
        server = demo(store=store)
        ResponseCache(store=store).install(server)
        nodes.append((server, counted(server)))
    (a, a_calls), (b, b_calls) = nodes
    async with connect(a, auth_info=ALICE, **STATELESS) as on_a:
        listing = await on_a.list_tools()
        await on_a.read_resource("demo://readme")
    async with connect(b, auth_info=ALICE, **STATELESS) as on_b:
        assert await on_b.list_tools() == listing  # filled by node A
        assert (await on_b.read_resource("demo://readme"))["contents"][0]["text"] == "read 1"
    assert b_calls == {}
    await b.tools.notify_list_changed()  # announced on node B: dropped for node A too
    await b.resources.notify_updated("demo://readme")
    async with connect(a, auth_info=ALICE, **STATELESS) as on_a:
        await on_a.list_tools()
        await on_a.read_resource("demo://readme")
    assert a_calls == {"tools/list": 2, "resources/read": 2}


async def test_an_answer_computed_across_a_change_is_not_kept() -> None:
    server = demo()
    ResponseCache().install(server)
    calls = counted(server)

    async def change_while_listing(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "tools/list" and calls["tools/list"] == 1:
            await server.tools.notify_list_changed()  # lands while the first listing runs
        return await call_next(ctx)

    server.add_middleware(change_while_listing)
    async with connect(server) as client:
        await client.list_tools()
        await client.list_tools()
        await client.list_tools()
    assert calls["tools/list"] == 2  # the first answer may predate the change: not kept
