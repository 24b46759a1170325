"""In 2026-07-28 a change made right after connecting reaches the client.

The handshake era needs no request for notifications; the stateless era needs an
acknowledged ``subscriptions/listen``, so connecting waits for the acknowledgment.
"""

from __future__ import annotations

import asyncio

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_a_list_change_right_after_connecting_is_delivered(version: str) -> None:
    server = MCPServer(name="changes", version="1")

    @server.tool
    async def echo(text: str) -> str:
        return text

    kinds: list[str] = []
    got = asyncio.Event()

    def changed(kind: str) -> None:
        kinds.append(kind)
        got.set()

    async with Client(server=server, protocol_version=version, on_list_changed=changed) as client:
        assert client.protocol_version == version
        await server.tools.notify_list_changed()  # no wait between connecting and the change
        async with asyncio.timeout(5):
            await got.wait()
    assert kinds == ["tools"]
