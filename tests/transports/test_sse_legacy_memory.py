"""A legacy HTTP+SSE client that does not read its stream cannot make the server hoard.

What waits for one session's stream is bounded in bytes (``max_queued_bytes``). The
transport cannot resume a stream, so nothing is dropped silently: past the budget the
session ends and its stream is closed. Real uvicorn, real sockets; the hostile client is
a raw socket with a small receive buffer that stops reading after the handshake.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import tracemalloc
from typing import Any

import httpx
import orjson
import pytest

from mcpkit import Context, MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.transports.sse_legacy import SSEApp
from tests.transports.conftest import TIMEOUT
from tests.transports.test_sse_legacy import connect, until

LOG = 100_000  # bytes of one log message
BUDGET = 256 * 1024  # the queue budget in these tests
COUNT = 300  # 30 MB of logs: far more than the budget plus any socket buffers
MiB = 1024 * 1024


def chatty_server() -> tuple[MCPServer, list[int]]:
    server = MCPServer(name="chatty", version="1")
    logged: list[int] = []

    @server.tool
    async def chatty(count: int, size: int, ctx: Context) -> str:
        """Log ``count`` messages of ``size`` characters, as fast as it can."""
        for i in range(count):
            await ctx.info("x" * size)
            logged.append(i)
        return f"logged {count}"

    return server, logged


def message(rid: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        msg["id"] = rid
    if params is not None:
        msg["params"] = params
    return orjson.dumps(msg)


async def recv_until(sock: socket.socket, want: bytes, seen: bytearray) -> None:
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(TIMEOUT):
        while want not in seen:
            chunk = await loop.sock_recv(sock, 65536)
            assert chunk, f"the connection closed before {want!r} arrived"
            seen += chunk


async def open_raw_stream(base: str) -> tuple[socket.socket, str]:
    """GET /sse on a raw socket with a small receive buffer; the endpoint it names."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (host, int(port)))
    await loop.sock_sendall(
        sock,
        f"GET /sse HTTP/1.1\r\nhost: {host}:{port}\r\naccept: text/event-stream\r\n\r\n".encode(),
    )
    seen = bytearray()
    await recv_until(sock, b"sessionId=", seen)
    await recv_until(sock, b"\n\n", seen)
    assert seen.startswith(b"HTTP/1.1 200")
    line = next(x for x in bytes(seen).split(b"\n") if x.startswith(b"data: "))
    return sock, line[len(b"data: ") :].strip().decode()


async def test_a_client_that_never_reads_ends_its_session_not_the_servers_memory(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server, logged = chatty_server()
    app = SSEApp(server, max_queued_bytes=BUDGET, keepalive_interval=None)
    base = await serve_app(app)
    sock, endpoint = await open_raw_stream(base)
    loop = asyncio.get_running_loop()
    try:
        url = base + endpoint
        headers = {"content-type": "application/json"}
        init = {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "slow", "version": "1"},
        }
        assert (
            await http.post(url, content=message(1, "initialize", init), headers=headers)
        ).status_code == 202
        seen = bytearray()
        await recv_until(sock, b'"id":1', seen)  # the only thing this client ever reads
        initialized = message(None, "notifications/initialized")
        assert (await http.post(url, content=initialized, headers=headers)).status_code == 202
        assert len(app) == 1

        gc.collect()
        tracemalloc.start()
        try:
            call = message(
                2, "tools/call", {"name": "chatty", "arguments": {"count": COUNT, "size": LOG}}
            )
            assert (await http.post(url, content=call, headers=headers)).status_code == 202
            # The session ends once the budget is passed, long before the tool is done.
            await until(lambda: len(app) == 0)
            await asyncio.sleep(0.2)  # anything still running would go on allocating
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # The budget, a message or two in flight and their JSON copies, socket buffers in
        # user space: a few MB. Unbounded, this is the 30 MB of logs.
        assert peak < 8 * MiB, f"{peak / MiB:.1f} MiB allocated while the client did not read"
        assert len(logged) < COUNT, "the tool ran to the end although its session ended"
        assert not server.sessions()
        # The session is gone: its endpoint answers 404.
        ping = message(3, "ping")
        assert (await http.post(url, content=ping, headers=headers)).status_code == 404

        # The client reads at last: what was written before, then the end of the stream.
        rest = bytearray()
        async with asyncio.timeout(TIMEOUT):
            while not rest.endswith(b"0\r\n\r\n"):
                chunk = await loop.sock_recv(sock, 65536)
                if not chunk:
                    break  # or the server closed the connection: a disconnect either way
                rest += chunk
        assert b'"id":2' not in rest  # no answer, but no waiting for one: the stream ended
    finally:
        sock.close()


async def test_a_client_that_reads_gets_every_message_of_a_tight_loop(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    """The budget bounds a client that does not read, not a burst from a tool that never
    awaits: the stream's writer keeps up with it."""
    server, logged = chatty_server()
    app = SSEApp(server, max_queued_bytes=BUDGET, keepalive_interval=None)
    base = await serve_app(app)
    count, size = 200, 10_000  # 2 MB, eight times the budget
    async with connect(http, base) as client:
        await client.initialize()
        call = {"name": "chatty", "arguments": {"count": count, "size": size}}
        resp = await client.post(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call}
        )
        assert resp.status_code == 202
        logs = 0
        async with asyncio.timeout(TIMEOUT):
            while True:
                msg = await client.receive()
                if msg.get("method") == "notifications/message":
                    logs += 1
                    continue
                assert msg["id"] == 5
                assert msg["result"]["content"][0]["text"] == f"logged {count}"
                break
        assert logs == count == len(logged)
        assert len(app) == 1


async def test_one_answer_larger_than_the_budget_is_delivered(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server = MCPServer(name="big", version="1")

    @server.tool
    def big() -> str:
        return "y" * (4 * BUDGET)

    app = SSEApp(server, max_queued_bytes=BUDGET, keepalive_interval=None)
    base = await serve_app(app)
    async with connect(http, base) as client:
        await client.initialize()
        answer = await client.request("tools/call", {"name": "big", "arguments": {}})
        assert answer["result"]["content"][0]["text"] == "y" * (4 * BUDGET)
        assert len(app) == 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1"])
def test_max_queued_bytes_must_be_a_positive_whole_number(bad: Any) -> None:
    server = MCPServer(name="x", version="1")
    with pytest.raises(ConfigurationError, match="max_queued_bytes must be a"):
        SSEApp(server, max_queued_bytes=bad)
    with pytest.raises(ConfigurationError, match="max_queued_bytes must be a"):
        server.sse_app(max_queued_bytes=bad)
