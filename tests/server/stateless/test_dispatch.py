"""The 2026-07-28 era through the session, as stdio and the in-memory transport drive it."""

from __future__ import annotations

from typing import Any

from mcpkit import Context, MCPServer
from tests import schema

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
LEVEL = "io.modelcontextprotocol/logLevel"


def make_server() -> MCPServer:
    server = MCPServer(name="s", version="1", instructions="Be nice.")

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Log at info and debug."""
        await ctx.info("info line")
        await ctx.debug("debug line")
        return "done"

    @server.resource("test://one")
    def one() -> str:
        return "one"

    return server


def req(method: str, rid: int = 1, params: dict[str, Any] | None = None, **meta: Any) -> Any:
    p = dict(params or {})
    p["_meta"] = {PV: V, CAPS: {}, **meta}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


class Wire:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


async def test_discover_probe_on_a_fresh_connection_then_the_handshake_still_works() -> None:
    server = make_server()
    session = server.create_session()  # what stdio makes per connection
    wire = Wire()
    resp = await session.handle(req("server/discover"), wire)
    assert resp is not None
    schema.validate_message(resp, V, request_method="server/discover")
    assert resp["result"]["instructions"] == "Be nice."
    assert V in resp["result"]["supportedVersions"]
    init = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
    resp = await session.handle(init, wire)
    assert resp is not None and resp["result"]["protocolVersion"] == "2025-11-25"


async def test_a_legacy_discover_without_an_envelope_is_refused() -> None:
    session = make_server().create_session()
    msg = {"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {}}
    resp = await session.handle(msg, Wire())
    assert resp is not None and resp["error"]["code"] == -32602


async def test_log_messages_only_when_the_request_asks() -> None:
    server = make_server()
    call = {"name": "chatty", "arguments": {}}
    quiet = Wire()
    resp = await server.create_session().handle(req("tools/call", params=call), quiet)
    assert resp is not None and resp["result"]["resultType"] == "complete"
    assert quiet.sent == []
    loud = Wire()
    await server.create_session().handle(req("tools/call", params=call, **{LEVEL: "info"}), loud)
    assert [m["params"]["data"] for m in loud.sent] == ["info line"]
    for m in loud.sent:
        schema.validate_message(m, V)


async def test_resource_not_found_is_invalid_params_in_2026_only() -> None:
    server = make_server()
    resp = await server.create_session().handle(
        req("resources/read", params={"uri": "test://two"}), Wire()
    )
    assert resp is not None and resp["error"] == {
        "code": -32602,
        "message": "Resource not found: test://two",
        "data": {"uri": "test://two"},
    }


async def test_stateless_only_methods_are_unknown_to_a_handshake_session() -> None:
    from mcpkit.testing import connect

    async with connect(make_server()) as client:
        for method in ("server/discover", "subscriptions/listen"):
            resp = await client.send_raw(
                {"jsonrpc": "2.0", "id": 5, "method": method, "params": {}}
            )
            assert resp is not None and resp["error"]["code"] == -32601


async def test_a_change_made_while_the_listen_ack_is_written_follows_the_ack() -> None:
    """subscriptions/listen: every change after the acknowledgment reaches the listener,
    including one made while the acknowledgment itself was being written."""
    import asyncio

    server = make_server()
    session = server.create_session()
    sent: list[dict[str, Any]] = []

    async def slow_wire(message: dict[str, Any]) -> None:
        sent.append(message)
        if message.get("method") == "notifications/subscriptions/acknowledged":
            await server.tools.notify_list_changed()  # a change lands mid-write

    listen = asyncio.ensure_future(
        session.handle(
            req("subscriptions/listen", params={"notifications": {"toolsListChanged": True}}),
            slow_wire,
        )
    )
    async with asyncio.timeout(5):
        while len(sent) < 2:
            await asyncio.sleep(0.01)
    assert [m["method"] for m in sent] == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
    ]
    assert sent[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
    listen.cancel()
    await asyncio.gather(listen, return_exceptions=True)
