"""Keep-alive comments on 2026-07-28 SSE responses, over a real socket.

A ``subscriptions/listen`` stream stays open and silent until something changes;
proxies cut idle connections, so the server writes ``: ping`` SSE comments after
``keepalive_interval`` seconds without traffic. Comments are not events, so the
stream still delivers notifications (and a long call its result) afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from mcpkit import Context, MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.transports.asgi import end_all_streams
from tests import schema
from tests.transports.conftest import BOTH, TIMEOUT

V = "2026-07-28"
SUB = "io.modelcontextprotocol/subscriptionId"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}
INTERVAL = 0.05  # short, so the test sees several pings quickly


def request(method: str, params: dict[str, Any], rid: int) -> dict[str, Any]:
    meta = {**ENVELOPE, **params.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}


def headers_for(msg: dict[str, Any]) -> dict[str, str]:
    h = {
        "accept": BOTH,
        "content-type": "application/json",
        "mcp-protocol-version": V,
        "mcp-method": msg["method"],
    }
    if msg["method"] == "tools/call":
        h["mcp-name"] = msg["params"]["name"]
    return h


def make_server() -> tuple[MCPServer, asyncio.Event]:
    server = MCPServer(name="keepalive", version="1")
    release = asyncio.Event()

    @server.tool
    async def change_tools() -> str:
        """Announce a tool list change."""
        await server.tools.notify_list_changed()
        return "changed"

    @server.tool
    async def wait_for_release(ctx: Context) -> str:
        """Report progress (the response becomes SSE), then wait for the test."""
        await ctx.progress(0, 1, "started")
        await release.wait()
        return "released"

    return server, release


async def lines(response: httpx.Response) -> AsyncIterator[str]:
    async for line in response.aiter_lines():
        yield line


async def read_until(stream: AsyncIterator[str], want: Any) -> list[str]:
    """Lines up to and including the first that ``want`` accepts (bounded by TIMEOUT)."""
    seen: list[str] = []
    async with asyncio.timeout(TIMEOUT):
        async for line in stream:
            seen.append(line)
            if want(line, seen):
                return seen
    raise AssertionError(f"the stream ended before the expected line: {seen}")


def pings(seen: list[str]) -> int:
    return sum(1 for line in seen if line.startswith(":"))


def data(seen: list[str]) -> list[dict[str, Any]]:
    return [orjson.loads(line[len("data: ") :]) for line in seen if line.startswith("data: ")]


async def test_an_idle_listen_stream_gets_comments_then_still_delivers_notifications(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server, _ = make_server()
    url = await serve_app(server.http_app(keepalive_interval=INTERVAL)) + "/mcp"
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 7)
    async with http.stream(
        "POST", url, content=orjson.dumps(listen), headers=headers_for(listen)
    ) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        stream = lines(resp)
        first = await read_until(stream, lambda line, seen: line.startswith("data: "))
        ack = data(first)[0]
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        # Nothing happens: the server keeps the connection warm with comments.
        quiet = await read_until(stream, lambda line, seen: pings(seen) >= 3)
        assert [line for line in quiet if line] == [": ping"] * 3
        # Comments are not events: the stream still carries the notification.
        change = request("tools/call", {"name": "change_tools", "arguments": {}}, 8)
        answer = await http.post(url, content=orjson.dumps(change), headers=headers_for(change))
        assert answer.status_code == 200
        rest = await read_until(stream, lambda line, seen: line.startswith("data: "))
        (notification,) = data(rest)
        assert notification["method"] == "notifications/tools/list_changed"
        assert notification["params"]["_meta"][SUB] == 7
        schema.validate_message(notification, V)
        # And the keep-alive goes on afterwards.
        more = await read_until(stream, lambda line, seen: pings(seen) >= 1)
        assert ": ping" in more


async def test_a_long_call_streamed_as_sse_is_kept_alive_and_ends_with_its_result(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server, release = make_server()
    url = await serve_app(server.http_app(keepalive_interval=INTERVAL)) + "/mcp"
    call = request(
        "tools/call",
        {"name": "wait_for_release", "arguments": {}, "_meta": {"progressToken": "p"}},
        9,
    )
    async with http.stream(
        "POST", url, content=orjson.dumps(call), headers=headers_for(call)
    ) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        stream = lines(resp)
        seen = await read_until(stream, lambda line, seen: pings(seen) >= 2)
        assert data(seen)[0]["method"] == "notifications/progress"
        release.set()
        seen += [line async for line in stream]  # the stream ends after the result
    messages = data(seen)
    assert messages[-1]["id"] == 9 and messages[-1]["result"]["content"][0]["text"] == "released"
    schema.validate_message(messages[-1], V, request_method="tools/call")
    # The pinger stopped before the last event: nothing follows the result.
    last_data = max(i for i, line in enumerate(seen) if line.startswith("data: "))
    assert all(line == "" for line in seen[last_data + 1 :])


async def test_without_keepalive_an_idle_stream_stays_silent(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server, _ = make_server()
    url = await serve_app(server.http_app(keepalive_interval=None)) + "/mcp"
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 7)
    async with http.stream(
        "POST", url, content=orjson.dumps(listen), headers=headers_for(listen)
    ) as resp:
        stream = lines(resp)
        await read_until(stream, lambda line, seen: line.startswith("data: "))
        await asyncio.sleep(INTERVAL * 6)  # idle far longer than the interval above
        change = request("tools/call", {"name": "change_tools", "arguments": {}}, 8)
        await http.post(url, content=orjson.dumps(change), headers=headers_for(change))
        rest = await read_until(stream, lambda line, seen: line.startswith("data: "))
        assert pings(rest) == 0
        assert data(rest)[0]["method"] == "notifications/tools/list_changed"


async def test_a_stopping_server_ends_a_listen_stream_with_a_graceful_result(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    """basic/patterns/subscriptions § graceful closure: on shutdown the server answers the
    listen request (else the open stream would keep uvicorn's graceful shutdown waiting)."""
    server, _ = make_server()
    url = await serve_app(server.http_app(keepalive_interval=None)) + "/mcp"
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 7)
    async with http.stream(
        "POST", url, content=orjson.dumps(listen), headers=headers_for(listen)
    ) as resp:
        stream = lines(resp)
        await read_until(stream, lambda line, seen: line.startswith("data: "))
        end_all_streams()  # what serve() does on SIGTERM, before uvicorn waits for connections
        async with asyncio.timeout(TIMEOUT):
            rest = [line async for line in stream]  # the stream ends after the answer
    (answer,) = data(rest)
    assert answer["id"] == 7
    assert answer["result"]["_meta"][SUB] == 7
    schema.validate_message(answer, V, request_method="subscriptions/listen")


def test_the_interval_must_be_positive() -> None:
    server, _ = make_server()
    with pytest.raises(ConfigurationError, match="keepalive_interval"):
        server.http_app(keepalive_interval=0)
