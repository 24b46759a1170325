"""Requests in flight over HTTP: sessionless disconnects, the per-session cap, request ids.

Real uvicorn, real sockets. A client that closes its socket is a raw asyncio
connection closed mid-request; the tool itself reports whether it was cancelled.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from mcpkit import MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.transports.sse_legacy import SSEApp
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import BOTH, TIMEOUT, HTTPClient, next_event, sse_events


class Probe:
    """A server whose ``hang`` tool runs until cancelled, and says so."""

    def __init__(self) -> None:
        self.server = MCPServer(name="inflight", version="1")
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.running = 0

        @self.server.tool
        async def hang() -> str:
            """Wait until cancelled."""
            self.running += 1
            self.started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            finally:
                self.running -= 1
            return "never"

        @self.server.tool
        async def add(a: int, b: int) -> int:
            """Add."""
            return a + b


def call(rid: Any, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}},
    }


async def post_then_close(url: str, body: bytes, started: asyncio.Event) -> None:
    """POST ``body`` on a raw socket, wait until the tool runs, then close the socket."""
    parts = urlsplit(url)
    _reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    head = (
        f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\n"
        f"accept: {BOTH}\r\ncontent-type: application/json\r\n"
        f"mcp-protocol-version: 2025-11-25\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
    await asyncio.wait_for(started.wait(), TIMEOUT)
    writer.close()
    await writer.wait_closed()


# -- sessionless (stateless=True): nobody can receive the answer of a dropped request ----------------


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_a_sessionless_client_disconnect_cancels_its_tool(
    serve_app: Any, json_response: bool
) -> None:
    probe = Probe()
    app = StreamableHTTPApp(probe.server, stateless=True, json_response=json_response)
    url = await serve_app(app) + "/mcp"
    await post_then_close(url, orjson.dumps(call(1, "hang")), probe.started)
    await asyncio.wait_for(probe.cancelled.wait(), TIMEOUT)
    assert probe.running == 0


async def test_a_sessionless_request_still_answers_when_the_client_stays(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    probe = Probe()
    url = await serve_app(StreamableHTTPApp(probe.server, stateless=True)) + "/mcp"
    headers = {"accept": BOTH, "content-type": "application/json"}
    resp = await http.post(
        url, content=orjson.dumps(call(1, "add", {"a": 2, "b": 3})), headers=headers
    )
    assert resp.json()["result"]["content"][0]["text"] == "5"


# -- the per-session cap ----------------------------------------------------------------------------


async def test_requests_beyond_the_session_cap_are_refused_and_the_rest_served(
    serve_app: Any, make_client: Any
) -> None:
    probe = Probe()
    app = StreamableHTTPApp(probe.server, max_inflight=3, json_response=True)
    client: HTTPClient = make_client(await serve_app(app) + "/mcp")
    await client.initialize()
    # Three calls that never end, abandoned by their clients (each POST is dropped).
    hanging = [asyncio.ensure_future(client.call_tool("hang")) for _ in range(3)]
    async with asyncio.timeout(TIMEOUT):
        while probe.running < 3:
            await asyncio.sleep(0.01)
    refused = await client.call_tool("add", {"a": 1, "b": 1})
    error = refused.response["error"]
    assert error["code"] == -32600
    assert "too many requests in flight" in error["message"] and "3" in error["message"]
    assert error["data"] == {"maxInflight": 3}
    # Cancelling one frees its slot.
    first_id = 2  # initialize was 1
    await client.post(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": first_id, "reason": "test"},
        }
    )
    async with asyncio.timeout(TIMEOUT):
        while probe.running > 2:
            await asyncio.sleep(0.01)
    served = await client.call_tool("add", {"a": 1, "b": 1})
    assert served.result["content"][0]["text"] == "2"
    for task in hanging:
        task.cancel()
    await asyncio.gather(*hanging, return_exceptions=True)


async def test_the_default_cap_is_256(serve_app: Any) -> None:
    app = StreamableHTTPApp(MCPServer(name="s", version="1"))
    assert app.max_inflight == 256
    assert SSEApp(MCPServer(name="s", version="1")).max_inflight == 256


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_a_bad_cap_is_a_configuration_error(bad: Any) -> None:
    server = MCPServer(name="s", version="1")
    with pytest.raises(ConfigurationError, match="max_inflight"):
        StreamableHTTPApp(server, max_inflight=bad)
    with pytest.raises(ConfigurationError, match="max_inflight"):
        SSEApp(server, max_inflight=bad)


async def test_the_legacy_sse_transport_caps_a_session_too(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    probe = Probe()
    base = await serve_app(SSEApp(probe.server, max_inflight=1))
    async with http.stream("GET", base + "/sse", headers={"accept": "text/event-stream"}) as resp:
        events = sse_events(resp)
        endpoint = base + (await next_event(events)).data
        headers = {"content-type": "application/json"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        await http.post(endpoint, content=orjson.dumps(init), headers=headers)
        assert (await next_event(events)).json["id"] == 1
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(endpoint, content=orjson.dumps(initialized), headers=headers)
        await http.post(endpoint, content=orjson.dumps(call(2, "hang")), headers=headers)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        await http.post(
            endpoint, content=orjson.dumps(call(3, "add", {"a": 1, "b": 2})), headers=headers
        )
        refused = (await next_event(events)).json
        assert refused["id"] == 3 and refused["error"]["code"] == -32600
        assert refused["error"]["data"] == {"maxInflight": 1}
