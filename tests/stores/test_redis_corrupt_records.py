"""Unreadable data in a real Redis (issue 18 item 12): what a node makes of it.

Two nodes of one cluster (:mod:`tests.stores.test_redis_cluster`'s ``cluster``); a
session is made on node A, its record in Redis is then corrupted, and node B, which
never cached the session, is asked for it. A record B cannot read is a session that
is gone: 404 (the client initializes again), no traceback, one warning per record
however often it is asked for, and never 503 "store unavailable" (kept for Redis
itself failing: ``test_redis_http.py::test_losing_redis_gives_clear_errors...``). An
unreadable entry of a session's event log is passed over when it is replayed or
followed, with one warning per log, instead of failing the resumption.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import uuid4

import orjson
import pytest
from redis.asyncio import Redis

from mcpkit.errors import StoreUnavailable
from mcpkit.stores.redis import RedisStore
from tests.stores.test_redis_cluster import Node, on
from tests.transports.conftest import HTTPClient, demo_server

SEEN = 24  # the record's fixed-width last_seen prefix (mcpkit.stores.redis._SEEN_WIDTH)


@pytest.fixture
async def nodes(serve_app: Any, redis_url: str) -> tuple[Node, Node]:
    """Two nodes on one prefix, as test_redis_cluster.py's ``cluster()`` makes them."""
    prefix = f"c-{uuid4().hex[:8]}:"
    made = []
    for _ in range(2):
        store = RedisStore(redis_url, prefix=prefix, node_ttl=1.0)
        server = demo_server(store=store)
        made.append(Node(server, store, await serve_app(server.http_app()) + "/mcp"))
    return made[0], made[1]


def retyped(**fields: Any) -> Callable[[bytes], bytes]:
    """The record with some fields replaced (by values of the wrong type)."""

    def change(value: bytes) -> bytes:
        data = orjson.loads(value[SEEN:])
        data.update(fields)
        return value[:SEEN] + orjson.dumps(data)

    return change


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "invalid JSON": lambda value: value[:SEEN] + b"{this is not json",
    "truncated": lambda value: value[: len(value) // 2],
    "bad last_seen": lambda value: b"yesterday".ljust(SEEN) + value[SEEN:],
    "not an object": lambda value: value[:SEEN] + b"[1, 2, 3]",
    "protocol_version a number": retyped(protocol_version=20251125),
    "subscriptions a number": retyped(subscriptions=5),
    "client_capabilities a string": retyped(client_capabilities="all of them"),
    "session_id of another session": retyped(session_id="someone-else"),
}


async def check_gone(c: HTTPClient, caplog: pytest.LogCaptureFixture, sid: str) -> None:
    """Asked twice, B answers 404 each time with a JSON-RPC error body; one warning."""
    for _ in range(2):
        answer = await c.request("tools/list")
        assert answer.status == 404, answer
        assert answer.messages and "error" in answer.messages[0], answer
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [
        r.getMessage() for r in caplog.records
    ]
    warned = [r for r in caplog.records if r.levelno == logging.WARNING and sid in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in warned]


async def session_on_a(
    nodes: tuple[Node, Node], make_client: Any
) -> tuple[Node, Node, HTTPClient, str, Redis, Callable[[], Awaitable[None]]]:
    a, b = nodes
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    assert c.session_id is not None
    raw = Redis.from_url(a.store.url)
    return a, b, c, c.session_id, raw, raw.aclose


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
async def test_an_unreadable_session_record_is_a_session_gone(
    nodes: tuple[Node, Node], make_client: Any, caplog: pytest.LogCaptureFixture, corruption: str
) -> None:
    caplog.set_level(logging.WARNING)
    a, b, c, sid, raw, close = await session_on_a(nodes, make_client)
    try:
        key = f"{a.store.prefix}session:{sid}"
        value = await raw.get(key)
        assert value is not None
        await raw.set(key, CORRUPTIONS[corruption](value), keepttl=True)
        await check_gone(on(c, b), caplog, sid)
        # The client starts again, on either node.
        c.session_id = None
        await on(c, b).initialize()
        assert (await on(c, a).request("tools/list")).status == 200
    finally:
        await close()


async def test_a_session_key_of_the_wrong_type_is_a_session_gone_not_a_503(
    nodes: tuple[Node, Node], make_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    a, b, c, sid, raw, close = await session_on_a(nodes, make_client)
    try:
        key = f"{a.store.prefix}session:{sid}"
        await raw.delete(key)
        await raw.rpush(key, b"a list where a string belongs")
        await check_gone(on(c, b), caplog, sid)
    finally:
        await raw.delete(key)
        await close()


async def test_an_unreadable_event_is_passed_over_on_a_replay_and_a_follow(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    store = RedisStore(redis_url, prefix=f"ev-{uuid4().hex[:8]}:")
    raw = Redis.from_url(redis_url)
    try:
        events = store.events
        first = await events.store_event("s1/1", {"jsonrpc": "2.0", "method": "one"})
        log = f"{store.prefix}events:s1"
        await raw.xadd(log, {b"s": b"1", b"m": b"{broken"})
        await raw.xadd(log, {b"s": b"1", b"m": b'"a string, not a message"'})
        await events.store_event("s1/1", {"jsonrpc": "2.0", "id": 1, "result": {}})
        for _ in range(2):
            sent: list[Any] = []

            async def send(event_id: str, message: Any) -> None:
                sent.append(message)  # noqa: B023 (used at once)

            assert await events.replay_events_after(first, send) == "s1/1"
            assert sent == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
            found, _ = await events.read_after("s1/1", first, 0)
            assert [m for _, m in found] == sent
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warned) == 1 and log in warned[0].getMessage(), [r.getMessage() for r in warned]
    finally:
        await raw.delete(f"{store.prefix}events:s1")
        await raw.aclose()
        await store.aclose()


async def test_a_log_key_of_the_wrong_type_is_an_unknown_stream_not_a_503(
    nodes: tuple[Node, Node], make_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    a, _, c, sid, raw, close = await session_on_a(nodes, make_client)
    log = f"{a.store.prefix}events:{sid}"
    try:
        await raw.delete(log)
        await raw.rpush(log, b"a list where a stream belongs")
        headers = c.headers(accept="text/event-stream")
        headers["Last-Event-ID"] = f"{sid}/1#1-0"
        # An id naming no stream the store can read opens the standalone stream instead
        # (http_streams._replay_stream); a second GET may find it still open (409).
        for expected in ((200,), (200, 409)):
            async with c.http.stream("GET", a.url, headers=headers) as resumed:
                assert resumed.status_code in expected, await resumed.aread()
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warned) == 1 and log in warned[0].getMessage(), [r.getMessage() for r in warned]
    finally:
        await raw.delete(log)
        await close()


async def test_touch_and_holder_swap_on_keys_of_the_wrong_type(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # touch refreshes a cached session's record (the sweep): a record turned unreadable
    # ends that copy (False, as for a record gone); the GET holder's key is replaced.
    caplog.set_level(logging.WARNING)
    store = RedisStore(redis_url, prefix=f"ty-{uuid4().hex[:8]}:")
    raw = Redis.from_url(redis_url)
    keys = [f"{store.prefix}session:s1", f"{store.prefix}gh:s1"]
    try:
        for key in keys:
            await raw.rpush(key, b"x")
        for _ in range(2):
            assert await store.sessions.touch("s1", 10.0) is False
        assert await store.sessions.swap_holder("s1", "n1", 10.0) is None
        assert await store.sessions.swap_holder("s1", "n2", 10.0) == "n1"
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1 and "s1" in warned[0], warned
    finally:
        await raw.delete(*keys)
        await raw.aclose()
        await store.aclose()


@pytest.mark.parametrize("bad", ["wrong type", "wrong length"])
async def test_an_unreadable_request_state_key_is_named(redis_url: str, bad: str) -> None:
    # The cluster's requestState key cannot be "gone" (another node may sign with it):
    # the error names the key for the operator, not Redis as unavailable.
    store = RedisStore(redis_url, prefix=f"rk-{uuid4().hex[:8]}:")
    raw = Redis.from_url(redis_url)
    key = f"{store.prefix}rsk"
    try:
        if bad == "wrong type":
            await raw.rpush(key, b"x")
        else:
            await raw.set(key, b"short")
        with pytest.raises(StoreUnavailable, match=f"{key} does not hold a 32-byte key"):
            await store.request_state_key()
    finally:
        await raw.delete(key)
        await raw.aclose()
        await store.aclose()


async def test_an_event_log_key_of_the_wrong_type_warns_once_a_stream(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Events of a session whose log key Redis holds as another type still go out (no
    id: not resumable), with one warning for the stream, not one per event."""
    from mcpkit.transports.http_request_streams import record_event

    prefix = f"w-{uuid4().hex[:8]}:"
    store = RedisStore(redis_url, prefix=prefix)
    sid = uuid4().hex
    raw = Redis.from_url(redis_url)
    try:
        await raw.set(f"{prefix}events:{sid}", b"not a stream")
        caplog.set_level(logging.WARNING, logger="mcpkit.transports.http")
        for stream in (f"{sid}/1", f"{sid}/1", f"{sid}/1", f"{sid}/2"):
            message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
            assert await record_event(store.events, stream, message) is None
            data = orjson.dumps(message)
            assert (
                await record_event(store.events, stream, None, store.events.store_event_bytes, data)
                is None
            )
        warned = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
        assert len(warned) == 2, warned
        assert f"{sid}/1" in warned[0] and f"{sid}/2" in warned[1]
    finally:
        await raw.delete(f"{prefix}events:{sid}")
        await raw.aclose()
        await store.aclose()
