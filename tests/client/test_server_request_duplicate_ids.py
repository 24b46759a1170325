"""A server request that reuses the id of one the client is still handling is refused.

Ids are unique among the sender's unanswered requests (2025-11-25 basic § requests).
The client keeps the first request under its id (so it stays cancellable by it) and
answers the second with -32600, as mcpkit's server does; once the first is answered
the id is free again. The server is hand-written (Streamable HTTP on uvicorn over a
real socket) so that it can break the rule, and reads the answers with ``json``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcpkit.client import Client
from mcpkit.errors import INVALID_REQUEST
from tests.client.http_servers import read_body, serve

TIMEOUT = 10.0
ASK = {
    "message": "name?",
    "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}},
}


async def slow_elicit(params: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0.3)  # still being handled when the duplicate arrives
    return {"action": "accept", "content": {"n": params["message"]}}


class DuplicateIdApp:
    """``tools/call`` sends two elicitations with the id "dup" at once, waits for two
    answers, then sends a third with the same id (free again by then), and reports
    every answer it got, in order."""

    def __init__(self) -> None:
        self.answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

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
            await self.answers.put(msg)
            await _reply(send, 202, None)
        elif "id" not in msg:
            await _reply(send, 202, None)
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "dup-ids", "version": "0"},
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

        async def ask(message: str) -> None:
            params = {**ASK, "message": message}
            request = {"jsonrpc": "2.0", "id": "dup", "method": "elicitation/create"}
            event = b"data: " + json.dumps({**request, "params": params}).encode() + b"\n\n"
            await send({"type": "http.response.body", "body": event, "more_body": True})

        report: list[Any] = []
        try:
            await ask("first")
            await ask("second")
            report.append(await asyncio.wait_for(self.answers.get(), TIMEOUT))
            report.append(await asyncio.wait_for(self.answers.get(), TIMEOUT))
            # The client frees the id once its answer's POST is done (its slot also
            # bounds how many answers are in flight), which can be just after this app
            # has read the answer: give the 202 time to reach it.
            await asyncio.sleep(0.5)
            await ask("third")
            report.append(await asyncio.wait_for(self.answers.get(), TIMEOUT))
        except TimeoutError:
            report.append("timed out")
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


async def test_a_duplicate_of_an_id_being_handled_is_refused_and_the_id_freed_after() -> None:
    async with (
        serve(DuplicateIdApp()) as url,
        Client(
            url=url,
            http_transport="streamable-http",
            protocol_version="2025-11-25",
            elicitation_handler=slow_elicit,
            timeout=TIMEOUT,
        ) as client,
    ):
        result = await client.call_tool("ask", {})
    refused, first, third = json.loads(result["content"][0]["text"])
    # The refusal comes at once, the first answer after the handler's 0.3 s.
    assert refused["id"] == "dup" and refused["error"]["code"] == INVALID_REQUEST
    assert "still being handled" in refused["error"]["message"]
    assert first == {
        "jsonrpc": "2.0",
        "id": "dup",
        "result": {"action": "accept", "content": {"n": "first"}},
    }
    assert third["id"] == "dup" and third["result"]["content"] == {"n": "third"}
