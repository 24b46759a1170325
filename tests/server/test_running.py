"""The transports serving a server: ``stdio_transport``, ``sse_transport``,
``streamable_http_transport`` (Mastra's ``getStdioTransport()`` and friends).

Each transport is started for real: stdio in a subprocess (``run_stdio``) and
over in-process pipes (``serve_stdio``), Streamable HTTP and legacy SSE on
uvicorn over real sockets, in-process (the app object can be compared) and in a
subprocess (``run_http``/``run_sse``, the embedded uvicorn). The server itself
reports what it shows through a tool (tests/fixtures/running_server.py) that
mcpkit's client calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, MCPServer, testing
from mcpkit.errors import ConfigurationError
from mcpkit.transports.sse_legacy import SSEApp
from mcpkit.transports.stdio import StdioConnection, serve_stdio
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.fixtures.running_server import build
from tests.transports.conftest import TIMEOUT, run_app

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "running_server.py"
NOTHING = {"stdio": None, "sse": None, "streamable_http": None}
LEGACY, MODERN = "2025-11-25", "2026-07-28"


def shown(server: MCPServer) -> tuple[Any, Any, Any]:
    return server.stdio_transport, server.sse_transport, server.streamable_http_transport


async def report(client: Client) -> dict[str, Any]:
    result = await client.call_tool("running")
    assert not result.get("isError"), result
    structured: dict[str, Any] = result["structuredContent"]
    return structured


# -- stdio ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", [LEGACY, MODERN])
async def test_run_stdio_shows_its_connection_to_a_real_client(
    tmp_path: Path, revision: str
) -> None:
    out = tmp_path / "report.json"
    args = [str(FIXTURE), str(out), "stdio"]
    async with Client(
        command=sys.executable, args=args, protocol_version=revision, timeout=TIMEOUT
    ) as client:
        seen = await report(client)
    expected: dict[str, Any] = {**NOTHING, "stdio": "StdioConnection"}
    if revision == LEGACY:  # the process's one session is the connection's
        expected["holds_session"] = True
    assert seen == expected
    # The client closed stdin and waited for the process, which wrote what it showed
    # before serving and after (serving ended: the connection is gone).
    assert json.loads(out.read_text()) == {"before": NOTHING, "after": NOTHING}


async def test_mcpkit_run_shows_the_stdio_connection() -> None:
    args = ["-m", "mcpkit", "run", f"{FIXTURE}:build"]
    async with Client(
        command=sys.executable, args=args, protocol_version=LEGACY, timeout=TIMEOUT
    ) as client:
        seen = await report(client)
    assert seen == {**NOTHING, "stdio": "StdioConnection", "holds_session": True}


@contextlib.asynccontextmanager
async def stdio_over_pipes(server: MCPServer) -> AsyncIterator[StdioConnection]:
    """Serve ``server`` with ``serve_stdio`` on fresh pipes until the block ends (then its
    stdin closes, which ends it); yields the connection the server shows meanwhile."""
    before = server.stdio_transport
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    task = asyncio.create_task(
        serve_stdio(server, stdin=in_r, stdout=out_w, handle_signals=False, shutdown_grace=0.1)
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            while server.stdio_transport is before:
                assert not task.done(), task.result()
                await asyncio.sleep(0.005)
        conn = server.stdio_transport
        assert isinstance(conn, StdioConnection)
        yield conn
        assert not task.done()  # still serving at the end of the block
    finally:
        os.close(in_w)  # EOF: the session ends
        async with asyncio.timeout(TIMEOUT):
            await task
        os.close(out_r)


async def test_serve_stdio_sets_the_property_and_clears_it_when_stdin_closes() -> None:
    server = build()
    assert shown(server) == (None, None, None)
    async with stdio_over_pipes(server) as conn:
        assert conn.session.server is server
        assert shown(server) == (conn, None, None)
    assert shown(server) == (None, None, None)


async def test_two_stdio_connections_show_the_latest_until_it_stops() -> None:
    server = build()
    async with stdio_over_pipes(server) as first:
        async with stdio_over_pipes(server) as second:
            assert second is not first
            assert server.stdio_transport is second
        assert server.stdio_transport is first  # the one still serving
    assert server.stdio_transport is None


# -- Streamable HTTP and legacy SSE on uvicorn, in this process ---------------------------------


@pytest.mark.parametrize("revision", [LEGACY, MODERN])
async def test_http_app_is_shown_from_lifespan_startup_to_shutdown(revision: str) -> None:
    server = build()
    app = server.http_app()
    assert isinstance(app, StreamableHTTPApp)
    assert shown(server) == (None, None, None)  # built, not serving yet
    async with run_app(app) as base:
        assert server.streamable_http_transport is app
        url = f"{base}/mcp"
        async with Client(
            url=url, http_transport="streamable-http", protocol_version=revision
        ) as client:
            seen = await report(client)
        expected: dict[str, Any] = {**NOTHING, "streamable_http": "StreamableHTTPApp"}
        if revision == LEGACY:  # app.session(Mcp-Session-Id) is the request's session
            expected["holds_session"] = True
        assert seen == expected
    assert shown(server) == (None, None, None)


async def test_sse_app_is_shown_from_lifespan_startup_to_shutdown() -> None:
    server = build()
    app = server.sse_app()
    assert isinstance(app, SSEApp)
    async with run_app(app) as base:
        assert server.sse_transport is app
        async with Client(url=f"{base}/sse", http_transport="sse") as client:
            seen = await report(client)
        assert seen == {**NOTHING, "sse": "SSEApp", "holds_session": True}
    assert shown(server) == (None, None, None)


async def test_two_http_apps_show_the_latest_still_serving() -> None:
    server = build()
    first, second = server.http_app(), server.http_app()
    async with run_app(first):
        assert server.streamable_http_transport is first
        async with run_app(second):
            assert server.streamable_http_transport is second
        assert server.streamable_http_transport is first
    assert server.streamable_http_transport is None


async def test_an_app_and_stdio_at_once_each_show_on_their_own_property() -> None:
    server = build()
    app = server.sse_app()
    async with run_app(app), stdio_over_pipes(server) as conn:
        assert shown(server) == (conn, app, None)
    assert shown(server) == (None, None, None)


async def test_a_failed_lifespan_startup_shows_nothing() -> None:
    @contextlib.asynccontextmanager
    async def broken(server: MCPServer) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield

    server = MCPServer(name="broken", version="1.0.0", lifespan=broken)
    app = server.http_app()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    inbox.put_nowait({"type": "lifespan.startup"})
    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, send)
    assert sent[0]["type"] == "lifespan.startup.failed"
    assert server.streamable_http_transport is None


async def test_a_cancelled_lifespan_clears_the_app() -> None:
    server = build()
    app = server.sse_app()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    started = asyncio.Event()

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    inbox.put_nowait({"type": "lifespan.startup"})
    task = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, send)
    )
    async with asyncio.timeout(TIMEOUT):
        await started.wait()
    assert server.sse_transport is app
    task.cancel()  # a host that tears the lifespan task down instead of sending shutdown
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert server.sse_transport is None


# -- run_http / run_sse: the embedded uvicorn, in a subprocess -----------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("kind", "path", "http_transport", "app_class"),
    [
        ("http", "/mcp", "streamable-http", "StreamableHTTPApp"),
        ("sse", "/sse", "sse", "SSEApp"),
    ],
)
async def test_run_http_and_run_sse_show_their_app_to_a_real_client(
    tmp_path: Path, kind: str, path: str, http_transport: Any, app_class: str
) -> None:
    out, port = tmp_path / "report.json", _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(FIXTURE), str(out), kind, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    assert proc.poll() is None, proc.communicate()
                    await asyncio.sleep(0.05)
        url = f"http://127.0.0.1:{port}{path}"
        async with Client(
            url=url, http_transport=http_transport, protocol_version=LEGACY, timeout=TIMEOUT
        ) as client:
            seen = await report(client)
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    key = "streamable_http" if kind == "http" else "sse"
    assert seen == {**NOTHING, key: app_class, "holds_session": True}
    assert json.loads(out.read_text()) == {"before": NOTHING, "after": NOTHING}


# -- not started that way ---------------------------------------------------------------------------


async def test_an_in_memory_client_is_no_transport() -> None:
    server = build()
    async with testing.connect(server) as client:
        result = await client.call_tool("running", {})
    assert result["structuredContent"] == NOTHING


def test_register_transport_refuses_an_unknown_kind_and_unregister_forgives() -> None:
    server = build()
    with pytest.raises(ConfigurationError, match="unknown transport kind 'websocket'"):
        server.register_transport("websocket", object())  # type: ignore[arg-type]
    server.unregister_transport("stdio", object())  # never registered: nothing happens
    mine = object()
    server.register_transport("stdio", mine)
    server.unregister_transport("stdio", object())
    assert server.stdio_transport is mine
    server.unregister_transport("stdio", mine)
    assert server.stdio_transport is None
