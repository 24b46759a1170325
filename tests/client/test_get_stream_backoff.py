"""The standalone GET stream against servers that close it at once: the client backs off.

Hand-written Streamable HTTP servers on uvicorn (real sockets). Each answers the GET with
200 and an SSE body, then ends the response; they differ in what the body holds.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcpkit.client import Client
from mcpkit.client.transports.streamable_http import StreamableHTTPTransport
from tests.client.http_servers import read_body, serve

TIMEOUT = 10.0


def closing_server(stream_body: Any, gets: list[str | None]) -> Any:
    """A handshake-era server whose GET stream is ``stream_body(n)`` (n: the GET's number),
    then closed; ``gets`` records each GET's Last-Event-ID."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        if scope["method"] == "GET":
            gets.append(dict(scope["headers"]).get(b"last-event-id", b"").decode() or None)
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": stream_body(len(gets))})
            return
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        msg = json.loads(body)
        if "id" not in msg:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        result: dict[str, Any] = {}
        if msg["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "closer", "version": "1"},
            }
        reply = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    return app


async def wait_for_gets(gets: list[str | None], count: int) -> None:
    async with asyncio.timeout(TIMEOUT):
        while len(gets) < count:
            await asyncio.sleep(0.01)


async def test_an_empty_stream_with_retry_0_is_reopened_with_backoff() -> None:
    """Without backoff the client reconnected ~1,100 times a second, forever."""
    gets: list[str | None] = []
    app = closing_server(lambda n: b"retry: 0\n\n", gets)
    async with (
        serve(app) as url,
        Client(url=url, timeout=TIMEOUT, protocol_version="2025-11-25") as client,
    ):
        await wait_for_gets(gets, 1)
        await asyncio.sleep(2.0)
        # 1 s, then 2 s, then 4 s... between attempts: 2 or 3 GETs in this window.
        assert 1 <= len(gets) <= 5, f"{len(gets)} GETs in 2 s"
        await client.ping(timeout=TIMEOUT)  # the session itself is fine


async def test_empty_streams_count_toward_max_reconnects() -> None:
    gets: list[str | None] = []
    app = closing_server(lambda n: b"retry: 0\n\n", gets)
    transport_options = {"max_reconnects": 3, "reconnect_delay": 0.01}
    async with serve(app) as url:
        transport = StreamableHTTPTransport(url, **transport_options)
        async with Client(transport=transport, timeout=TIMEOUT, protocol_version="2025-11-25"):
            await wait_for_gets(gets, 4)  # within ~0.1 s: waits of 0.01, 0.02, 0.04 s
            await asyncio.sleep(1.0)  # the next wait would be 0.08 s
            assert len(gets) == 4  # the first GET, then 3 reconnections: given up


async def test_a_polling_server_is_reopened_after_its_retry() -> None:
    """A server that primes each stream with a new event id and closes it is polling
    (2025-11-25 transports): that is progress, never given up on."""
    gets: list[str | None] = []
    app = closing_server(lambda n: f"id: e{n}\nretry: 20\ndata:\n\n".encode(), gets)
    async with serve(app) as url:
        transport = StreamableHTTPTransport(url, max_reconnects=2, reconnect_delay=5.0)
        async with Client(transport=transport, timeout=TIMEOUT, protocol_version="2025-11-25"):
            await wait_for_gets(gets, 8)  # well past max_reconnects, and no 5 s waits
    assert gets[:4] == [None, "e1", "e2", "e3"]
