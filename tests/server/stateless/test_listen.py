"""subscriptions/listen with an extension's own filter key: granted, acknowledged, its
notifications tagged on the stream, refused as a whole, and told when the stream ends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.errors import MISSING_CAPABILITY, MCPError, RegistrationError
from mcpkit.server.extension import Extension
from mcpkit.server.stateless.listen import Listener

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
SUB = "io.modelcontextprotocol/subscriptionId"


def listen_request(notifications: dict[str, Any], rid: int = 7) -> dict[str, Any]:
    params = {"notifications": notifications, "_meta": {PV: V, CAPS: {"extensions": {}}}}
    return {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params}


class Things:
    """An extension whose ``things`` filter key grants the even numbers it is asked for."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []
        self.closed = asyncio.Event()

    async def grant(self, value: Any, listener: Listener) -> Any:
        if value == "refuse":
            raise MCPError("no things for you", code=MISSING_CAPABILITY)
        self.listeners.append(listener)
        listener.on_close(self.closed.set)
        listener.send("notifications/things", {"first": True})  # queued behind the ack
        return [n for n in value if n % 2 == 0]

    def extension(self) -> Extension:
        return Extension(identifier="com.example/things", listen_filters={"things": self.grant})


async def wait_for(sent: list[dict[str, Any]], count: int) -> None:
    async with asyncio.timeout(5):
        while len(sent) < count:
            await asyncio.sleep(0.01)


async def test_an_extension_key_is_granted_and_its_notifications_follow_the_ack() -> None:
    things = Things()
    server = MCPServer(name="s", version="1", extensions=[things.extension()])
    session = server.create_session()
    sent: list[dict[str, Any]] = []

    async def wire(message: dict[str, Any]) -> None:
        sent.append(message)

    stream = asyncio.ensure_future(
        session.handle(listen_request({"things": [1, 2, 3, 4], "toolsListChanged": True}), wire)
    )
    await wait_for(sent, 2)
    (listener,) = things.listeners
    assert listener.subscription_id == 7 and not listener.closed
    assert listener.ctx.client_capabilities == {"extensions": {}}
    ack, first = sent
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"things": [2, 4], "toolsListChanged": True}
    assert first == {
        "jsonrpc": "2.0",
        "method": "notifications/things",
        "params": {"first": True, "_meta": {SUB: 7}},
    }
    assert listener.send("notifications/things", {"n": 2})
    await wait_for(sent, 3)
    assert sent[2]["params"] == {"n": 2, "_meta": {SUB: 7}}
    stream.cancel()
    await asyncio.gather(stream, return_exceptions=True)
    async with asyncio.timeout(5):
        await things.closed.wait()
    assert listener.closed and not listener.send("notifications/things", {"late": True})
    assert len(sent) == 3


async def test_a_key_not_asked_for_is_not_granted_and_a_refusal_ends_the_request() -> None:
    things = Things()
    server = MCPServer(name="s", version="1", extensions=[things.extension()])
    sent: list[dict[str, Any]] = []

    async def wire(message: dict[str, Any]) -> None:
        sent.append(message)

    refused = await server.create_session().handle(listen_request({"things": "refuse"}), wire)
    assert refused is not None and refused["error"]["code"] == MISSING_CAPABILITY
    assert sent == []  # nothing acknowledged
    stream = asyncio.ensure_future(
        server.create_session().handle(listen_request({"toolsListChanged": True}), wire)
    )
    await wait_for(sent, 1)
    assert sent[0]["params"]["notifications"] == {"toolsListChanged": True}
    assert things.listeners == []
    stream.cancel()
    await asyncio.gather(stream, return_exceptions=True)


def test_an_extension_may_not_take_a_core_key_a_taken_key_or_a_sync_grant() -> None:
    def sync_grant(value: Any, listener: Listener) -> Any:
        return value

    with pytest.raises(RegistrationError) as info:
        Extension(
            identifier="com.example/bad",
            listen_filters={"toolsListChanged": Things().grant, "x": sync_grant},  # type: ignore[dict-item]
        )
    assert len(info.value.problems) == 2
    assert "specification's own" in info.value.problems[0]
    assert "async function" in info.value.problems[1]
    server = MCPServer(name="s", version="1", extensions=[Things().extension()])
    other = Extension(identifier="com.example/other", listen_filters={"things": Things().grant})
    with pytest.raises(RegistrationError, match="'things' is taken"):
        server.add_extension(other)
    assert list(server.listen_filters) == ["things"]
