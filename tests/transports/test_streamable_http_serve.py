"""``serve()``: the embedded uvicorn in a real subprocess, stopped by signals."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit.errors import ConfigurationError
from mcpkit.transports import serve as serve_module
from tests.transports.conftest import BOTH, TIMEOUT

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

SCRIPT = textwrap.dedent(
    """
    import sys
    from mcpkit import MCPServer
    from mcpkit.transports.serve import serve

    server = MCPServer(name="serve-test", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    app = server.http_app() if sys.argv[2] == "http" else server.sse_app()
    serve(app, host="127.0.0.1", port=int(sys.argv[1]))
    print("serve returned; sessions left:", len(server.sessions()), flush=True)
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start(
    tmp_path: Path, kind: str, *, script: Path | None = None
) -> tuple[subprocess.Popen[str], str]:
    if script is None:
        script = tmp_path / "serve_app.py"
        script.write_text(SCRIPT)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port), kind],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"server did not start: {proc.communicate()}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_serve_stops_cleanly_on_a_signal_even_with_an_open_stream(
    tmp_path: Path, sig: int
) -> None:
    proc, base = start(tmp_path, "http")
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            init = await http.post(
                base + "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                headers={"accept": BOTH},
            )
            assert init.status_code == 200
            sid = init.headers["mcp-session-id"]
            headers = {"accept": "text/event-stream", "mcp-session-id": sid}
            async with http.stream("GET", base + "/mcp", headers=headers) as stream:
                assert stream.status_code == 200
                proc.send_signal(sig)
                async with asyncio.timeout(TIMEOUT):  # the server ends the stream itself
                    tail = [line async for line in stream.aiter_lines()]
        assert all(line == "" or line.startswith(":") for line in tail)  # no stray events
        out, err = await asyncio.to_thread(proc.communicate, timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "serve returned; sessions left: 0" in out
    assert "Traceback" not in err


async def test_serve_runs_the_legacy_sse_app(tmp_path: Path) -> None:
    proc, base = start(tmp_path, "sse")
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            async with http.stream("GET", base + "/sse") as stream:
                lines = stream.aiter_lines()
                async with asyncio.timeout(TIMEOUT):
                    assert await anext(lines) == "event: endpoint"
                    assert (await anext(lines)).startswith("data: /message?sessionId=")
                proc.send_signal(signal.SIGTERM)
                async with asyncio.timeout(TIMEOUT):
                    _ = [line async for line in lines]
        await asyncio.to_thread(proc.wait, timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0


# Without uvicorn, importing this module raises MissingExtra, a ConfigurationError
# (tests/test_extras.py).


def test_uvicorns_graceful_timeout_is_refused_for_mcpkits_own() -> None:
    # serve() sets uvicorn's deadline itself, later than graceful_timeout, so that the
    # requests it stops then are answered with a JSON-RPC error (not a TypeError here).
    app: Any = object()
    with pytest.raises(ConfigurationError, match="pass graceful_timeout, not uvicorn's"):
        serve_module.serve(app, port=0, timeout_graceful_shutdown=3)


FLOOD_SCRIPT = textwrap.dedent(
    """
    import sys
    from mcpkit import MCPServer
    from mcpkit.transports.serve import serve

    server = MCPServer(name="flood", version="1.0.0")
    BIG = "big://" + "u" * 16000

    @server.resource("big://{name}")
    def big(name: str) -> str:
        return name

    @server.tool
    async def flood(n: int) -> str:
        for _ in range(n):
            await server.resources.notify_updated(BIG)
        return "flooded"

    app = server.http_app() if sys.argv[2] == "http" else server.sse_app()
    # Far longer than the test waits: only the abandoning of blocked streams ends it in time.
    serve(app, host="127.0.0.1", port=int(sys.argv[1]), graceful_timeout=60)
    print("serve returned", flush=True)
    """
)


def unread_get(port: int, request: str) -> socket.socket:
    """A client that opens a stream with a tiny receive buffer and never reads it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request.encode())
    return sock


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_shutdown_abandons_a_stream_whose_client_does_not_read(
    tmp_path: Path, kind: str
) -> None:
    (tmp_path / "serve_app.py").write_text(FLOOD_SCRIPT)
    proc, base = start(tmp_path, kind, script=tmp_path / "serve_app.py")
    port = int(base.rsplit(":", 1)[1])
    sock: socket.socket | None = None
    big = "big://" + "u" * 16000
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            if kind == "http":
                init = await http.post(base + "/mcp", json=INIT, headers={"accept": BOTH})
                sid = init.headers["mcp-session-id"]
                headers = {
                    "accept": BOTH,
                    "mcp-session-id": sid,
                    "mcp-protocol-version": "2025-11-25",
                }
                await http.post(base + "/mcp", json=INITIALIZED, headers=headers)
                sock = unread_get(
                    port,
                    f"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n"
                    f"mcp-session-id: {sid}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n",
                )

                async def post(msg: dict[str, Any]) -> None:
                    r = await http.post(base + "/mcp", json=msg, headers=headers)
                    assert r.status_code in (200, 202), r.text
            else:
                sock = unread_get(port, "GET /sse HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
                # Read just the endpoint event, then never again.
                sock.settimeout(TIMEOUT)
                head = b""
                while (found := re.search(rb"data: (\S+)\n\n", head)) is None:
                    head += sock.recv(4096)
                path = found.group(1).decode()

                async def post(msg: dict[str, Any]) -> None:
                    r = await http.post(base + path, json=msg)
                    assert r.status_code == 202, r.text

                await post(INIT)
                await post(INITIALIZED)
            await asyncio.sleep(0.3)
            await post(
                {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": big}}
            )
            await post(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "flood", "arguments": {"n": 500}},
                }
            )
        await asyncio.sleep(0.5)  # the stream's writes are now blocked on the unread socket
        proc.send_signal(signal.SIGTERM)
        # Without abandoning the stream, the server waits its 60 s graceful timeout.
        out, err = await asyncio.to_thread(proc.communicate, timeout=15)
    finally:
        if sock is not None:
            sock.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "serve returned" in out
    assert "Traceback" not in err
    assert "ERROR" not in err, err
