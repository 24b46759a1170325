"""Real HTTP servers for the client tests: mcpkit apps on uvicorn on 127.0.0.1, free ports."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import uvicorn

from mcpkit.transports.asgi import end_all_streams, stop_all_requests

TIMEOUT = 10.0


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Any:  # leave the test process's signal handlers alone
        yield


def free_socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def unused_port() -> int:
    """A port nothing listens on (bound, then released)."""
    sock = free_socket()
    port: int = sock.getsockname()[1]
    sock.close()
    return port


GRACE = 0.5  # seconds the requests running at shutdown get to finish


@contextlib.asynccontextmanager
async def serve(
    app: Any, sock: socket.socket | None = None, *, path: str = "/mcp"
) -> AsyncIterator[str]:
    """Run ``app`` on uvicorn; yields ``http://127.0.0.1:<port><path>``."""
    sock = sock or free_socket()
    port = sock.getsockname()[1]
    server = _Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(TIMEOUT):
            while not server.started:
                if task.done():
                    task.result()
                    raise RuntimeError("uvicorn stopped before it started")
                await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        # What mcpkit's serve() does at shutdown, with a short graceful period: streams
        # end once their requests answered; requests still running then get the
        # shutting-down error on their stream (legacy SSE runs them in tasks of its own).
        end_all_streams()
        server.should_exit = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), GRACE)
        if not task.done():
            stop_all_requests()
        async with asyncio.timeout(TIMEOUT):
            await task
        sock.close()


async def read_body(scope: dict[str, Any], receive: Any, send: Any) -> bytes | None:
    """For a hand-written ASGI app: serve the lifespan (None), else the whole request body."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return None
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            return body


class Recorder:
    """An httpx event hook keeping (method, url, headers) of every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, httpx.Headers]] = []
        self.urls: list[str] = []

    async def __call__(self, request: httpx.Request) -> None:
        self.requests.append((request.method, request.headers))
        self.urls.append(str(request.url))

    def methods(self) -> list[str]:
        return [m for m, _ in self.requests]


async def eventually(action: Callable[[], Any], check: Callable[[], bool]) -> None:
    """Repeat ``action`` until ``check`` holds (a GET stream takes a moment to open)."""
    for _ in range(50):
        await action()
        for _ in range(10):
            if check():
                return
            await asyncio.sleep(0.01)
    raise AssertionError("condition never held")
