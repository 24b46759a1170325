"""``serve()``: the embedded uvicorn in a real subprocess, stopped by signals."""

from __future__ import annotations

import asyncio
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


def start(tmp_path: Path, kind: str) -> tuple[subprocess.Popen[str], str]:
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


def test_a_missing_uvicorn_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # makes `import uvicorn` fail
    app: Any = object()
    with pytest.raises(ConfigurationError, match=r"pip install 'mcpkit\[http\]'"):
        serve_module.serve(app, port=1)
