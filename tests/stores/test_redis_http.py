"""A single-process Streamable HTTP server on the Redis store, end to end over real sockets.

uvicorn on a free port, a real ``redis-server``, mcpkit's ``MCPServer(store=RedisStore(...))``:
sessions are recorded in Redis, a cut stream is replayed from Redis after a
reconnect with ``Last-Event-ID``, 2026-07-28 input rounds are single-use through
Redis, a plain ``tools/call`` costs what the docs say (counted by Redis itself),
and losing Redis gives clear errors, then full service when it returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import httpx
import pytest
from redis.asyncio import Redis

from mcpkit import Context, InputRoundOptions
from mcpkit.errors import STORE_UNAVAILABLE_TEXT
from mcpkit.stores.redis import RedisStore
from tests.redis_server import RedisServer
from tests.transports.conftest import TIMEOUT, HTTPClient, demo_server, next_event, sse_events
from tests.transports.test_streamable_http_stateless_era import CAPS, post, request
from tests.transports.test_streamable_http_streams import GetStream, call


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


async def start(serve_app: Any, url: str, **options: Any) -> tuple[Any, RedisStore, str]:
    store = RedisStore(url, prefix=f"h-{uuid4().hex}:", **options)
    server = demo_server(store=store)
    return server, store, await serve_app(server.http_app()) + "/mcp"


async def keys(raw: Redis, store: RedisStore) -> list[str]:
    """The store's keys of sessions (not the node's liveness key, nor the shared rsk)."""
    found = sorted(k.decode() for k in await raw.keys(store.prefix + "*"))
    node = (store.prefix + "node:", store.prefix + "rsk")
    return [k for k in found if not k.startswith(node)]


async def test_sessions_are_recorded_in_redis_and_deleted_with_their_streams(
    serve_app: Any, make_client: Any, redis_url: str, raw: Redis
) -> None:
    _, store, url = await start(serve_app, redis_url)
    c: HTTPClient = make_client(url)
    await c.initialize(capabilities={"roots": {"listChanged": True}})
    sid = str(c.session_id)
    record = await store.sessions.load(sid)
    assert record is not None
    assert record.client_info == {"name": "raw-test-client", "version": "0.0.1"}
    assert record.client_capabilities == {"roots": {"listChanged": True}}
    assert 0 < await raw.pttl(store.prefix + "session:" + sid)
    ex = await c.call_tool("add", {"a": 2, "b": 3})
    assert ex.result["content"][0]["text"] == "5"
    assert await keys(raw, store) == [
        store.prefix + "events:" + sid,
        store.prefix + "session:" + sid,
    ]
    assert (await c.request("logging/setLevel", {"level": "debug"})).status == 200
    async with asyncio.timeout(TIMEOUT):  # the record follows the level (written in background)
        while (loaded := await store.sessions.load(sid)) is None or loaded.log_level != "debug":
            await asyncio.sleep(0.01)
    assert (await c.delete()).status_code == 204
    async with asyncio.timeout(TIMEOUT):
        while await keys(raw, store):  # the record and every stream of the session go
            await asyncio.sleep(0.01)
    await store.aclose()


async def test_a_cut_stream_is_replayed_from_redis_exactly_once_in_order(
    serve_app: Any, make_client: Any, redis_url: str, raw: Redis
) -> None:
    server, store, url = await start(serve_app, redis_url)
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(3, "steps", {"count": 4, "delay": 0.1}, token="t")) as resp:
        events = sse_events(resp)
        priming = await next_event(events)
        assert priming.id and not priming.data
        first = await next_event(events)
        assert first.id and first.json["params"]["progress"] == 1
    # Cut after step 1; resume while the tool still runs: replay from Redis, then live.
    async with GetStream(c, last_event_id=first.id) as g:
        assert g.response.status_code == 200
        async with asyncio.timeout(TIMEOUT):
            rest = [e async for e in g.events]
    messages = [e.json for e in rest]
    assert [m["params"]["progress"] for m in messages[:-1]] == [2, 3, 4]
    assert messages[-1]["id"] == 3 and messages[-1]["result"]["content"][0]["text"] == "4 steps"
    assert len({e.id for e in rest}) == len(rest)
    assert server.finished == [4]
    # After the call finished, the priming id replays the whole stream from Redis.
    log = await raw.xrange(store.prefix + "events:" + str(c.session_id))
    # One stream: four progress notifications, the response; its id names this node.
    suffix = first.id.partition("#")[0].rpartition("/")[2]
    assert suffix.startswith(store.bus.node_id + ".1.")
    assert [f[b"s"] for _, f in log] == [suffix.encode()] * 5
    async with GetStream(c, last_event_id=priming.id) as g:
        async with asyncio.timeout(TIMEOUT):
            whole = [e async for e in g.events]
    assert [e.json for e in whole] == [first.json, *messages]
    assert [e.id for e in whole] == [first.id, *(e.id for e in rest)]
    await store.aclose()


async def test_a_plain_tools_call_costs_one_redis_command(
    serve_app: Any, make_client: Any, own_redis: RedisServer
) -> None:
    _, store, url = await start(serve_app, own_redis.url)
    c: HTTPClient = make_client(url)
    await c.initialize()
    for accept, expected in (
        # The session's first SSE answer creates its event log (with its ttl) ...
        ("application/json, text/event-stream", {"xadd": 1, "pexpire": 1}),
        # ... every later one appends to it.
        ("application/json, text/event-stream", {"xadd": 1}),
        ("application/json, text/event-stream", {"xadd": 1}),
        ("application/json", {}),  # a plain JSON answer records nothing
    ):
        own_redis.reset_stats()
        ex = await c.call_tool("add", {"a": 1, "b": 2}, accept=accept)
        assert ex.result["content"][0]["text"] == "3"
        await asyncio.sleep(0.05)  # any background write would have landed
        assert own_redis.command_counts() == expected
    await store.aclose()


async def test_2026_input_rounds_are_single_use_through_redis(
    serve_app: Any, http: httpx.AsyncClient, redis_url: str, raw: Redis
) -> None:
    _, store, url = await start(serve_app, redis_url)
    msg = request("tools/call", {"name": "ask", "arguments": {}})
    msg["params"]["_meta"][CAPS] = {"elicitation": {}}
    first = (await post(http, url, msg)).result
    assert first["resultType"] == "input_required"
    msg["id"] = 2
    msg["params"]["requestState"] = first["requestState"]
    msg["params"]["inputResponses"] = {
        "elicitation": {"action": "accept", "content": {"name": "Ada"}}
    }
    assert (await post(http, url, msg)).result["content"][0]["text"] == "hello Ada"
    claims = [k for k in await keys(raw, store) if k.startswith(store.prefix + "round:")]
    assert len(claims) == 1 and 0 < await raw.pttl(claims[0])
    again = await post(http, url, msg)  # the claim in Redis refuses the replay
    assert again.error["code"] == -32602 and "already used" in again.error["message"]
    await store.aclose()


async def test_losing_redis_gives_clear_errors_and_service_returns_with_it(
    serve_app: Any, make_client: Any, http: httpx.AsyncClient, own_redis: RedisServer
) -> None:
    _, store, url = await start(serve_app, own_redis.url, connect_timeout=0.5, timeout=0.5)
    c: HTTPClient = make_client(url)
    await c.initialize()
    msg = request("tools/call", {"name": "ask", "arguments": {}})
    msg["params"]["_meta"][CAPS] = {"elicitation": {}}
    first = (await post(http, url, msg)).result
    own_redis.stop()
    # A new session cannot be recorded: 503, the store's address not shown.
    d: HTTPClient = make_client(url)
    refused = await d.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
        }
    )
    assert refused.status == 503
    assert refused.messages[0]["error"]["message"] == STORE_UNAVAILABLE_TEXT
    assert "mcp-session-id" not in refused.headers
    # A live session's call is still answered, on a stream that cannot be resumed.
    ex = await c.call_tool("add", {"a": 1, "b": 1})
    assert ex.result["content"][0]["text"] == "2"
    assert ex.events[-1].id is None  # the response (the priming id costs no Redis command)
    # A 2026-07-28 round whose state cannot be checked for reuse: a clear JSON-RPC error.
    msg["id"] = 2
    msg["params"]["requestState"] = first["requestState"]
    msg["params"]["inputResponses"] = {"elicitation": {"action": "decline"}}
    failed = await post(http, url, msg)
    assert failed.error["message"] == STORE_UNAVAILABLE_TEXT
    # Redis returns (empty) on the same port: full service, same server, same store.
    own_redis.start()
    await d.initialize()
    assert d.session_id is not None and await store.sessions.load(d.session_id) is not None
    ex = await c.call_tool("add", {"a": 2, "b": 2})
    assert ex.result["content"][0]["text"] == "4" and all(e.id for e in ex.events)
    msg["id"] = 3
    done = await post(http, url, msg)  # the state was never claimed: it still counts once
    assert done.result["content"][0]["text"] == "no name (decline)"
    await store.aclose()


async def test_a_2026_round_may_land_on_another_server_sharing_the_redis_prefix(
    serve_app: Any, http: httpx.AsyncClient, redis_url: str
) -> None:
    # Two servers, each with its own RedisStore (they share nothing but Redis) and the same
    # request_state_keys: round two lands on B, the same state replayed on A is refused.
    prefix = f"w-{uuid4().hex}:"
    stores = [RedisStore(redis_url, prefix=prefix) for _ in range(2)]
    urls = []
    for store in stores:
        server = demo_server(
            store=store, input_rounds=InputRoundOptions(request_state_keys=[b"k" * 32])
        )
        urls.append(await serve_app(server.http_app()) + "/mcp")
    msg = request("tools/call", {"name": "ask", "arguments": {}})
    msg["params"]["_meta"][CAPS] = {"elicitation": {}}
    first = (await post(http, urls[0], msg)).result
    msg["id"] = 2
    msg["params"]["requestState"] = first["requestState"]
    msg["params"]["inputResponses"] = {
        "elicitation": {"action": "accept", "content": {"name": "Bo"}}
    }
    assert (await post(http, urls[1], msg)).result["content"][0]["text"] == "hello Bo"
    refused = await post(http, urls[0], msg)
    assert refused.error["code"] == -32602 and "already used" in refused.error["message"]
    for store in stores:
        await store.aclose()


async def test_events_sent_concurrently_keep_the_order_of_their_ids(
    serve_app: Any, make_client: Any, redis_url: str
) -> None:
    # A tool reporting from several tasks at once: with a network store each event waits
    # for Redis, yet the stream must carry them in the order of their ids, or a resume
    # from the last id received would skip one sent before it.
    store = RedisStore(redis_url, prefix=f"h-{uuid4().hex}:")
    server = demo_server(store=store)

    @server.tool
    async def fan_out(ctx: Context) -> str:
        """Report progress from 20 tasks at once."""
        await asyncio.gather(*(ctx.progress(i, 20) for i in range(1, 21)))
        return "done"

    url = await serve_app(server.http_app()) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize()
    for attempt in range(5):
        ex = await c.post(call(10 + attempt, "fan_out", token=f"t{attempt}"))
        ids = [e.id for e in ex.events if e.data]
        positions = [tuple(map(int, str(i).rpartition("#")[2].split("-"))) for i in ids]
        assert positions == sorted(positions) and len(set(positions)) == 21
    await store.aclose()
