"""The client answers a server's request with exactly the id it was given, however large.

JSON-RPC ids have no size bound, but orjson reads an integer beyond 64 bits as a float:
an answer would carry a different id (2**64 + 1 comes back as 2**64), and two such
requests would share one. The servers here are hand-written (a stdio subprocess, and an
ASGI app on uvicorn over a real socket) and read the answers with the standard library.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mcpkit.client import Client
from tests.client.conftest import FIXTURES, PYTHON
from tests.client.fixtures.big_id_server import REQUESTS
from tests.client.http_servers import read_body, serve

BIG_IDS = str(Path(FIXTURES) / "big_id_server.py")
TIMEOUT = 10.0


def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


def check_answers(result: dict[str, Any]) -> None:
    """The server's report ``[[sent id, answer], ...]``: each answer has exactly its id."""
    report = json.loads(result["content"][0]["text"])
    assert isinstance(report, list), report
    by_method = {}
    for (rid, method, _), (sent, answer) in zip(REQUESTS, report, strict=True):
        assert sent == rid
        assert answer is not None, f"no answer to {method} carried the id {rid}"
        assert type(answer["id"]) is int and answer["id"] == rid
        by_method[method] = answer
    assert by_method["ping"]["result"] == {}
    assert by_method["elicitation/create"]["result"] == {
        "action": "accept",
        "content": {"name": "Ada"},
    }
    assert "error" in by_method["roots/list"]


async def test_stdio_answers_carry_ids_beyond_64_bits_exactly() -> None:
    async with Client(
        command=PYTHON, args=[BIG_IDS], elicitation_handler=elicit, timeout=TIMEOUT
    ) as client:
        assert client.protocol_version == "2025-11-25"
        check_answers(await client.call_tool("ask", {}))


class BigIdApp:
    """A hand-written Streamable HTTP server (2025-11-25): ``tools/call`` answers with an
    SSE stream that carries the requests of ``REQUESTS`` first, and the result once the
    client has POSTed an answer to each (read with ``json``, so ids stay exact)."""

    def __init__(self) -> None:
        self.answers: dict[Any, Any] = {}
        self.all_answered = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        if scope["method"] != "POST":
            await _reply(send, 405 if scope["method"] == "GET" else 200, None)
            return
        msg = json.loads(body)
        method = msg.get("method")
        if method is None:  # an answer to one of our requests
            self.answers[msg["id"]] = msg
            if len(self.answers) >= len(REQUESTS):
                self.all_answered.set()
            await _reply(send, 202, None)
        elif "id" not in msg:
            await _reply(send, 202, None)
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "big-ids", "version": "0"},
            }
            await _reply(send, 200, {"jsonrpc": "2.0", "id": msg["id"], "result": result}, b"s1")
        elif method == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            await _reply(send, 200, {"jsonrpc": "2.0", "id": msg["id"], "error": error})
        else:
            await self._call(msg, send)

    async def _call(self, msg: dict[str, Any], send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for rid, name, params in REQUESTS:
            request = {"jsonrpc": "2.0", "id": rid, "method": name, "params": params}
            event = b"data: " + json.dumps(request).encode() + b"\n\n"
            await send({"type": "http.response.body", "body": event, "more_body": True})
        try:
            await asyncio.wait_for(self.all_answered.wait(), TIMEOUT)
            report: Any = [[rid, self.answers.get(rid)] for rid, _, _ in REQUESTS]
        except TimeoutError:
            report = {"answered ids": [repr(k) for k in self.answers]}
        content = [{"type": "text", "text": json.dumps(report)}]
        answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": content}}
        event = b"data: " + json.dumps(answer).encode() + b"\n\n"
        await send({"type": "http.response.body", "body": event})


async def _reply(send: Any, status: int, body: Any, sid: bytes | None = None) -> None:
    headers = [(b"content-type", b"application/json")] if body is not None else []
    if sid is not None:
        headers.append((b"mcp-session-id", sid))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    data = json.dumps(body).encode() if body is not None else b""
    await send({"type": "http.response.body", "body": data})


@pytest.mark.parametrize("protocol_version", ["2025-11-25"])
async def test_streamable_http_answers_carry_ids_beyond_64_bits_exactly(
    protocol_version: str,
) -> None:
    app = BigIdApp()
    async with (
        serve(app) as url,
        Client(
            url=url,
            http_transport="streamable-http",
            protocol_version=protocol_version,
            elicitation_handler=elicit,
            timeout=TIMEOUT,
        ) as client,
    ):
        result = await client.call_tool("ask", {})
    assert not isinstance(json.loads(result["content"][0]["text"]), dict), result
    check_answers(result)


class LegacyBigIdApp:
    """The same over the legacy HTTP+SSE transport (2024-11-05): every server message
    travels on the one GET stream, the client's answers come as POSTs."""

    def __init__(self) -> None:
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.answers: dict[Any, Any] = {}
        self.call_id: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        if scope["method"] == "GET":
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            endpoint = b"event: endpoint\ndata: /message?sessionId=s1\n\n"
            await send({"type": "http.response.body", "body": endpoint, "more_body": True})
            while (out := await self.outbox.get()) is not None:
                event = b"data: " + json.dumps(out).encode() + b"\n\n"
                await send({"type": "http.response.body", "body": event, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await _reply(send, 202, None)
        msg = json.loads(body)
        method = msg.get("method")
        if method is None:
            self.answers[msg["id"]] = msg
            if len(self.answers) == len(REQUESTS):
                report = [[rid, self.answers.get(rid)] for rid, _, _ in REQUESTS]
                content = [{"type": "text", "text": json.dumps(report)}]
                result = {"content": content}
                self.outbox.put_nowait({"jsonrpc": "2.0", "id": self.call_id, "result": result})
        elif method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "big-ids", "version": "0"},
            }
            self.outbox.put_nowait({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        elif method == "tools/call":
            self.call_id = msg["id"]
            for rid, name, params in REQUESTS:
                request = {"jsonrpc": "2.0", "id": rid, "method": name, "params": params}
                self.outbox.put_nowait(request)
        elif "id" in msg:
            error = {"code": -32601, "message": "Method not found"}
            self.outbox.put_nowait({"jsonrpc": "2.0", "id": msg["id"], "error": error})


async def test_legacy_sse_answers_carry_ids_beyond_64_bits_exactly() -> None:
    app = LegacyBigIdApp()
    async with serve(app, path="/sse") as url:
        try:
            async with Client(url=url, elicitation_handler=elicit, timeout=TIMEOUT) as client:
                result = await client.call_tool("ask", {})
        finally:
            app.outbox.put_nowait(None)  # end the stream, so the server can stop
    check_answers(result)
