"""An extension's own key in the client's subscriptions/listen filter: sent by the next
update, acknowledged as the server grants it, its notifications delivered; removed again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.server.extension import Extension
from mcpkit.server.stateless.listen import Listener as ServerListener

# notifications/things is the test extension's own: in no core schema.
pytestmark = pytest.mark.no_schema_check


def things_server(heard: list[Any]) -> MCPServer:
    async def grant(value: Any, listener: ServerListener) -> Any:
        heard.append(value)
        listener.send("notifications/things", {"granted": value[:1]})
        return value[:1]

    extension = Extension(identifier="com.example/things", listen_filters={"things": grant})
    return MCPServer(name="things", version="1", extensions=[extension])


async def test_an_extension_key_is_sent_acknowledged_and_its_notifications_arrive() -> None:
    asked: list[Any] = []
    got: list[dict[str, Any]] = []
    async with Client(server=things_server(asked), protocol_version="2026-07-28") as client:
        client.session.on_notification("notifications/things", got.append)
        listener = client.session.listener
        listener.set_filter("things", ["a", "b"])
        assert asked == []  # nothing is sent before update()
        await listener.update(5)
        assert asked == [["a", "b"]]
        assert listener.acknowledged is not None and listener.acknowledged["things"] == ["a"]
        async with asyncio.timeout(5):
            while not got:
                await asyncio.sleep(0.01)
        assert got[0]["granted"] == ["a"]
        listener.set_filter("things", None)
        assert "things" not in listener.wanted()
        await listener.update(5)
        assert listener.acknowledged is None or "things" not in listener.acknowledged
