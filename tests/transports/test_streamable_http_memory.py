"""What a session's streams keep in memory is bounded in bytes, and freed when it ends.

Real uvicorn over real sockets: the event store forgets a session's streams
when the session is deleted or expires, and a GET stream that is not read
holds at most ``max_queued_bytes`` of messages for it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest

from mcpkit import Context, MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.stores import MemoryEventStore
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import TIMEOUT, HTTPClient, sse_events
from tests.transports.test_streamable_http_sessions import FakeClock, clock  # noqa: F401

BIG = 100_000  # bytes of one log message


def chatty_server() -> MCPServer:
    server = MCPServer(name="memory", version="1")

    @server.tool
    async def chatter(count: int, ctx: Context) -> str:
        """Log ``count`` large messages on the request's stream."""
        for i in range(count):
            await ctx.info(f"{i:06d}" + "x" * BIG)
        return "said"

    return server


async def test_deleting_the_session_frees_its_events(serve_app: Any, make_client: Any) -> None:
    store = MemoryEventStore()
    app = StreamableHTTPApp(chatty_server(), event_store=store)
    url = await serve_app(app) + "/mcp"
    keep: HTTPClient = make_client(url)
    await keep.initialize()
    assert (await keep.call_tool("chatter", {"count": 3})).result["content"][0]["text"] == "said"
    kept = store.nbytes
    c: HTTPClient = make_client(url)
    await c.initialize()
    for _ in range(5):
        assert (await c.call_tool("chatter", {"count": 20})).status == 200
    assert len(store) == 6
    assert store.nbytes > kept + 100 * BIG
    assert (await c.delete()).status_code == 204
    async with asyncio.timeout(TIMEOUT):
        while len(store) > 1:
            await asyncio.sleep(0.01)
    assert store.nbytes == kept  # the other session's streams stay resumable


async def test_an_expired_session_frees_its_events(
    serve_app: Any,
    make_client: Any,
    clock: FakeClock,  # noqa: F811
) -> None:
    store = MemoryEventStore()
    app = StreamableHTTPApp(chatty_server(), event_store=store, session_idle_timeout=60)
    url = await serve_app(app) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize()
    assert (await c.call_tool("chatter", {"count": 20})).status == 200
    assert len(store) == 1
    clock.now += 61
    assert (await c.request("ping")).status == 404  # expired on lookup
    async with asyncio.timeout(TIMEOUT):
        while len(store):
            await asyncio.sleep(0.01)
    assert store.nbytes == 0


async def test_an_unread_get_stream_holds_a_bounded_number_of_bytes(
    serve_app: Any, make_client: Any
) -> None:
    limit = 1024 * 1024
    server = chatty_server()
    app = StreamableHTTPApp(server, max_queued_bytes=limit, keepalive_interval=None)
    url = await serve_app(app) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize()
    sent = 400  # 40 MB: far more than the budget plus any socket buffers
    async with c.http.stream("GET", url, headers=c.headers("text/event-stream")) as resp:
        assert resp.status_code == 200
        assert c.session_id is not None
        session = app.session(c.session_id)
        assert session is not None
        async with asyncio.timeout(TIMEOUT):
            while not server.sessions():
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the GET stream is attached
        for _ in range(sent):  # not read meanwhile
            await asyncio.wait_for(
                session.notify("notifications/message", {"level": "info", "data": "x" * BIG}),
                5.0,
            )
        # Reading now: what was kept arrives, the rest was dropped, and the stream goes on.
        await session.notify("notifications/message", {"level": "info", "data": "last"})
        got = 0
        async with asyncio.timeout(TIMEOUT):
            async for event in sse_events(resp):
                if event.json["params"]["data"] == "last":
                    break
                got += 1
    assert 0 < got < 100, f"{got} of {sent} messages of {BIG} bytes were kept for the stream"


async def test_an_unread_get_stream_does_not_flood_the_log(
    serve_app: Any, make_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A client that never reads its GET stream decides how many messages are dropped;
    # the server says so, but not once per dropped message (6,000 notifications made
    # ~5,000 warning lines), so a hostile client cannot fill the server's log.
    server = chatty_server()
    app = StreamableHTTPApp(server, max_queued_bytes=64 * 1024, keepalive_interval=None)
    url = await serve_app(app) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize()
    sent = 3000
    caplog.set_level(logging.WARNING, logger="mcpkit.transports.http")
    async with c.http.stream("GET", url, headers=c.headers("text/event-stream")) as resp:
        assert resp.status_code == 200
        assert c.session_id is not None
        session = app.session(c.session_id)
        assert session is not None
        async with asyncio.timeout(TIMEOUT):
            while not server.sessions():
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the GET stream is attached
        for _ in range(sent):  # not read meanwhile
            await asyncio.wait_for(
                session.notify("notifications/message", {"level": "info", "data": "x" * 10_000}),
                5.0,
            )
    dropped = [r for r in caplog.records if "does not read" in r.getMessage()]
    assert dropped, "dropping messages is reported"
    assert len(dropped) <= 5, f"{len(dropped)} warnings for one stream that is not read"
    assert "dropped" in dropped[0].getMessage()


async def test_the_event_store_keeps_at_most_its_byte_budget() -> None:
    import tracemalloc

    budget = 8 * 1024 * 1024
    store = MemoryEventStore(max_bytes=budget)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        last = ""
        for i in range(500):  # 50 MB of events over 50 streams
            message = {"jsonrpc": "2.0", "method": "m", "params": {"data": f"{i}" + "x" * BIG}}
            last = await store.store_event(f"s/{i // 10}", message)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert store.nbytes <= budget
    assert held < 2 * budget, f"the store holds {held} bytes"
    # The newest stream is kept, its newest events replayable.
    got: list[Any] = []

    async def collect(event_id: str, message: dict[str, Any]) -> None:
        got.append(message)

    stream_id = last.rpartition("#")[0]
    assert await store.replay_events_after(f"{stream_id}#0", collect) == stream_id
    assert got and got[-1]["params"]["data"].startswith("499")


async def test_one_stream_over_the_budget_keeps_its_newest_events() -> None:
    store = MemoryEventStore(max_bytes=5 * BIG)
    for i in range(50):
        await store.store_event("only", {"data": f"{i:03d}" + "x" * BIG})
    got: list[Any] = []

    async def collect(event_id: str, message: dict[str, Any]) -> None:
        got.append(message["data"][:3])

    await store.replay_events_after("only#0", collect)
    assert store.nbytes <= 5 * BIG
    assert got and got[-1] == "049" and len(got) < 5


def test_byte_budgets_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryEventStore(max_bytes=0)
    with pytest.raises(ConfigurationError, match="max_queued_bytes"):
        StreamableHTTPApp(chatty_server(), max_queued_bytes=0)


_ = httpx  # the fixtures' client type
