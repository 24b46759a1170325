"""Streamable HTTP in stateless mode: a fresh session per POST, nothing kept."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from mcpkit import Context
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import BOTH, HTTPClient, demo_server


async def _stateless(serve_app: Any, **options: Any) -> tuple[StreamableHTTPApp, str]:
    server = demo_server()

    @server.tool(title="Ping the client")
    async def ping_client(ctx: Context) -> str:
        """Ping the client (needs a back channel)."""
        await ctx.ping()
        return "pong"

    app = StreamableHTTPApp(server, stateless=True, **options)
    return app, await serve_app(app) + "/mcp"


def _text(ex: Any) -> str:
    return orjson.dumps(ex.response).decode()


async def test_stateless_requests_need_no_session_and_get_json(
    serve_app: Any, make_client: Any
) -> None:
    app, url = await _stateless(serve_app)
    c: HTTPClient = make_client(url)
    init = await c.request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    )
    assert init.status == 200
    assert "mcp-session-id" not in init.headers
    assert init.headers["content-type"] == "application/json"  # even though SSE is accepted
    ex = await c.call_tool("add", {"a": 3, "b": 4})
    assert ex.result["content"][0]["text"] == "7"
    listed = await c.request("tools/list")
    assert {t["name"] for t in listed.result["tools"]} >= {"add", "work", "ask"}
    assert len(app) == 0
    assert app.server.sessions() == []
    # a made-up session id is ignored: nothing is looked up
    assert (await c.request("ping", headers={"mcp-session-id": "whatever"})).status == 200
    assert (await c.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status == 202


async def test_stateless_get_and_delete_are_405(serve_app: Any, http: httpx.AsyncClient) -> None:
    _, url = await _stateless(serve_app)
    for method in ("GET", "DELETE"):
        resp = await http.request(method, url, headers={"accept": "text/event-stream"})
        assert resp.status_code == 405
        assert resp.headers["allow"] == "POST"


async def test_stateless_back_channel_features_fail_with_a_readable_error(
    serve_app: Any, make_client: Any
) -> None:
    _, url = await _stateless(serve_app)
    c: HTTPClient = make_client(url)
    pinged = await c.call_tool("ping_client")
    assert pinged.status == 200
    assert "stateless mode" in _text(pinged)
    asked = await c.call_tool("ask")
    assert "elicitation" in _text(asked)


async def test_stateless_may_stream_when_json_response_is_off(
    serve_app: Any, make_client: Any
) -> None:
    _, url = await _stateless(serve_app, json_response=False)
    c: HTTPClient = make_client(url)
    msg = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "work", "arguments": {"steps": 2}, "_meta": {"progressToken": 1}},
    }
    ex = await c.post(msg, accept=BOTH)
    assert ex.headers["content-type"] == "text/event-stream"
    assert len(ex.notifications("notifications/progress")) == 2
    assert ex.result["content"][0]["text"] == "worked 2"
    assert all(e.id is None for e in ex.events)


async def test_stateless_uses_the_protocol_version_header_for_the_revision(
    serve_app: Any, make_client: Any
) -> None:
    _, url = await _stateless(serve_app)
    c: HTTPClient = make_client(url, protocol_version="2025-03-26")
    old = await c.request("tools/list", headers={"mcp-protocol-version": "2025-03-26"})
    assert all("title" not in t and "outputSchema" not in t for t in old.result["tools"])
    new = await c.request("tools/list", headers={"mcp-protocol-version": "2025-11-25"})
    assert any(t.get("title") == "Ping the client" for t in new.result["tools"])  # the header chose
    bad = await c.request("tools/list", headers={"mcp-protocol-version": "2000-01-01"})
    assert bad.status == 400


async def test_a_client_that_declared_elicitation_hears_that_stateless_mode_is_why(
    serve_app: Any,
) -> None:
    """Each POST gets a fresh session that never saw the client's capabilities: the error
    must blame the mode, not say the client failed to declare them."""
    from mcpkit import Client
    from tests.transports.conftest import TIMEOUT

    app, url = await _stateless(serve_app)

    @app.server.tool
    async def summarize(ctx: Context) -> str:
        """Sample the client's LLM."""
        reply = await ctx.sample("Summarize", max_tokens=5)
        return str(reply["content"]["text"])

    async with Client(
        url=url,
        protocol_version="2025-11-25",  # the handshake era: no input-required rounds
        elicitation_handler=lambda params: {"action": "accept", "content": {"name": "Ada"}},
        sampling_handler=lambda params: {
            "role": "assistant",
            "content": {"type": "text", "text": "x"},
            "model": "m",
        },
        timeout=TIMEOUT,
    ) as client:
        assert client.protocol_version == "2025-11-25"
        for tool, method in (
            ("ask", "elicitation/create"),
            ("summarize", "sampling/createMessage"),
        ):
            result = await client.call_tool(tool)
            text = result["content"][0]["text"]
            assert result["isError"] is True, tool
            assert f"cannot send {method}: this server runs in stateless mode" in text
            assert "whatever capabilities the client declared" in text
            assert "did not declare" not in text
