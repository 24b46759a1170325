"""DNS-rebinding protection: the Host/Origin allow-lists and where the server may listen."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
import uvicorn

from mcpkit.errors import ConfigurationError
from mcpkit.transports.asgi import end_all_streams
from mcpkit.transports.security import RequestGuard, is_loopback_bind
from mcpkit.transports.serve import exposure_problem, serve
from mcpkit.transports.sse_legacy import SSEApp
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import TIMEOUT, demo_server

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "security-test", "version": "0"},
    },
}
HEADERS = {"content-type": "application/json", "accept": "application/json"}


def _as_if_reached_on(address: str, app: Any) -> Any:
    """``app`` as it sees a connection accepted on ``address``, a non-loopback interface.

    The guard judges a request by ``scope["server"]``, the local address the connection
    came in on. The test serves on loopback only (it sends no traffic to any other
    address), so this sets the one fact the network cannot give it here.
    """

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("server"):
            scope = {**scope, "server": (address, scope["server"][1])}
        await app(scope, receive, send)

    return wrapped


class _Quiet(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


@contextlib.asynccontextmanager
async def _served_on(address: str, app: Any) -> AsyncIterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((address, 0))
    port = sock.getsockname()[1]
    server = _Quiet(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(TIMEOUT):
            while not server.started:
                assert not task.done(), "uvicorn stopped before it started"
                await asyncio.sleep(0.01)
        yield f"http://{address}:{port}/mcp"
    finally:
        end_all_streams()
        server.should_exit = True
        async with asyncio.timeout(TIMEOUT):
            await task
        sock.close()


async def test_on_a_non_loopback_address_host_names_are_refused_until_allowed() -> None:
    body = orjson.dumps(INIT)
    public = "192.0.2.7"  # TEST-NET-1 (RFC 5737): stands for the machine's LAN or public address
    async with (
        _served_on("127.0.0.1", _as_if_reached_on(public, StreamableHTTPApp(demo_server()))) as url,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        port = url.split(":")[2].split("/")[0]
        # The rebinding attack: the browser believes it talks to evil.example (same origin).
        evil = {**HEADERS, "host": f"evil.example:{port}", "origin": f"http://evil.example:{port}"}
        refused = await http.post(url, content=body, headers=evil)
        assert refused.status_code == 421
        assert "evil.example" in refused.json()["error"]["message"]
        assert "mcp-session-id" not in refused.headers
        # A name is refused even without an Origin (curl, a proxy that forwards the name).
        plain = await http.post(url, content=body, headers={**HEADERS, "host": "mcp.example.com"})
        assert plain.status_code == 421
        # An IP literal cannot be rebound: served, and so is a loopback name.
        assert (await http.post(url, content=body, headers=HEADERS)).status_code == 200
        for host in (f"localhost:{port}", "[::1]"):
            resp = await http.post(url, content=body, headers={**HEADERS, "host": host})
            assert resp.status_code == 200, host
        # A page elsewhere that targets the IP directly sends its own Origin: 403.
        cross = {**HEADERS, "origin": "http://evil.example"}
        assert (await http.post(url, content=body, headers=cross)).status_code == 403

    allowed = _as_if_reached_on(
        public, StreamableHTTPApp(demo_server(), allowed_hosts=["*.example.com:*"])
    )
    async with _served_on("127.0.0.1", allowed) as url, httpx.AsyncClient(timeout=TIMEOUT) as http:
        for host, status in (("mcp.example.com:1", 200), ("example.com", 421), ("evil.test", 421)):
            resp = await http.post(url, content=body, headers={**HEADERS, "host": host})
            assert resp.status_code == status, host


def test_host_patterns() -> None:
    guard = RequestGuard(allowed_hosts=["mcp.example.com", "api.example.com:8443", "*.apps.test:*"])
    public = ("10.0.0.5", 443)
    allowed = [b"mcp.example.com", b"API.example.com:8443", b"a.apps.test:1", b"x.y.apps.test"]
    refused = [b"mcp.example.com:8443", b"api.example.com", b"apps.test", b"evilapps.test"]
    for host in allowed:
        assert guard.check(public, host, None) is None, host
    for host in refused:
        verdict = guard.check(public, host, None)
        assert verdict is not None and verdict[0] == 421, host


@pytest.mark.parametrize(
    ("hosts", "origins", "named"),
    [
        (["https://mcp.example.com"], None, "allowed host 'https://mcp.example.com'"),
        (["mcp.example.com:99999"], None, "allowed host 'mcp.example.com:99999'"),
        (["mcp.example.com/mcp"], None, "allowed host 'mcp.example.com/mcp'"),
        (["*.*.example.com"], None, "allowed host '*.*.example.com'"),
        ([""], None, "allowed host ''"),
        (None, ["app.example.com"], "allowed origin 'app.example.com'"),
        (None, ["https://app.example.com/path"], "allowed origin 'https://app.example.com/path'"),
    ],
)
def test_malformed_patterns_are_refused_by_name(
    hosts: list[str] | None, origins: list[str] | None, named: str
) -> None:
    with pytest.raises(ConfigurationError, match="must look like") as info:
        RequestGuard(allowed_hosts=hosts, allowed_origins=origins)
    assert str(info.value).startswith(named)
    with pytest.raises(ConfigurationError):
        StreamableHTTPApp(demo_server(), allowed_hosts=hosts, allowed_origins=origins)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("192.0.2.7", False),
        ("mcp.example.com", False),
    ],
)
def test_which_bind_addresses_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_bind(host) is loopback


@pytest.mark.parametrize("make", [StreamableHTTPApp, SSEApp])
def test_serve_refuses_a_public_address_without_allowed_hosts(make: Any) -> None:
    app = make(demo_server())
    for host in ("0.0.0.0", "::", "192.0.2.7"):
        with pytest.raises(ConfigurationError, match=r"allowed_hosts=\['\*'\]") as info:
            serve(app, host=host, port=0)  # refused before anything is bound
        assert f"refusing to listen on {host!r} without allowed_hosts" in str(info.value)
    with pytest.raises(ConfigurationError, match=r"refusing to listen on '0\.0\.0\.0'"):
        demo_server().run_http("0.0.0.0", 0)
    assert not exposure_problem(app, "127.0.0.1")
    assert not exposure_problem(make(demo_server(), allowed_hosts=["mcp.example.com"]), "0.0.0.0")
    assert not exposure_problem(make(demo_server(), allowed_hosts=["*"]), "0.0.0.0")
    assert not exposure_problem(object(), "0.0.0.0")  # a foreign app: its own business


@pytest.mark.parametrize("port", [-1, 65536, 99999, "8000", True])
def test_serve_refuses_an_impossible_port(port: Any) -> None:
    with pytest.raises(ConfigurationError, match="port must be an integer from 0 to 65535"):
        serve(StreamableHTTPApp(demo_server()), port=port)


def test_a_port_in_use_is_one_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigurationError) as info:
            serve(StreamableHTTPApp(demo_server()), port=port)
    assert str(info.value) == (
        f"cannot listen on 127.0.0.1:{port}: the address is already in use "
        "(is another server running?)"
    )


@pytest.mark.parametrize("http", [pytest.param("httptools", marks=pytest.mark.uvloop), "h11"])
@pytest.mark.parametrize("make", [StreamableHTTPApp, SSEApp])
async def test_the_app_refuses_a_head_over_64_kib_under_a_server_without_a_limit(
    http: str, make: Any
) -> None:
    # Plain uvicorn (no mcpkit limits, h11's incomplete-event cap lifted): the 70 KB head
    # reaches the app, which refuses it itself, as it must under any ASGI server.
    app = make(demo_server())
    path = "/mcp" if make is StreamableHTTPApp else "/message?session_id=x"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, http=http, log_level="warning", lifespan="on", h11_max_incomplete_event_size=1 << 20
    )
    server = _Quiet(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    body = orjson.dumps(INIT)
    fillers = "".join(f"x-filler-{i}: {'a' * 1000}\r\n" for i in range(70))
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"accept: application/json\r\ncontent-length: {len(body)}\r\n{fillers}\r\n"
    )
    try:
        async with asyncio.timeout(TIMEOUT):
            while not server.started:
                assert not task.done(), "uvicorn stopped before it started"
                await asyncio.sleep(0.01)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head.encode() + body)
            status = await reader.readline()
            answer = await reader.read(65536)
            writer.close()
    finally:
        end_all_streams()
        server.should_exit = True
        async with asyncio.timeout(TIMEOUT):
            await task
        sock.close()
    assert status.startswith(b"HTTP/1.1 431 "), status
    assert b"more than 65536 bytes" in answer
    # Lifted on request; a bad value is refused when the app is built.
    assert make(demo_server(), max_header_size=None).guard.max_header_size is None
    with pytest.raises(ConfigurationError, match="max_header_size must be a positive number"):
        make(demo_server(), max_header_size=0)
