"""One 2026-07-28 ``subscriptions/listen`` stream that is never read holds up nobody.

Each listener has its own bounded queue: ``notify_*`` returns at once, the
other listeners keep receiving, and the listener whose queue overflows is
dropped: its stream ends with an error saying why, once the client reads it.
Real uvicorn, real sockets; the slow client is a raw socket that stops
reading after the acknowledgment.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx
import orjson
import pytest

from mcpkit import MCPServer, ServerLimits
from mcpkit.errors import ConfigurationError
from tests.transports.conftest import TIMEOUT
from tests.transports.test_listen_keepalive import data, headers_for, lines, read_until, request

URI = "big://" + "u" * 16_000  # a large notification fills buffers with few of them
QUEUE = 64 * 1024  # the listeners' queue budget in this test
MAX_NOTIFICATIONS = 2000  # 32 MB of notifications: far more than any socket buffers hold


def make_server() -> MCPServer:
    server = MCPServer(
        name="slow-listener", version="1", limits=ServerLimits(listen_queue_bytes=QUEUE)
    )

    @server.resource("big://item")
    def item() -> str:
        return "item"

    return server


def listen_request(rid: int) -> dict[str, Any]:
    wanted = {"toolsListChanged": True, "resourceSubscriptions": [URI]}
    return request("subscriptions/listen", {"notifications": wanted}, rid)


async def open_raw_listener(url: str) -> socket.socket:
    """POST a listen request on a raw socket with a small receive buffer; read the ack only."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (host, int(port)))
    msg = listen_request(1)
    body = orjson.dumps(msg)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers_for(msg).items())
    await loop.sock_sendall(
        sock,
        f"POST /mcp HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-length: {len(body)}\r\n{head}\r\n".encode()
        + body,
    )
    seen = b""
    async with asyncio.timeout(TIMEOUT):
        while b"notifications/subscriptions/acknowledged" not in seen:
            seen += await loop.sock_recv(sock, 1024)
    assert seen.startswith(b"HTTP/1.1 200")
    return sock


async def test_an_unread_listener_does_not_hold_up_notifications_and_is_dropped(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server = make_server()
    url = await serve_app(server.http_app(keepalive_interval=None)) + "/mcp"
    slow = await open_raw_listener(url)
    try:
        msg = listen_request(2)
        async with http.stream(
            "POST", url, content=orjson.dumps(msg), headers=headers_for(msg)
        ) as resp:
            stream = lines(resp)
            first = await read_until(stream, lambda line, seen: line.startswith("data: "))
            assert data(first)[0]["method"] == "notifications/subscriptions/acknowledged"
            assert len(server.sessions()) == 2
            received: list[dict[str, Any]] = []

            async def read_fast() -> None:
                async for line in stream:
                    if line.startswith("data: "):
                        received.append(orjson.loads(line[len("data: ") :]))

            reader = asyncio.ensure_future(read_fast())
            sent = 0
            while len(server.sessions()) == 2 and sent < MAX_NOTIFICATIONS:
                # Each returns promptly, even once the slow listener's buffers are full.
                await asyncio.wait_for(server.resources.notify_updated(URI), 5.0)
                await asyncio.wait_for(server.tools.notify_list_changed(), 5.0)
                sent += 1
                await asyncio.sleep(0)  # let the listeners' writers run
            assert len(server.sessions()) == 1, f"the slow listener survived {sent} rounds"
            # The other listener got everything.
            async with asyncio.timeout(TIMEOUT):
                while len(received) < 2 * sent:
                    await asyncio.sleep(0.01)
            assert [m["method"] for m in received[:2]] == [
                "notifications/resources/updated",
                "notifications/tools/list_changed",
            ]
            assert len(received) == 2 * sent
            assert all(
                m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 2
                for m in received
            )
            # And keeps getting them.
            await asyncio.wait_for(server.tools.notify_list_changed(), 5.0)
            async with asyncio.timeout(TIMEOUT):
                while len(received) < 2 * sent + 1:
                    await asyncio.sleep(0.01)
            reader.cancel()

        # The slow client reads at last: what was written before the drop, then the
        # stream's end, a JSON-RPC error that says why (no traceback).
        loop = asyncio.get_running_loop()
        rest = bytearray()
        async with asyncio.timeout(TIMEOUT):
            while not rest.endswith(b"\r\n0\r\n\r\n"):
                chunk = await loop.sock_recv(slow, 65536)
                assert chunk, "the connection closed before the stream ended"
                rest += chunk
        assert b"Subscription dropped" in rest
        assert b"Traceback" not in rest
    finally:
        slow.close()


def test_the_listen_queue_budget_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="listen_queue_bytes"):
        MCPServer(name="x", version="1", limits=ServerLimits(listen_queue_bytes=0))
