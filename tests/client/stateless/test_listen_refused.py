"""A 2026-07-28 ``subscriptions/listen`` the server refuses: the client does not wait out
its timeout.

Found through ``mcpkit proxy --url`` of an upstream that is down: the proxy answered the
listen with an error (it could not follow the upstream's list changes), and a client
opening a session waited the whole request timeout (60 s) for an acknowledgment that
could not come. Now an error answer ends the wait: the session opens with a warning
naming the error, ``subscribe_resource`` raises it, and the listen is tried again in the
background. And the proxy acknowledges a listen while its upstream is down, announcing
every list as changed once the upstream is back.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.errors import INTERNAL_ERROR, MCPError, RemoteError
from mcpkit.server.middleware import CallNext, MiddlewareContext, for_methods
from tests.client.http_servers import serve

MODERN = "2026-07-28"


def refusing() -> MCPServer:
    """A server that answers every subscriptions/listen with an error."""
    server = MCPServer(name="refusing")

    @server.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    @server.resource("note://a")
    def note() -> str:
        """A note to subscribe to."""
        return "a"

    @for_methods("subscriptions/listen")
    async def refuse(ctx: MiddlewareContext, call_next: CallNext) -> Any:
        raise MCPError("no listening here today", code=INTERNAL_ERROR)

    server.add_middleware(refuse)
    return server


async def test_a_session_opens_at_once_when_the_listen_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="mcpkit.client"):
        async with Client(server=refusing(), protocol_version=MODERN, timeout=30) as client:
            opened = time.monotonic() - start
            assert [t["name"] for t in await client.list_tools()] == ["ping"]
    assert opened < 10, opened  # was the whole timeout (30 s here, 60 by default)
    warned = [r.getMessage() for r in caplog.records if "subscriptions/listen" in r.getMessage()]
    assert warned and "no listening here today" in warned[0], warned
    assert "list changes may arrive late" in warned[0]


async def test_subscribing_where_the_listen_is_refused_raises_the_error() -> None:
    async with Client(server=refusing(), protocol_version=MODERN, timeout=30) as client:
        start = time.monotonic()
        with pytest.raises(RemoteError, match="no listening here today"):
            await client.subscribe_resource("note://a")
        assert time.monotonic() - start < 10


async def test_a_proxy_of_a_down_upstream_acknowledges_and_announces_its_return() -> None:
    # The proxy acknowledges the listen although its upstream is down, and once the
    # upstream is up the lists are announced as changed (what it serves is new).
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    upstream = MCPServer(name="up")

    @upstream.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    server = MCPServer.proxy(url, listen_check=0.2)
    changed: list[str] = []
    async with Client(
        server=server, protocol_version=MODERN, timeout=30, on_list_changed=changed.append
    ) as client:
        assert client.session.listener.acknowledged is not None
        with pytest.raises(RemoteError, match="is unavailable"):
            await client.list_tools()
        async with serve(upstream.http_app(), sock):
            for _ in range(200):
                if "tools" in changed:
                    break
                await asyncio.sleep(0.05)
            assert "tools" in changed, changed
            assert [t["name"] for t in await client.list_tools()] == ["ping"]
