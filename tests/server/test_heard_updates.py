"""A resource the visibility rules hide is subscribed to as an unknown URI is, and its
updates never reach the caller: ``enabled=False``, an excluded tag, a hidden template,
``server.disable`` and a session's or a 2026-07-28 principal's rules changed while the
subscription is open. Both eras, over real sockets (uvicorn; the mcpkit ``Client``, or
raw HTTP with bearer tokens for the principal's rules).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from mcpkit import Client, Context, MCPServer
from tests.auth.protected_support import RESOURCE, bearer, protected, verify_for
from tests.client.http_servers import serve
from tests.compose.test_listening import HANDSHAKE, MODERN, settle
from tests.transports.conftest import TIMEOUT, Event, next_event, run_app, sse_events
from tests.transports.test_streamable_http_stateless_era import headers_for, request

OPEN = "notes://open"
OFF = "notes://off"
SECRET = "notes://secret"
LATER = "notes://later"
PRIVATE = "files://private/plan"


def notes_server() -> MCPServer:
    server = MCPServer(name="notes", version="1.0.0", exclude_tags={"secret"})

    @server.resource(OPEN)
    def open_() -> str:
        return "open"

    @server.resource(OFF, enabled=False)
    def off() -> str:
        return "off"

    @server.resource(SECRET, tags={"secret"})
    def secret() -> str:
        return "secret"

    @server.resource(LATER)
    def later() -> str:
        return "later"

    @server.resource("files://private/{name}", tags={"secret"})
    def private(name: str) -> str:
        return name

    @server.tool
    async def hide_later(ctx: Context) -> str:
        """Hide notes://later from this caller alone."""
        await ctx.disable_components(LATER)
        return "hidden"

    return server


async def changed(server: MCPServer, *uris: str) -> None:
    for uri in uris:
        await server.resources.notify_updated(uri)


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_updates_of_hidden_resources_never_reach_a_subscriber(era: str) -> None:
    server = notes_server()
    updated: list[str] = []
    async with serve(server.http_app()) as url:
        async with Client(url=url, protocol_version=era, on_resource_updated=updated.append) as c:
            # Accepted as a URI nobody serves is: no error, nothing heard.
            for uri in (OPEN, OFF, SECRET, PRIVATE, LATER, "notes://nobody"):
                await c.subscribe_resource(uri)
            await changed(server, OFF, SECRET, PRIVATE, LATER, OPEN)
            await settle(lambda: OPEN in updated)
            assert updated == [LATER, OPEN]
            # Hidden from everyone while subscribed: heard no more.
            server.disable(LATER)
            updated.clear()
            await changed(server, LATER, OPEN)
            await settle(lambda: OPEN in updated)
            assert updated == [OPEN]
            # Shown again: heard again.
            server.enable(LATER)
            updated.clear()
            await changed(server, LATER, OPEN)
            await settle(lambda: OPEN in updated)
            assert updated == [LATER, OPEN]


async def test_a_session_that_hides_a_resource_mid_subscription_hears_it_no_more() -> None:
    server = notes_server()
    mine: list[str] = []
    theirs: list[str] = []
    async with serve(server.http_app()) as url:
        async with (
            Client(url=url, protocol_version=HANDSHAKE, on_resource_updated=mine.append) as me,
            Client(url=url, protocol_version=HANDSHAKE, on_resource_updated=theirs.append) as o,
        ):
            for client in (me, o):
                await client.subscribe_resource(LATER)
                await client.subscribe_resource(OPEN)
            await me.call_tool("hide_later", {})
            await changed(server, LATER, OPEN)
            await settle(lambda: OPEN in mine and OPEN in theirs)
            assert mine == [OPEN]  # this session's own rule
            assert theirs == [LATER, OPEN]  # the other session's rules are unchanged


async def next_message(events: AsyncIterator[Event]) -> dict[str, Any]:
    event = await next_event(events)
    while not event.data:  # keep-alive comments
        event = await next_event(events)
    message: dict[str, Any] = event.json
    return message


async def test_a_2026_principal_that_hides_a_resource_mid_listen_hears_it_no_more() -> None:
    server = notes_server()
    verify = verify_for(RESOURCE)
    alice = await verify("alice-r", RESOURCE)
    assert alice is not None
    listen = request(
        "subscriptions/listen", {"notifications": {"resourceSubscriptions": [LATER, OPEN]}}
    )
    async with (
        run_app(server.http_app(auth=protected())) as base,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
        contextlib.AsyncExitStack() as streams,
    ):
        heard: dict[str, AsyncIterator[Event]] = {}
        for token in ("alice-r", "bob-rw"):
            resp = await streams.enter_async_context(
                http.stream(
                    "POST",
                    base + "/mcp",
                    content=orjson.dumps(listen),
                    headers={**headers_for(listen), **bearer(token)},
                )
            )
            assert resp.status_code == 200
            heard[token] = sse_events(resp)
            ack = await next_message(heard[token])
            assert ack["method"] == "notifications/subscriptions/acknowledged"
        # alice's own rules (her principal's: no session outlives a 2026-07-28 request).
        await server.disable_for(alice.principal, LATER)
        await changed(server, LATER, OPEN)
        assert (await next_message(heard["alice-r"]))["params"]["uri"] == OPEN
        bob = [(await next_message(heard["bob-rw"]))["params"]["uri"] for _ in range(2)]
        assert bob == [LATER, OPEN]
