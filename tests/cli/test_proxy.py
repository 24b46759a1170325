"""``mcpkit proxy``: another server served through a proxy, run as a real subprocess."""

from __future__ import annotations

import asyncio
import shlex
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from tests.cli.test_run import mcpkit
from tests.client.http_servers import serve
from tests.transports.stdio_peer import REPO

TIMEOUT = 30.0
DEMO = shlex.join(
    [sys.executable, "-m", "mcpkit", "run", str(REPO / "examples" / "demo_server.py")]
)


@asynccontextmanager
async def proxy_process(*args: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """``mcpkit proxy ARGS -t http --port 0``; yields the process and its URL."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpkit",
        "proxy",
        *args,
        "-t",
        "http",
        "--port",
        "0",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(REPO),
    )
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)).decode()
        prefix = "mcpkit: serving 'demo-proxy' on http://127.0.0.1:"
        assert line.startswith(prefix), line
        port = int(line[len(prefix) :].split("/")[0])
        yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), TIMEOUT)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def test_proxy_of_a_stdio_server_over_http() -> None:
    async with proxy_process("--stdio", DEMO, "--name", "demo-proxy") as (proc, url):
        for era in ("2025-11-25", "2026-07-28"):
            async with Client(url=url, protocol_version=era, timeout=TIMEOUT) as client:
                assert client.server_info["name"] == "demo-proxy"
                names = {t["name"] for t in await client.list_tools()}
                assert {"add", "forecast"} <= names
                result = await client.call_tool("add", {"a": 2, "b": 3})
                assert result["content"][0]["text"] == "5"
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0


async def test_proxy_of_an_http_server_over_stdio_with_headers() -> None:
    upstream = MCPServer(name="up", version="1")

    @upstream.tool
    def hello(name: str) -> str:
        return f"hello {name}"

    seen: list[Any] = []

    async def record(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]).get(b"x-team"))
        await app(scope, receive, send)

    app = upstream.http_app()
    async with serve(record) as url:
        command = [sys.executable, "-m", "mcpkit", "proxy", "--url", url]
        async with Client(
            command=command[0],
            args=[*command[1:], "--header", "X-Team: blue", "--upstream-version", "auto"],
            cwd=REPO,
            timeout=TIMEOUT,
        ) as client:
            result = await client.call_tool("hello", {"name": "Ada"})
    assert result["content"][0]["text"] == "hello Ada"
    assert seen and set(seen) == {b"blue"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--url", "http://x/mcp", "--env", "A=1"], "--env applies to --stdio, not --url"),
        (["--stdio", "server", "--header", "X: y"], "--header applies to --url, not --stdio"),
        (["--url", "http://x/mcp", "--header", "novalue"], "--header 'novalue' is not NAME: VALUE"),
        (["--stdio", "server", "--env", "NOEQUALS"], "--env 'NOEQUALS' is not KEY=VALUE"),
        (["--stdio", "'unclosed"], '--stdio "\'unclosed" is not a command line'),
        (["--stdio", "   "], "--stdio needs a command"),
        (
            ["--stdio", "server", "--upstream-timeout", "0"],
            "--upstream-timeout must be a positive number, got 0",
        ),
    ],
)
def test_usage_mistakes_are_one_line_with_status_2(args: list[str], message: str) -> None:
    proc = mcpkit("proxy", *args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1].startswith(f"mcpkit: error: {message}"), proc.stderr


def test_an_unknown_upstream_version_names_the_flag() -> None:
    proc = mcpkit("proxy", "--stdio", "server", "--upstream-version", "1999")
    assert proc.returncode == 2
    assert proc.stderr.startswith("mcpkit: error: --upstream-version must be one of 2024-11-05")


def test_the_upstream_is_required_and_one_only() -> None:
    assert mcpkit("proxy").returncode == 2
    both = mcpkit("proxy", "--url", "http://x/mcp", "--stdio", "server")
    assert both.returncode == 2
    assert "not allowed with argument" in both.stderr
