"""The least a proxy can do per call: one bare HTTP round trip from inside a tool.

``bare_round_trip(url)`` makes an ``echo`` tool that sends the upstream at ``url`` the
same ``tools/call`` a proxy sends, as pre-built bytes on one kept-alive connection
(an asyncio Protocol on the server's own loop), waits for the whole answer and returns
the text. No MCP client: no JSON written or read, no ids, no headers parsed but the
length. A server serving this tool costs what serving a local tool costs plus the
second socket's system calls and the smallest Python that waits on it: the floor under
any proxy written in Python (bench_proxy.py --http prints it beside the proxy's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx

_CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}'


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = b""
        self.answer: asyncio.Future[bytes] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        head, sep, body = self.buffer.partition(b"\r\n\r\n")
        if not sep:
            return
        at = head.lower().find(b"content-length: ") + 16
        end = head.find(b"\r\n", at)
        length = int(head[at:] if end < 0 else head[at:end])
        if len(body) >= length and self.answer is not None:
            self.buffer = b""
            self.answer.set_result(body[:length])


def bare_round_trip(url: str) -> Callable[[str], Awaitable[str]]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    state: dict[str, object] = {}

    async def connect() -> _Connection:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(_Connection, host, port)
        return conn

    async def open_session() -> bytes:
        headers = {"accept": "application/json, text/event-stream"}
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "floor", "version": "1"},
            },
        }
        async with httpx.AsyncClient() as http:
            answer = await http.post(url, json=init, headers=headers)
            sid = answer.headers["mcp-session-id"]
            headers = {**headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(url, json=note, headers=headers)
        fields = b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in headers.items())
        return (
            b"POST %s HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n%s"
            b"content-length: %d\r\n\r\n%s"
            % ((parts.path or "/").encode(), parts.netloc.encode(), fields, len(_CALL), _CALL)
        )

    async def echo(text: str) -> str:
        """Return the text, after one bare round trip to the upstream."""
        conn = state.get("conn")
        if conn is None:
            state["request"] = await open_session()
        if (
            not isinstance(conn, _Connection)
            or conn.transport is None
            or conn.transport.is_closing()
        ):
            conn = state["conn"] = await connect()
        conn.answer = asyncio.get_running_loop().create_future()
        assert conn.transport is not None
        conn.transport.write(state["request"])  # type: ignore[arg-type]
        await conn.answer
        return text

    return echo
