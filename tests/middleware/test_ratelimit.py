"""Rate limits: token buckets per key, -31429 with retryAfter, HTTP 429, shared on Redis."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.errors import ConfigurationError, RemoteError
from mcpkit.middleware import (
    ClientAddress,
    MemoryBuckets,
    RateLimited,
    by_client_address,
    by_principal,
    by_session,
    by_tool,
    combined,
    rate_limit,
)
from mcpkit.stores import MemoryStore
from mcpkit.stores.redis import RedisStore
from mcpkit.testing import InMemoryClient, connect
from tests.middleware.conftest import ALICE, BOB, STATELESS, demo
from tests.transports.test_streamable_http_stateless_era import headers_for, request

SLOW = 0.001  # tokens a second: nothing refills within a test
Serve = Callable[[Any], Awaitable[str]]


async def refused(client: InMemoryClient, tool: str = "echo") -> RemoteError:
    with pytest.raises(RemoteError) as caught:
        await client.call_tool(tool, {"text": "x"} if tool == "echo" else {})
    return caught.value


async def test_buckets_refill_at_the_rate_up_to_the_burst() -> None:
    buckets = MemoryBuckets()
    now = [100.0]
    buckets.clock = lambda: now[0]
    take = {"rate": 2.0, "burst": 3.0, "cost": 1.0}
    assert [await buckets.take("k", **take) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert await buckets.take("k", **take) == pytest.approx(0.5)  # refused: nothing taken
    now[0] += 0.25
    assert await buckets.take("k", **take) == pytest.approx(0.25)
    now[0] += 0.25
    assert await buckets.take("k", **take) == 0.0
    now[0] += 60  # idle: full again, never above the burst
    assert [await buckets.take("k", **take) for _ in range(4)][-1] > 0
    assert await buckets.take("other", **take) == 0.0


async def test_a_request_over_the_limit_gets_minus_31429_with_retry_after() -> None:
    server = demo(middleware=[rate_limit(rate=SLOW, burst=2, key=by_session)])
    async with connect(server) as one, connect(server) as two:
        await one.call_tool("echo", {"text": "a"})
        await one.call_tool("echo", {"text": "b"})
        error = await refused(one)
        assert error.code == -31429
        assert error.data["retryAfter"] > 100
        assert "rate limit" in error.message
        await two.call_tool("echo", {"text": "c"})  # another session, another bucket
        await one.ping()  # ping and initialize are not counted


async def test_methods_and_keys_choose_what_is_counted() -> None:
    server = demo(middleware=[rate_limit(rate=SLOW, burst=1, key=by_tool)])
    async with connect(server) as client:
        await client.call_tool("echo", {"text": "a"})
        await client.call_tool("other", {})
        for _ in range(3):
            await client.list_tools()  # by_tool has no key for tools/list: never counted
        assert (await refused(client, "echo")).code == -31429
        assert (await refused(client, "other")).code == -31429
    only_lists = rate_limit(rate=SLOW, burst=1, key=by_session, methods={"tools/list"})
    async with connect(demo(middleware=[only_lists])) as client:
        await client.list_tools()
        await client.call_tool("echo", {"text": "a"})
        await client.call_tool("echo", {"text": "b"})
        with pytest.raises(RemoteError):
            await client.list_tools()


async def test_per_principal_limits_follow_the_token_on_the_stateless_era() -> None:
    limit = rate_limit(rate=SLOW, burst=1, key=combined(by_principal, by_tool))
    server = demo(middleware=[limit])
    async with connect(server, auth_info=ALICE, **STATELESS) as alice:
        await alice.call_tool("echo", {"text": "a"})
    async with (
        connect(server, auth_info=ALICE, **STATELESS) as again,
        connect(server, auth_info=BOB, **STATELESS) as bob,
        connect(server, **STATELESS) as anonymous,
    ):
        assert (await refused(again)).code == -31429  # a new request, the same principal
        await again.call_tool("other", {})
        await bob.call_tool("echo", {"text": "b"})
        for _ in range(3):  # no principal: no key, never limited
            await anonymous.call_tool("echo", {"text": "c"})


def test_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="rate"):
        rate_limit(rate=0, burst=1)
    with pytest.raises(ConfigurationError, match="cost"):
        rate_limit(rate=1, burst=1, cost=2)
    with pytest.raises(ConfigurationError, match="store"):
        rate_limit(rate=1, burst=1, store=object())
    rate_limit(rate=1, burst=1, store=MemoryStore())  # the server's memory store: in memory


def test_the_error_rounds_the_wait_up_to_milliseconds() -> None:
    error = RateLimited(0.0101, limit="5/s")
    assert error.data == {"retryAfter": 0.011, "limit": "5/s"}
    assert error.to_error()["code"] == -31429


async def test_http_answers_429_with_retry_after_on_the_stateless_era(
    serve_app: Serve, http: httpx.AsyncClient
) -> None:
    server = demo(middleware=[rate_limit(rate=0.5, burst=1, key=by_tool)])
    url = await serve_app(server.http_app()) + "/mcp"
    msg = request("tools/call", {"name": "echo", "arguments": {"text": "a"}})
    first = await http.post(url, content=orjson.dumps(msg), headers=headers_for(msg))
    assert first.status_code == 200
    second = await http.post(url, content=orjson.dumps(msg), headers=headers_for(msg))
    assert second.status_code == 429
    assert second.headers["retry-after"] == "2"  # 2 s for one token at 0.5/s, rounded up
    error = second.json()["error"]
    assert error["code"] == -31429
    assert 1.9 < error["data"]["retryAfter"] <= 2


async def test_http_answers_429_on_the_handshake_era_in_json_mode(
    serve_app: Serve, http: httpx.AsyncClient
) -> None:
    server = demo(middleware=[rate_limit(rate=SLOW, burst=1, key=by_tool)])
    url = await serve_app(server.http_app(stateless=True, json_response=True)) + "/mcp"
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "echo", "arguments": {"text": "a"}}
    assert (await http.post(url, json=call, headers=headers)).status_code == 200
    answer = await http.post(url, json=call, headers=headers)
    assert answer.status_code == 429
    assert int(answer.headers["retry-after"]) > 100
    assert answer.json()["error"]["code"] == -31429


async def test_client_address_keys_by_the_peer_or_a_trusted_proxys_forwarded_for(
    serve_app: Serve, http: httpx.AsyncClient
) -> None:
    server = demo(middleware=[rate_limit(rate=SLOW, burst=1, key=by_client_address)])
    app = ClientAddress(server.http_app(), trusted_proxies=frozenset({"127.0.0.1"}))
    url = await serve_app(app) + "/mcp"
    msg = request("tools/call", {"name": "echo", "arguments": {"text": "a"}})

    async def status(forwarded: str) -> int:
        headers = headers_for(msg, **{"x-forwarded-for": forwarded})
        return (await http.post(url, content=orjson.dumps(msg), headers=headers)).status_code

    # The rightmost address the trusted proxy did not add is the client's; a forged
    # entry to its left does not give a new bucket.
    assert await status("10.0.0.1") == 200
    assert await status("10.0.0.2") == 200
    assert await status("6.6.6.6, 10.0.0.1") == 429
    assert await status("10.0.0.2, 127.0.0.1") == 429
    async with connect(server) as in_memory:  # no HTTP peer: no key, not limited
        for _ in range(3):
            await in_memory.call_tool("echo", {"text": "x"})


async def test_two_nodes_on_one_redis_share_the_budget(
    redis_stores: Callable[[], RedisStore],
) -> None:
    nodes = []
    for _ in range(2):
        store = redis_stores()
        nodes.append(demo(store=store, middleware=[rate_limit(rate=SLOW, burst=3, store=store)]))
    clients = [connect(node, auth_info=ALICE, **STATELESS) for node in nodes]
    async with clients[0] as a, clients[1] as b:
        await a.call_tool("echo", {"text": "1"})
        await b.call_tool("echo", {"text": "2"})
        await a.call_tool("echo", {"text": "3"})
        error = await refused(b)
        assert error.code == -31429 and error.data["retryAfter"] > 100
    async with connect(nodes[1], auth_info=BOB, **STATELESS) as bob:
        await bob.call_tool("echo", {"text": "4"})
