"""A resource's scopes guard its update notifications: subscribing is refused as reading
is (403 insufficient_scope), ``subscriptions/listen`` leaves the URI out of what it
grants, and ``notifications/resources/updated`` reaches a session only when the
scopes granted to its subscriber cover the resource's (which may have gained scopes,
or a scoped template, since the subscription). A protected server over real sockets:
Streamable HTTP, legacy SSE, 2026-07-28, and two nodes sharing a real Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import httpx
import orjson
import pytest

from mcpkit import MCPServer
from mcpkit.auth import AuthInfo, parse_www_authenticate
from mcpkit.errors import RemoteError
from mcpkit.stores.redis import RedisStore
from mcpkit.testing import connect as connect_in_memory
from tests.auth.protected_support import bearer, client_with, protected
from tests.auth.test_protected_sse import RESOURCE as SSE_RESOURCE
from tests.auth.test_protected_sse import connect
from tests.redis_server import RedisServer
from tests.transports.conftest import TIMEOUT, next_event, run_app, sse_events
from tests.transports.test_streamable_http_stateless_era import headers_for, request
from tests.transports.test_streamable_http_streams import GetStream

UPDATED = "notifications/resources/updated"


def subscription_server(**options: Any) -> MCPServer:
    server = MCPServer(name="subscriptions", version="1", **options)

    @server.resource("open://notes")
    def notes() -> str:
        return "notes"

    @server.resource("secret://plan", scopes=["mcp:write"])
    def plan() -> str:
        return "the plan"

    @server.resource("reader://feed", scopes=["mcp:read"])
    def feed() -> str:
        return "feed"

    @server.resource("vault://{name}", scopes=["mcp:write"])
    def vault(name: str) -> str:
        return f"vault {name}"

    return server


def guard_later(server: MCPServer) -> None:
    """The scopes change after the subscription: a scoped template now matches later://."""

    @server.resource("later://{id}", scopes=["mcp:write"])
    def later(id: str) -> str:
        return id


async def notify_all(*servers: MCPServer) -> None:
    """Every guarded resource changes, then the open one: the open one must come first."""
    for uri in ("secret://plan", "vault://x", "later://doc"):
        await servers[0].resources.notify_updated(uri)
    await servers[-1].resources.notify_updated("open://notes")


def insufficient(status: int, headers: httpx.Headers) -> dict[str, str]:
    assert status == 403
    challenge = parse_www_authenticate(headers["www-authenticate"])
    assert challenge is not None and challenge["error"] == "insufficient_scope"
    return challenge


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        yield client


async def test_streamable_http_subscriptions_follow_the_resources_scopes(
    http: httpx.AsyncClient,
) -> None:
    server = subscription_server()
    async with run_app(server.http_app(auth=protected())) as base:
        url = base + "/mcp"
        reader = client_with(http, url, "alice-r")  # mcp:read only
        await reader.initialize()
        for uri in ("secret://plan", "vault://x"):
            read = await reader.request("resources/read", {"uri": uri})
            sub = await reader.request("resources/subscribe", {"uri": uri})
            # Refused as reading is: the same 403 and challenge, the same error body.
            assert (sub.status, sub.headers["www-authenticate"]) == (
                read.status,
                read.headers["www-authenticate"],
            )
            assert insufficient(sub.status, sub.headers)["scope"] == "mcp:read mcp:write"
            assert sub.response["error"]["code"] == read.response["error"]["code"]
        for uri in ("open://notes", "later://doc"):
            assert (await reader.request("resources/subscribe", {"uri": uri})).status == 200
        # A session that subscribed with a wider token, then went on with a narrower one
        # (a refreshed token with fewer scopes): its updates follow the narrower one.
        writer = client_with(http, url, "alice-rw")
        await writer.initialize()
        for uri in ("secret://plan", "vault://x", "open://notes"):
            assert (await writer.request("resources/subscribe", {"uri": uri})).status == 200
        narrowed = client_with(http, url, "alice-r")
        narrowed.session_id, narrowed.protocol_version = writer.session_id, writer.protocol_version
        assert (await narrowed.request("resources/unsubscribe", {"uri": "x://y"})).status == 200
        guard_later(server)
        async with GetStream(reader) as r_get, GetStream(narrowed) as w_get:
            await asyncio.sleep(0.2)
            await notify_all(server)
            for get in (r_get, w_get):
                event = await get.next()
                while not event.data:
                    event = await get.next()
                assert event.json["method"] == UPDATED
                assert event.json["params"] == {"uri": "open://notes"}


async def test_legacy_sse_subscriptions_follow_the_resources_scopes(
    http: httpx.AsyncClient,
) -> None:
    server = subscription_server()
    async with (
        run_app(server.sse_app(auth=protected(resource=SSE_RESOURCE))) as base,
        connect(http, base, "alice-r") as reader,
    ):
        await reader.initialize(revision="2025-11-25")
        for uri in ("secret://plan", "vault://x"):
            refused = await reader.post(
                {
                    "jsonrpc": "2.0",
                    "id": 90,
                    "method": "resources/subscribe",
                    "params": {"uri": uri},
                }
            )
            assert insufficient(refused.status_code, refused.headers)["scope"] == (
                "mcp:read mcp:write"
            )
        for uri in ("open://notes", "later://doc"):
            assert (await reader.request("resources/subscribe", {"uri": uri}))["result"] == {}
        guard_later(server)
        await notify_all(server)
        assert await reader.receive() == {
            "jsonrpc": "2.0",
            "method": UPDATED,
            "params": {"uri": "open://notes"},
        }


async def test_a_2026_listen_is_granted_only_the_uris_its_token_may_read(
    http: httpx.AsyncClient,
) -> None:
    server = subscription_server()
    async with run_app(server.http_app(auth=protected())) as base:
        url = base + "/mcp"
        uris = ["open://notes", "secret://plan", "vault://x", "later://doc"]
        listen = request("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}})
        async with http.stream(
            "POST",
            url,
            content=orjson.dumps(listen),
            headers={**headers_for(listen), **bearer("alice-r")},
        ) as resp:
            assert resp.status_code == 200
            events = sse_events(resp)
            ack = await next_event(events)
            while not ack.data:
                ack = await next_event(events)
            assert ack.json["method"] == "notifications/subscriptions/acknowledged"
            granted = ack.json["params"]["notifications"]["resourceSubscriptions"]
            assert granted == ["open://notes", "later://doc"]
            guard_later(server)
            await notify_all(server)
            event = await next_event(events)
            while not event.data:
                event = await next_event(events)
            assert event.json["method"] == UPDATED
            assert event.json["params"]["uri"] == "open://notes"


@pytest.fixture
async def two_nodes(redis_server: RedisServer) -> AsyncIterator[list[tuple[str, MCPServer]]]:
    prefix = f"s-{uuid4().hex[:8]}:"
    nodes: list[tuple[str, MCPServer]] = []
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(2):
            server = subscription_server(
                store=RedisStore(redis_server.url, prefix=prefix, node_ttl=1.0)
            )
            base = await stack.enter_async_context(run_app(server.http_app(auth=protected())))
            nodes.append((base + "/mcp", server))
        yield nodes


async def test_across_nodes_updates_follow_the_subscribers_scopes(
    two_nodes: list[tuple[str, MCPServer]], http: httpx.AsyncClient
) -> None:
    (url_a, server_a), (url_b, server_b) = two_nodes
    writer = client_with(http, url_a, "alice-rw")
    await writer.initialize()
    for uri in ("secret://plan", "vault://x", "open://notes", "later://doc", "reader://feed"):
        assert (await writer.request("resources/subscribe", {"uri": uri})).status == 200
    writer.url = url_b
    async with GetStream(writer) as get:  # node B rebuilds the session from its record
        await asyncio.sleep(0.2)

        async def next_update() -> dict[str, Any]:
            event = await get.next()
            while not event.data:
                event = await get.next()
            assert event.json["method"] == UPDATED
            params: dict[str, Any] = event.json["params"]
            return params

        # The record carried the subscriber's scopes: a covered update is delivered.
        await server_a.resources.notify_updated("secret://plan")
        assert await next_update() == {"uri": "secret://plan"}
        # Narrowed on node A; node B's copy learns it from the bus.
        narrowed = client_with(http, url_a, "alice-r")
        narrowed.session_id, narrowed.protocol_version = writer.session_id, writer.protocol_version
        assert (await narrowed.request("resources/unsubscribe", {"uri": "x://y"})).status == 200
        assert (await narrowed.request("resources/subscribe", {"uri": "vault://y"})).status == 403
        guard_later(server_a)
        guard_later(server_b)
        for uri in ("secret://plan", "vault://x", "later://doc", "reader://feed"):
            await server_a.resources.notify_updated(uri)  # raised on A, delivered by B
        # The narrower token still has mcp:read: the bus carried its scopes, not none.
        assert await next_update() == {"uri": "reader://feed"}


async def test_the_handler_refuses_as_reading_does_behind_any_transport() -> None:
    """Defence in depth: without the HTTP layer's 403 (in memory, auth info given as
    a transport would), subscribing is refused with the error reading gets."""
    server = subscription_server()
    reader = AuthInfo(token="t", subject="alice", scopes=frozenset({"mcp:read"}))
    async with connect_in_memory(server, auth_info=reader) as client:
        for uri in ("secret://plan", "vault://x"):
            with pytest.raises(RemoteError) as read:
                await client.read_resource(uri)
            with pytest.raises(RemoteError) as sub:
                await client.subscribe_resource(uri)
            assert (sub.value.code, sub.value.data) == (read.value.code, read.value.data)
            assert sub.value.data == {"requiredScopes": ["mcp:write"]}
        await client.subscribe_resource("reader://feed")
    # No auth info (stdio, unprotected HTTP): scopes are not enforced, as for reads.
    async with connect_in_memory(server) as client:
        await client.subscribe_resource("secret://plan")


async def test_legacy_sse_posts_forwarded_to_the_streams_node_carry_the_scopes(
    redis_server: RedisServer, http: httpx.AsyncClient
) -> None:
    prefix = f"l-{uuid4().hex[:8]}:"
    servers: list[MCPServer] = []
    bases: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(2):
            server = subscription_server(store=RedisStore(redis_server.url, prefix=prefix))
            app = server.sse_app(auth=protected(resource=SSE_RESOURCE))
            bases.append(await stack.enter_async_context(run_app(app)))
            servers.append(server)
        async with connect(http, bases[0], "alice-rw") as client:
            client.base = bases[1]  # every POST reaches the stream's node through the bus
            await client.initialize(revision="2025-11-25")
            for uri in ("secret://plan", "reader://feed"):
                assert (await client.request("resources/subscribe", {"uri": uri}))["result"] == {}
            client.token = "alice-r"  # narrowed: mcp:read only
            assert (await client.request("resources/unsubscribe", {"uri": "x://y"}))["result"] == {}
            for uri in ("secret://plan", "reader://feed"):
                await servers[0].resources.notify_updated(uri)
            assert await client.receive() == {
                "jsonrpc": "2.0",
                "method": UPDATED,
                "params": {"uri": "reader://feed"},
            }
