"""A 2026-07-28 ``subscriptions/listen`` the server refuses: the client does not wait out
its timeout.

Found through ``mcpkit proxy --url`` of an upstream that is down: the proxy answers the
listen with an error (it cannot follow the upstream's list changes), and a client
opening a session waited the whole request timeout (60 s) for an acknowledgment that
could not come. Now the first failure ends the wait: the session opens with a warning
naming the error, ``subscribe_resource`` raises it, and the listen is tried again in the
background.
"""

from __future__ import annotations

import logging
import socket
import time

import pytest

from mcpkit import Client, MCPServer
from mcpkit.errors import RemoteError

MODERN = "2026-07-28"


def refused_url() -> str:
    """A URL nothing listens on (a port just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


async def test_a_session_opens_at_once_when_the_listen_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MCPServer.proxy(refused_url())
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="mcpkit.client"):
        async with Client(server=server, protocol_version=MODERN, timeout=30) as client:
            opened = time.monotonic() - start
            with pytest.raises(RemoteError, match="is unavailable"):
                await client.list_tools()
    assert opened < 10, opened  # was the whole timeout (30 s here, 60 by default)
    warned = [r.getMessage() for r in caplog.records if "subscriptions/listen" in r.getMessage()]
    assert warned and "is unavailable" in warned[0], warned
    assert "list changes may arrive late" in warned[0]


async def test_subscribing_where_the_listen_is_refused_raises_the_error() -> None:
    server = MCPServer.proxy(refused_url())
    async with Client(server=server, protocol_version=MODERN, timeout=30) as client:
        start = time.monotonic()
        with pytest.raises(RemoteError, match="is unavailable"):
            await client.subscribe_resource("note://a")
        assert time.monotonic() - start < 10
