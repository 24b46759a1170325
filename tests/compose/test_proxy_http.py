"""proxy() over HTTP both ways: a demo server subprocess upstream, the proxy on uvicorn."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpkit import Client
from mcpkit.compose import ProxySource, proxy
from tests.client.http_servers import serve, unused_port

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "examples" / "demo_server.py")


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    """The demo server over Streamable HTTP, in a subprocess."""
    port = unused_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "run", DEMO, "-t", "http", "--port", str(port)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, "the upstream server exited early"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"nothing listened on port {port}"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


async def test_http_downstream_sessions_each_get_one_http_upstream_session(
    upstream_url: str,
) -> None:
    server = proxy(upstream_url, name="http-proxy")
    (source,) = (s for s in server.component_sources if isinstance(s, ProxySource))
    progress: list[float] = []
    async with serve(server.http_app()) as url:
        async with (
            Client(url=url, protocol_version="2025-11-25") as one,
            Client(url=url, protocol_version="2025-11-25") as two,
        ):
            for a in range(3):
                for client in (one, two):
                    result = await client.call_tool("add", {"a": a, "b": 1})
                    assert result["content"][0]["text"] == str(a + 1)
            counted = await one.call_tool(
                "count_slowly", {"to": 2}, progress=lambda p, t, m: progress.append(p)
            )
            assert counted["content"][0]["text"] == "counted to 2"
            read = await two.read_resource("config://app")
            assert '"theme"' in read["contents"][0]["text"]
            # One upstream connection per downstream session.
            clients = [u.client for u in source.upstreams.values()]
            assert len(clients) == 2 and clients[0] is not clients[1]
            assert all(c is not None and c.connected for c in clients)
        # The proxy is still up: the downstream sessions ended, and with them the upstreams.
    assert progress == [1, 2]
    assert len(source.upstreams) == 0
