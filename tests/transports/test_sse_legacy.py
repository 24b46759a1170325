"""The 2024-11-05 HTTP+SSE transport on real sockets."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpkit.transports.sse_legacy import SSEApp
from tests import schema
from tests.transports.conftest import TIMEOUT, Event, demo_server, next_event, sse_events

REVISION = "2024-11-05"


class LegacyClient:
    """An SSE stream plus the endpoint its ``endpoint`` event named."""

    def __init__(
        self, http: httpx.AsyncClient, base: str, events: AsyncIterator[Event], endpoint: str
    ) -> None:
        self.revision = REVISION
        self.http = http
        self.base = base
        self.events = events
        self.endpoint = endpoint
        self._ids = iter(range(1, 10_000))
        self._methods: dict[Any, str] = {}

    async def post(self, message: Any, **headers: str) -> httpx.Response:
        if isinstance(message, dict) and "id" in message and "method" in message:
            self._methods[message["id"]] = message["method"]
        hdrs = {"content-type": "application/json", **headers}
        return await self.http.post(
            self.base + self.endpoint, content=orjson.dumps(message), headers=hdrs
        )

    async def receive(self) -> dict[str, Any]:
        event = await next_event(self.events)
        assert event.event == "message"
        msg: dict[str, Any] = event.json
        method = None if "method" in msg else self._methods.get(msg.get("id"))
        schema.validate_message(msg, self.revision, request_method=method)
        return msg

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = next(self._ids)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        resp = await self.post(msg)
        assert resp.status_code == 202
        answer = await self.receive()
        assert answer["id"] == rid
        return answer

    async def initialize(
        self, capabilities: dict[str, Any] | None = None, revision: str = REVISION
    ) -> dict[str, Any]:
        self.revision = revision
        answer = await self.request(
            "initialize",
            {
                "protocolVersion": revision,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "l", "version": "1"},
            },
        )
        assert (
            await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ).status_code == 202
        return answer


@contextlib.asynccontextmanager
async def connect(
    http: httpx.AsyncClient, base: str, sse_path: str = "/sse"
) -> AsyncIterator[LegacyClient]:
    async with http.stream("GET", base + sse_path, headers={"accept": "text/event-stream"}) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"] == "text/event-stream"
        events = sse_events(resp)
        first = await next_event(events)
        assert first.event == "endpoint"
        yield LegacyClient(http, base, events, first.data)


async def until(predicate: Any) -> None:
    async with asyncio.timeout(TIMEOUT):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_two_clients_at_once_each_on_its_own_stream(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server = demo_server()
    app = SSEApp(server)
    base = await serve_app(app)
    async with connect(http, base) as a, connect(http, base) as b:
        assert a.endpoint.startswith("/message?sessionId=") and a.endpoint != b.endpoint
        init_a = await a.initialize()
        init_b = await b.initialize()
        assert (
            init_a["result"]["protocolVersion"] == REVISION == init_b["result"]["protocolVersion"]
        )
        assert len(app) == 2 and len(server.sessions()) == 2
        # interleave requests: each answer lands on the stream of its own client
        ra = await a.post(
            {
                "jsonrpc": "2.0",
                "id": 100,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
            }
        )
        rb = await b.post(
            {
                "jsonrpc": "2.0",
                "id": 100,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 2, "b": 2}},
            }
        )
        assert ra.status_code == rb.status_code == 202
        a._methods[100] = b._methods[100] = "tools/call"
        assert (await a.receive())["result"]["content"][0]["text"] == "2"
        assert (await b.receive())["result"]["content"][0]["text"] == "4"
        listed = await a.request("resources/list")
        assert listed["result"]["resources"][0]["uri"] == "demo://greeting"
    await until(lambda: len(app) == 0)
    assert server.sessions() == []


async def test_progress_logs_and_elicitation_flow_over_the_one_stream(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    base = await serve_app(SSEApp(demo_server()))
    async with connect(http, base) as c:
        # newer clients negotiate a newer revision over the old transport
        await c.initialize(capabilities={"elicitation": {}}, revision="2025-11-25")
        resp = await c.post(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {
                    "name": "work",
                    "arguments": {"steps": 2},
                    "_meta": {"progressToken": "p"},
                },
            }
        )
        assert resp.status_code == 202
        c._methods[5] = "tools/call"
        got = [await c.receive() for _ in range(5)]
        assert [m.get("method") for m in got] == [
            "notifications/progress",
            "notifications/message",
        ] * 2 + [None]
        assert got[-1]["result"]["content"][0]["text"] == "worked 2"
        await c.post(
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {}},
            }
        )
        c._methods[6] = "tools/call"
        request = await c.receive()
        assert request["method"] == "elicitation/create"
        answer = {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"action": "accept", "content": {"name": "Lin"}},
        }
        assert (await c.post(answer)).status_code == 202
        final = await c.receive()
        assert final["id"] == 6 and final["result"]["content"][0]["text"] == "hello Lin"


async def test_a_declared_oversized_body_is_refused_before_it_is_read(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    # The Content-Length alone earns the 413, as on Streamable HTTP (one shared intake):
    # the server neither waits for nor reads a body it would refuse anyway.
    base = await serve_app(SSEApp(demo_server(), max_body_size=1000, body_timeout=60.0))
    host, port = base.removeprefix("http://").split("/")[0].split(":")
    async with connect(http, base) as c:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(
                f"POST {c.endpoint} HTTP/1.1\r\nhost: {host}:{port}\r\n"
                "content-type: application/json\r\ncontent-length: 5000\r\n\r\n".encode()
            )
            async with asyncio.timeout(TIMEOUT):  # the body never comes
                status = await reader.readline()
        finally:
            writer.close()
        assert status.startswith(b"HTTP/1.1 413 "), status


async def test_message_endpoint_errors(serve_app: Any, http: httpx.AsyncClient) -> None:
    base = await serve_app(SSEApp(demo_server(), max_body_size=1000))
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    json_ct = {"content-type": "application/json"}
    assert (await http.post(base + "/message", content=ping, headers=json_ct)).status_code == 400
    assert (
        await http.post(base + "/message?sessionId=nope", content=ping, headers=json_ct)
    ).status_code == 404
    async with connect(http, base) as c:
        url = base + c.endpoint
        assert (
            await http.post(url, content=ping, headers={"content-type": "text/plain"})
        ).status_code == 415
        assert (
            await http.post(url, content=b"{" + b" " * 2000, headers=json_ct)
        ).status_code == 413
        malformed = await http.post(url, content=b"{nope", headers=json_ct)
        assert malformed.status_code == 400 and malformed.json()["error"]["code"] == -32700
        invalid = await http.post(url, content=b'{"id": 1}', headers=json_ct)
        assert invalid.status_code == 400 and invalid.json()["error"]["code"] == -32600
        assert (await http.get(url)).status_code == 405
        assert (await http.post(base + "/sse", content=ping, headers=json_ct)).status_code == 405
        assert (await http.get(base + "/elsewhere")).status_code == 404
        evil = await http.post(url, content=ping, headers={**json_ct, "host": "evil.example.com"})
        assert evil.status_code == 421
        assert (
            await http.get(base + "/sse", headers={"accept": "application/json"})
        ).status_code == 406


async def test_the_session_ends_when_the_stream_closes(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server = demo_server()
    app = SSEApp(server)
    base = await serve_app(app)
    async with connect(http, base) as c:
        await c.initialize()
        endpoint = c.endpoint
    await until(lambda: len(app) == 0)
    assert server.sessions() == []
    resp = await http.post(
        base + endpoint,
        content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 404


async def test_endpoint_honours_the_mount_prefix(serve_app: Any, http: httpx.AsyncClient) -> None:
    outer = Starlette(routes=[Mount("/legacy", app=demo_server().sse_app())])
    base = await serve_app(outer)
    async with connect(http, base, "/legacy/sse") as c:
        assert c.endpoint.startswith("/legacy/message?sessionId=")
        answer = await c.initialize()
        assert answer["result"]["serverInfo"]["name"] == "http-demo"
        pong = await c.request("ping")
        assert pong["result"] == {}


async def test_keepalive_pings_and_the_session_cap(serve_app: Any, http: httpx.AsyncClient) -> None:
    base = await serve_app(SSEApp(demo_server(), keepalive_interval=0.05, max_sessions=1))
    async with http.stream("GET", base + "/sse") as resp:
        lines = resp.aiter_lines()
        async with asyncio.timeout(TIMEOUT):
            assert (await anext(lines)) == "event: endpoint"
            while await anext(lines) != ": ping":
                pass
        full = await http.get(base + "/sse")
        assert full.status_code == 503
