"""Streamable HTTP keeps each session's record in its session store.

Real uvicorn over real sockets, the in-memory session store read back through
its protocol: the record is written at ``initialize``, follows the log level,
is deleted when the session ends or expires, and stays when the server stops
(with a shared store, other workers serve on). Two apps sharing a store never
hand out the same session id.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit.stores import MemorySessionStore, MemoryStore, SessionRecord, SessionStore
from mcpkit.transports.asgi import AUTH_SCOPE_KEY, Receive, Scope, Send
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import TIMEOUT, HTTPClient, demo_server
from tests.transports.test_streamable_http_sessions import FakeClock, clock  # noqa: F401


async def record_when(store: SessionStore, sid: str, check: Any) -> SessionRecord | None:
    """The record once ``check(record)`` holds (store writes may run in the background)."""
    async with asyncio.timeout(TIMEOUT):
        while True:
            record = await store.load(sid)
            if check(record):
                return record
            await asyncio.sleep(0.01)


async def test_initialize_records_the_session_and_delete_removes_it(
    serve_app: Any, make_client: Any
) -> None:
    store = MemorySessionStore()
    url = await serve_app(StreamableHTTPApp(demo_server(), session_store=store)) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize(capabilities={"roots": {"listChanged": True}})
    assert c.session_id is not None
    record = await store.load(c.session_id)
    assert record is not None
    assert record.protocol_version == "2025-11-25"
    assert record.client_info == {"name": "raw-test-client", "version": "0.0.1"}
    assert record.client_capabilities == {"roots": {"listChanged": True}}
    assert record.log_level == "info"
    assert record.principal is None
    assert (await c.request("logging/setLevel", {"level": "debug"})).status == 200
    await record_when(store, c.session_id, lambda r: r is not None and r.log_level == "debug")
    assert (await c.delete()).status_code == 204
    await record_when(store, c.session_id, lambda r: r is None)


async def test_the_record_names_the_authenticated_principal(
    serve_app: Any, make_client: Any
) -> None:
    store = MemorySessionStore()
    app = StreamableHTTPApp(demo_server(), session_store=store)

    async def authenticated(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, AUTH_SCOPE_KEY: {"sub": "alice", "scopes": ["read"]}}
        await app(scope, receive, send)

    c: HTTPClient = make_client(await serve_app(authenticated) + "/mcp")
    await c.initialize()
    assert c.session_id is not None
    record = await store.load(c.session_id)
    assert record is not None and record.principal is not None and "alice" in record.principal


async def test_an_expired_session_loses_its_record(
    serve_app: Any,
    make_client: Any,
    clock: FakeClock,  # noqa: F811
) -> None:
    store = MemorySessionStore()
    app = StreamableHTTPApp(demo_server(), session_store=store, session_idle_timeout=60)
    c: HTTPClient = make_client(await serve_app(app) + "/mcp")
    await c.initialize()
    assert c.session_id is not None and await store.load(c.session_id) is not None
    clock.now += 61
    assert (await c.request("ping")).status == 404
    await record_when(store, c.session_id, lambda r: r is None)


async def test_records_stay_when_the_server_stops(serve_app: Any, make_client: Any) -> None:
    shared = MemoryStore()
    app = StreamableHTTPApp(demo_server(store=shared))
    assert app.session_store is shared.sessions
    c: HTTPClient = make_client(await serve_app(app) + "/mcp")
    await c.initialize()
    assert c.session_id is not None
    await app.aclose()  # this worker stops; another one sharing the store serves on
    assert len(app) == 0
    await asyncio.sleep(0.05)
    assert await shared.sessions.load(c.session_id) is not None


async def test_two_apps_sharing_a_store_never_reuse_a_session_id(
    serve_app: Any, make_client: Any
) -> None:
    store = MemorySessionStore()
    urls = [
        await serve_app(
            StreamableHTTPApp(
                demo_server(), session_store=store, session_id_generator=lambda: "same-id"
            )
        )
        + "/mcp"
        for _ in range(2)
    ]
    first: HTTPClient = make_client(urls[0])
    await first.initialize()
    second: HTTPClient = make_client(urls[1])
    refused = await second.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
        }
    )
    assert refused.status == 500
    assert "mcp-session-id" not in refused.headers
    record = await store.load("same-id")
    assert record is not None and record.client_info == {
        "name": "raw-test-client",
        "version": "0.0.1",
    }
