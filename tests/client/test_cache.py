"""The client's result cache: ttlMs freshness, cacheScope per credential, invalidation."""

from __future__ import annotations

from typing import Any

from mcpkit.client import Client
from mcpkit.client.cache import ResultCache
from tests.client.http_servers import serve
from tests.client.stateless.test_on_the_wire import MODERN, Peer, ok

TOOLS = {"resultType": "complete", "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_fresh_until_ttl_then_gone() -> None:
    clock = Clock()
    cache = ResultCache(clock=clock)
    cache.put("s", "tools/list", None, None, {**TOOLS, "ttlMs": 1500, "cacheScope": "public"})
    assert cache.get("s", "tools/list", {"_meta": {"x": 1}}, "cred") == {
        **TOOLS,
        "ttlMs": 1500,
        "cacheScope": "public",
    }
    assert cache.get("s", "tools/list", {"cursor": "2"}, None) is None  # another page
    assert cache.get("other", "tools/list", None, None) is None  # another server
    clock.now += 1.5
    assert cache.get("s", "tools/list", None, None) is None
    assert len(cache) == 0


def test_private_results_stay_with_their_credential() -> None:
    cache = ResultCache()
    cache.put("s", "resources/read", {"uri": "u"}, "alice", {"contents": [], "ttlMs": 10**6})
    assert cache.get("s", "resources/read", {"uri": "u"}, "alice") is not None
    assert cache.get("s", "resources/read", {"uri": "u"}, "bob") is None
    assert cache.get("s", "resources/read", {"uri": "u"}, None) is None


def test_what_is_never_stored() -> None:
    cache = ResultCache()
    for result in (
        {**TOOLS, "cacheScope": "public"},  # no ttlMs: an older server, immediately stale
        {**TOOLS, "ttlMs": 0, "cacheScope": "public"},
        {**TOOLS, "ttlMs": -5, "cacheScope": "public"},
        {"resultType": "input_required", "requestState": "s", "ttlMs": 1000},
    ):
        cache.put("s", "tools/list", None, None, result)
    cache.put("s", "tools/call", {"name": "t"}, None, {"content": [], "ttlMs": 1000})
    assert len(cache) == 0


def test_notifications_invalidate_the_matching_entries() -> None:
    cache = ResultCache()
    fresh = {"ttlMs": 10**6, "cacheScope": "public"}
    cache.put("s", "tools/list", None, None, {**TOOLS, **fresh})
    cache.put("s", "prompts/list", None, None, {"prompts": [], **fresh})
    cache.put("s", "resources/read", {"uri": "a"}, None, {"contents": [], **fresh})
    cache.put("s", "resources/read", {"uri": "b"}, None, {"contents": [], **fresh})
    cache.list_changed("s", "tools")
    cache.resource_updated("s", "a")
    assert cache.get("s", "tools/list", None, None) is None
    assert cache.get("s", "prompts/list", None, None) is not None
    assert cache.get("s", "resources/read", {"uri": "a"}, None) is None
    assert cache.get("s", "resources/read", {"uri": "b"}, None) is not None


def test_the_oldest_entry_goes_first() -> None:
    cache = ResultCache(max_entries=2)
    for uri in ("a", "b", "c"):
        cache.put("s", "resources/read", {"uri": uri}, None, {"contents": [], "ttlMs": 10**6})
    assert cache.get("s", "resources/read", {"uri": "a"}, None) is None
    assert cache.get("s", "resources/read", {"uri": "c"}, None) is not None


def caching_peer(scope: str) -> Peer:
    def handle(msg: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        method = msg["method"]
        fresh = {"ttlMs": 60_000, "cacheScope": scope}
        if method == "server/discover":
            return ok(msg, {"supportedVersions": [MODERN], "capabilities": {}, **fresh})
        if method == "tools/list":
            return ok(msg, {"tools": TOOLS["tools"], **fresh})
        return ok(msg, {"contents": [{"uri": msg["params"]["uri"], "text": "x"}], **fresh})

    return Peer(handle)


async def test_a_client_reuses_fresh_lists_and_reads() -> None:
    peer = caching_peer("private")
    async with serve(peer) as url, Client(url=url, protocol_version=MODERN) as client:
        assert await client.list_tools() == await client.list_tools()
        await client.read_resource("file:///a")
        await client.read_resource("file:///a")
        await client.read_resource("file:///b")
    assert peer.methods() == ["server/discover", "tools/list", "resources/read", "resources/read"]


async def test_a_shared_cache_keeps_private_results_per_credential() -> None:
    for scope, expected in (("private", 2), ("public", 1)):
        peer = caching_peer(scope)
        shared = ResultCache()
        async with serve(peer) as url:
            for token in ("alice", "bob"):
                async with Client(
                    url=url,
                    protocol_version=MODERN,
                    headers={"Authorization": f"Bearer {token}"},
                    cache=shared,
                ) as client:
                    await client.list_tools()
        assert peer.methods().count("tools/list") == expected, scope


async def test_cache_false_always_asks() -> None:
    peer = caching_peer("public")
    async with serve(peer) as url, Client(url=url, protocol_version=MODERN, cache=False) as c:
        await c.list_tools()
        await c.list_tools()
    assert peer.methods().count("tools/list") == 2
