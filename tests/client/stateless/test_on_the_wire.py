"""The client in the 2026-07-28 era: probe, envelope, headers and input-required rounds.

The peers are small ASGI servers on uvicorn (127.0.0.1, free ports) that speak exactly
what the spec pages describe, so each test pins one client obligation on the wire.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from mcpkit.client import Client
from mcpkit.client.stateless.discover import envelope
from mcpkit.client.stateless.input_required import MAX_INPUT_ROUNDS
from mcpkit.errors import MCPError, PeerTimeout
from mcpkit.protocol.http_headers import (
    encode_header_value,
    param_headers_of_tool,
)
from mcpkit.protocol.versions import HANDSHAKE_REVISIONS
from tests.client.http_servers import read_body, serve
from tests.schema import validate_message

MODERN = "2026-07-28"
VERSIONS = (*HANDSHAKE_REVISIONS, MODERN)
PV = "io.modelcontextprotocol/protocolVersion"

Handler = Callable[[dict[str, Any], dict[str, str]], tuple[int, Any]]


class Peer:
    """An ASGI app: every POST body and its headers are recorded, ``handler`` answers."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[tuple[dict[str, Any], dict[str, str]]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if scope["method"] != "POST":
            status, answer = 405, None
        else:
            msg = orjson.loads(body)
            self.seen.append((msg, headers))
            status, answer = self.handler(msg, headers)
            if status == 0:  # a slow answer: the client gives up first
                await asyncio.sleep(1.0)
                status = 200
        kind = b"application/json"
        if isinstance(answer, list):  # an SSE stream: the messages, the last one the answer
            kind = b"text/event-stream"
            payload = b"".join(b"data: " + orjson.dumps(m) + b"\n\n" for m in answer)
        else:
            payload = b"" if answer is None else orjson.dumps(answer)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", kind)] if payload else [],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    def methods(self) -> list[str]:
        return [m.get("method", "") for m, _ in self.seen]

    def assert_valid(self) -> None:
        """Every message the client sent is valid in the 2026-07-28 schema."""
        for msg, _ in self.seen:
            validate_message(msg, MODERN)


def ok(msg: dict[str, Any], result: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", **result}}


def error(msg: dict[str, Any], status: int, code: int, data: Any = None) -> tuple[int, Any]:
    err: dict[str, Any] = {"code": code, "message": "refused"}
    if data is not None:
        err["data"] = data
    return status, {"jsonrpc": "2.0", "id": msg.get("id"), "error": err}


TOOLS = [
    {
        "name": "query",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                "opts": {
                    "type": "object",
                    "properties": {"deep": {"type": "boolean", "x-mcp-header": "Deep"}},
                },
                "sql": {"type": "string"},
            },
        },
    },
    {
        "name": "broken",
        "inputSchema": {
            "type": "object",
            "properties": {"score": {"type": "number", "x-mcp-header": "Score"}},
        },
    },
    {"name": "ask", "inputSchema": {"type": "object"}},
    {"name": "nag", "inputSchema": {"type": "object"}},
]


def modern(reject_first: bool = False, changes: bool = False) -> Handler:
    state = {"rejected": not reject_first}

    def handle(msg: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        meta = msg.get("params", {}).get("_meta", {})
        if not state["rejected"]:
            state["rejected"] = True
            return error(msg, 400, -32022, {"supported": [MODERN], "requested": "x"})
        if headers.get("mcp-protocol-version") != meta.get(PV):
            return error(msg, 400, -32020)
        method, params = msg["method"], msg["params"]
        if method == "server/discover":
            return ok(
                msg,
                {
                    "supportedVersions": [MODERN],
                    "capabilities": {
                        "tools": {"listChanged": changes},
                        "resources": {"subscribe": changes},
                    },
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m", "version": "1"}},
                    "ttlMs": 0,
                    "cacheScope": "public",
                },
            )
        if method == "tools/list":
            return ok(msg, {"tools": TOOLS, "ttlMs": 0, "cacheScope": "public"})
        if method == "tools/call" and params["name"] == "ask":
            responses = params.get("inputResponses")
            if responses is None:
                return ok(
                    msg,
                    {
                        "resultType": "input_required",
                        "inputRequests": {
                            "who": {
                                "method": "elicitation/create",
                                "params": {
                                    "mode": "form",
                                    "message": "name?",
                                    "requestedSchema": {
                                        "type": "object",
                                        "properties": {"name": {"type": "string"}},
                                    },
                                },
                            },
                            "roots": {"method": "roots/list", "params": {}},
                        },
                        "requestState": "opaque+/=state",
                    },
                )
            text = f"{responses['who']['content']['name']} {params.get('requestState')} " + str(
                [r["uri"] for r in responses["roots"]["roots"]]
            )
            return ok(msg, {"content": [{"type": "text", "text": text}]})
        if method == "tools/call" and params["name"] == "query":
            region = params.get("arguments", {}).get("region")
            if region is not None and headers.get("mcp-param-region") != region:
                return error(msg, 400, -32020)
        if method == "tools/call" and params["name"] == "slow":
            return 0, ok(msg, {"content": []})[1]
        if method == "subscriptions/listen":
            tag = {"io.modelcontextprotocol/subscriptionId": msg["id"]}
            wanted = params["notifications"]
            events: list[dict[str, Any]] = [
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": {"_meta": tag, "notifications": wanted},
                },
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": tag},
                },
            ]
            for uri in wanted.get("resourceSubscriptions", []):
                events.append(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/resources/updated",
                        "params": {"_meta": tag, "uri": uri},
                    }
                )
            return 200, [*events, ok(msg, {"_meta": tag})[1]]  # a graceful end after the events
        if method == "tools/call" and params["name"] == "nag":
            return ok(msg, {"resultType": "input_required", "requestState": "again"})
        if method == "tools/call":
            return ok(msg, {"content": [{"type": "text", "text": "done"}]})
        return error(msg, 404, -32601)

    return handle


def legacy(msg: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    """A 2025-11-25 server: anything before ``initialize`` is a bad request."""
    method = msg.get("method")
    if method == "initialize":
        return 200, {
            "jsonrpc": "2.0",
            "id": msg["id"],
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "old", "version": "1"},
            },
        }
    if "id" not in msg:
        return 202, None
    if headers.get("mcp-protocol-version") != "2025-11-25":
        return error(msg, 400, -32600)
    return 200, {"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}


# -- pure rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("\tindented", "=?base64?" + base64.b64encode(b"\tindented").decode() + "?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_header_values_follow_the_encoding_table(value: str, expected: str) -> None:
    assert encode_header_value(value) == expected


def test_param_headers_follow_properties_chains() -> None:
    assert param_headers_of_tool(TOOLS[0]) == [
        (("region",), "Region"),
        (("limit",), "Limit"),
        (("opts", "deep"), "Deep"),
    ]


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}, "empty"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}, "token"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "Régión"}}}, "token"),
        ({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}, "primitive"),
        ({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}, "primitive"),
        (
            {
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "Dup"},
                    "b": {"type": "string", "x-mcp-header": "dup"},
                }
            },
            "twice",
        ),
        (
            {"properties": {"a": {"type": "array", "items": {"x-mcp-header": "A"}}}},
            "outside",
        ),
        ({"anyOf": [{"properties": {"a": {"x-mcp-header": "A"}}}]}, "outside"),
    ],
)
def test_malformed_annotations_are_reported(schema: dict[str, Any], reason: str) -> None:
    found = param_headers_of_tool({"name": "t", "inputSchema": {"type": "object", **schema}})
    assert isinstance(found, str) and reason in found


def test_envelope_keeps_the_callers_meta() -> None:
    params = envelope(
        {"name": "t", "_meta": {"progressToken": 3}},
        version=MODERN,
        capabilities={"roots": {}},
        client_info={"name": "c", "version": "1"},
        log_level="debug",
    )
    assert params["name"] == "t"
    assert params["_meta"] == {
        "progressToken": 3,
        PV: MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "io.modelcontextprotocol/logLevel": "debug",
    }


# -- on the wire ------------------------------------------------------------------------------


async def test_modern_server_gets_envelopes_and_headers_and_no_session() -> None:
    peer = Peer(modern(reject_first=True))
    async with (
        serve(peer) as url,
        Client(
            url=url,
            protocol_version=MODERN,
            supported_versions=VERSIONS,
            client_info={"name": "t", "version": "1"},
            roots=["file:///w"],
        ) as client,
    ):
        assert client.protocol_version == MODERN
        assert client.server_info == {"name": "m", "version": "1"}
        names = [t["name"] for t in await client.list_tools()]
        await client.set_logging_level("warning")
        await client.call_tool(
            "query", {"region": "eu", "limit": 5, "opts": {"deep": True}, "sql": "x"}
        )
    # the refused probe, the retried probe, tools/list, tools/call; no initialize, no GET
    assert peer.methods() == ["server/discover", "server/discover", "tools/list", "tools/call"]
    assert names == ["query", "ask", "nag"]  # 'broken' has a number-typed annotation
    for msg, headers in peer.seen:
        meta = msg["params"]["_meta"]
        assert meta[PV] == MODERN == headers["mcp-protocol-version"]
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {"roots": {}}
        assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "t", "version": "1"}
        assert headers["mcp-method"] == msg["method"]
        assert "mcp-session-id" not in headers
    call, headers = peer.seen[-1]
    assert call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "warning"
    # Before set_logging_level: the level a handshake-era mcpkit server sends by default,
    # since this client shows server logs (server_logs=True).
    assert peer.seen[2][0]["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"
    assert headers["mcp-name"] == "query"
    assert headers["mcp-param-region"] == "eu"
    assert headers["mcp-param-limit"] == "5"
    assert headers["mcp-param-deep"] == "true"
    assert not [h for h in headers if h.startswith("mcp-param-sql")]
    peer.assert_valid()


async def test_legacy_server_gets_the_handshake_after_the_probe() -> None:
    peer = Peer(legacy)
    async with (
        serve(peer) as url,
        Client(url=url, protocol_version=MODERN, supported_versions=VERSIONS) as client,
    ):
        assert client.protocol_version == "2025-11-25"
        assert await client.list_tools() == []
    assert peer.methods() == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    assert "_meta" not in (peer.seen[-1][0].get("params") or {})


async def test_input_required_rounds_use_the_handlers_and_echo_the_state() -> None:
    peer = Peer(modern())
    asked: list[dict[str, Any]] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    async with (
        serve(peer) as url,
        Client(
            url=url,
            protocol_version=MODERN,
            supported_versions=VERSIONS,
            elicitation_handler=elicit,
            roots=["file:///w"],
        ) as client,
    ):
        result = await client.call_tool("ask", {"x": 1})
        assert result["content"][0]["text"] == "Ada opaque+/=state ['file:///w']"
        await client.call_tool("query", {})
    first, retry, unrelated = (m for m, _ in peer.seen[1:])
    assert asked and asked[0]["message"] == "name?"
    assert retry["id"] != first["id"]
    assert retry["params"]["arguments"] == {"x": 1}
    assert retry["params"]["requestState"] == "opaque+/=state"
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    assert "inputResponses" not in unrelated["params"]
    assert "requestState" not in unrelated["params"]
    peer.assert_valid()


async def test_endless_input_required_rounds_stop_with_a_clear_error() -> None:
    peer = Peer(modern())
    async with (
        serve(peer) as url,
        Client(url=url, protocol_version=MODERN, supported_versions=VERSIONS) as client,
    ):
        with pytest.raises(MCPError, match=f"after {MAX_INPUT_ROUNDS} rounds"):
            await client.call_tool("nag", {})
    assert peer.methods().count("tools/call") == MAX_INPUT_ROUNDS


async def test_input_request_without_a_handler_names_the_missing_handler() -> None:
    peer = Peer(modern())
    async with (
        serve(peer) as url,
        Client(url=url, protocol_version=MODERN, supported_versions=VERSIONS) as client,
    ):
        with pytest.raises(MCPError, match="no handler"):
            await client.call_tool("ask", {})


async def test_header_mismatch_lists_the_tools_and_retries_once() -> None:
    peer = Peer(modern())
    async with (
        serve(peer) as url,
        Client(url=url, protocol_version=MODERN, supported_versions=VERSIONS) as client,
    ):
        result = await client.call_tool("query", {"region": "eu"})  # not listed yet
        assert result["content"][0]["text"] == "done"
    assert peer.methods() == ["server/discover", "tools/call", "tools/list", "tools/call"]
    assert "mcp-param-region" not in peer.seen[1][1]
    assert peer.seen[3][1]["mcp-param-region"] == "eu"


async def test_a_timed_out_stateless_call_closes_its_stream_without_a_notification() -> None:
    peer = Peer(modern())
    async with (
        serve(peer) as url,
        Client(url=url, protocol_version=MODERN, supported_versions=VERSIONS) as client,
    ):
        with pytest.raises(PeerTimeout):
            await client.call_tool("slow", {}, timeout=0.2)
        await asyncio.sleep(0.3)
        await client.call_tool("query", {})  # the connection still serves calls
    assert "notifications/cancelled" not in peer.methods()


async def test_change_notifications_come_from_subscriptions_listen() -> None:
    peer = Peer(modern(changes=True))
    changed: list[str] = []
    updated: list[str] = []
    async with (
        serve(peer) as url,
        Client(
            url=url,
            protocol_version=MODERN,
            on_list_changed=changed.append,
            on_resource_updated=updated.append,
        ) as client,
    ):
        await client.subscribe_resource("file:///a")
        async with asyncio.timeout(5):
            while "file:///a" not in updated:
                await asyncio.sleep(0.01)
        assert client.session.listener.acknowledged == {
            "toolsListChanged": True,
            "resourceSubscriptions": ["file:///a"],
        }
        await client.unsubscribe_resource("file:///a")
        async with asyncio.timeout(5):
            while peer.seen[-1][0]["params"].get("notifications") != {"toolsListChanged": True}:
                await asyncio.sleep(0.01)
    listens = [
        m["params"]["notifications"] for m, _ in peer.seen if m["method"] == "subscriptions/listen"
    ]
    assert listens[-1] == {"toolsListChanged": True}  # unsubscribing narrowed the filter
    assert "tools" in changed
    assert "resources/subscribe" not in peer.methods()
    peer.assert_valid()
