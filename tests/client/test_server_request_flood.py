"""A server that floods the client with requests of its own cannot freeze it.

At most ``max_server_requests`` server requests are handled at once, the excess is
refused with error -31429 (a bounded number of refusals at once) or dropped, and the
client's own calls keep their deadlines: the flooding servers here are hand-written
and hostile, over real HTTP (uvicorn on 127.0.0.1) and over stdio (a real subprocess).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit.client import Client, MCPClient
from mcpkit.client.config import load_config
from mcpkit.errors import ConfigurationError, MCPError, PeerTimeout
from mcpkit.server.context import Context
from mcpkit.server.server import MCPServer
from tests.client.conftest import FIXTURES, PYTHON, Traffic
from tests.client.http_servers import read_body, serve

TOO_MANY_REQUESTS = -31429  # the error refusing a server request beyond the limit
FLOOD = str(Path(FIXTURES) / "flood_server.py")
CALL_TIMEOUT = 2.0
# The deadline plus generous slack for a noisy machine; without the bound a flood of
# 1,000 pings delayed a 3 s timeout to 13 to 35 s.
LATE = CALL_TIMEOUT + 2.0
# Far above what a bounded client keeps in flight (2 x 32 answers, a few streams), far
# below what an unbounded one piles up (thousands of tasks).
MAX_TASKS = 200


class Sampled(Traffic):
    """Records all traffic but the flood's, and a sample of that: every message
    recorded is checked against the schema, without keeping (or checking) millions."""

    SAMPLE = 50

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, int] = {}

    def __call__(self, direction: str, message: Any) -> None:
        kind = _flood_kind(message)
        if kind is not None:
            self.seen[kind] = self.seen.get(kind, 0) + 1
            if self.seen[kind] > self.SAMPLE:
                return
        super().__call__(direction, message)


def _flood_kind(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    if message.get("method") == "ping":
        return "ping"
    rid = message.get("id")
    if "method" not in message and isinstance(rid, str) and rid.startswith("p"):
        return "error" if "error" in message else "result"
    return None


@pytest.fixture
def sampled() -> Iterator[Sampled]:
    recorder = Sampled()
    yield recorder
    recorder.check()


def _ping(i: int) -> bytes:
    return b"data: " + json.dumps({"jsonrpc": "2.0", "id": f"p{i}", "method": "ping"}).encode()


class FloodApp:
    """A hand-written Streamable HTTP server (2025-11-25) that floods pings.

    ``tools/call`` of ``flood`` answers with an SSE stream of ``count`` pings and
    then never answers; ``echo`` answers at once (JSON). The standalone GET
    stream floods pings without end when ``endless_get``. Answers to the pings
    are counted by result / error code.
    """

    def __init__(self, *, count: int = 1000, endless_get: bool = False) -> None:
        self.count = count
        self.endless_get = endless_get
        self.results = 0
        self.errors: dict[int, int] = {}
        self.stop = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        if scope["method"] == "GET":
            if not self.endless_get:
                await _status(send, 405)
                return
            await _start_sse(send)
            await self._flood(send, None)
            return
        if scope["method"] == "DELETE":
            await _status(send, 200)
            return
        msg = json.loads(body)
        if "method" not in msg:  # an answer to one of our pings
            if "result" in msg:
                self.results += 1
            else:
                code = msg["error"]["code"]
                self.errors[code] = self.errors.get(code, 0) + 1
            await _status(send, 202)
            return
        if "id" not in msg:
            await _status(send, 202)
            return
        if msg["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "flood", "version": "1"},
            }
            await _json(send, {"jsonrpc": "2.0", "id": msg["id"], "result": result}, sid=b"s1")
            return
        if msg["method"] == "tools/call" and msg["params"]["name"] == "echo":
            result = {"content": [{"type": "text", "text": "echo"}]}
            await _json(send, {"jsonrpc": "2.0", "id": msg["id"], "result": result})
            return
        await _start_sse(send)
        await self._flood(send, self.count)

    async def _flood(self, send: Any, count: int | None) -> None:
        i = 0
        while not self.stop.is_set() and (count is None or i < count):
            chunk = b"".join(_ping(i + j) + b"\n\n" for j in range(20))
            i += 20
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)
        with contextlib.suppress(TimeoutError):  # hold the stream open, never answering
            await asyncio.wait_for(self.stop.wait(), 30)
        await send({"type": "http.response.body", "body": b""})


async def _status(send: Any, status: int) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _start_sse(send: Any) -> None:
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def _json(send: Any, message: dict[str, Any], sid: bytes | None = None) -> None:
    headers = [(b"content-type", b"application/json")]
    if sid is not None:
        headers.append((b"mcp-session-id", sid))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(message).encode()})


async def _timed_out(client: Client, tool: str) -> float:
    """Call ``tool`` with the short timeout; how long until PeerTimeout was raised."""
    start = time.monotonic()
    with pytest.raises(PeerTimeout, match=f"within {CALL_TIMEOUT:g} s"):
        await client.call_tool(tool, {}, timeout=CALL_TIMEOUT)
    return time.monotonic() - start


@pytest.fixture
async def flood_app() -> AsyncIterator[FloodApp]:
    app = FloodApp()
    yield app
    app.stop.set()


# -- over HTTP ----------------------------------------------------------------------------------


async def test_a_thousand_pings_on_the_call_stream_do_not_delay_its_timeout(
    flood_app: FloodApp, sampled: Sampled
) -> None:
    async with (
        serve(flood_app) as url,
        Client(url=url, protocol_version="2025-11-25", timeout=30, trace=sampled) as client,
    ):
        elapsed = await _timed_out(client, "flood")
        assert elapsed < LATE, f"a {CALL_TIMEOUT:g} s timeout fired after {elapsed:.1f} s"
        # The session still works, promptly.
        async with asyncio.timeout(LATE):
            assert (await client.call_tool("echo", {}))["content"][0]["text"] == "echo"
        flood_app.stop.set()
    # Some pings were answered, the excess refused or dropped: never 1,000 POSTs.
    assert flood_app.results >= 1
    assert flood_app.results + sum(flood_app.errors.values()) < 1000
    assert set(flood_app.errors) <= {TOO_MANY_REQUESTS}


async def test_an_endless_flood_on_the_get_stream_neither_freezes_nor_grows(
    sampled: Sampled,
) -> None:
    app = FloodApp(endless_get=True)
    try:
        async with (
            serve(app) as url,
            Client(url=url, protocol_version="2025-11-25", timeout=30, trace=sampled) as client,
        ):
            # The flood runs on the standalone stream from the handshake on.
            async with asyncio.timeout(10):
                while app.results + sum(app.errors.values()) < 64:
                    await asyncio.sleep(0.05)
            for _ in range(2):
                elapsed = await _timed_out(client, "never")
                assert elapsed < LATE, f"a {CALL_TIMEOUT:g} s timeout fired after {elapsed:.1f} s"
                async with asyncio.timeout(LATE):
                    assert (await client.call_tool("echo", {}))["content"][0]["text"] == "echo"
                assert len(asyncio.all_tasks()) < MAX_TASKS
            assert app.errors.get(TOO_MANY_REQUESTS, 0) >= 1
            app.stop.set()
    finally:
        app.stop.set()


# -- over stdio ---------------------------------------------------------------------------------


def flood_server(mode: str, trace: Traffic) -> Client:
    """Floods without end."""
    return Client(command=PYTHON, args=[FLOOD, mode], timeout=30, trace=trace)


async def test_a_stdio_flood_does_not_starve_the_clients_own_calls(sampled: Sampled) -> None:
    async with flood_server("echo", sampled) as client:
        for _ in range(5):
            async with asyncio.timeout(LATE):
                assert (await client.call_tool("echo", {}))["content"][0]["text"] == "echo"
            await asyncio.sleep(0.1)
        assert len(asyncio.all_tasks()) < MAX_TASKS
        async with asyncio.timeout(LATE):
            counts = json.loads((await client.call_tool("count", {}))["content"][0]["text"])
    assert counts["result"] >= 1  # pings were answered all along
    assert sampled.seen["ping"] > 1000


@pytest.mark.parametrize("mode", ["mute", "deaf"])
async def test_a_stdio_flood_keeps_timeouts_on_time_and_memory_bounded(
    mode: str, sampled: Sampled
) -> None:
    """``deaf`` also stops reading its stdin: every answer the client writes backs up."""
    async with flood_server(mode, sampled) as client:
        for _ in range(3):
            elapsed = await _timed_out(client, "anything")
            assert elapsed < LATE, f"a {CALL_TIMEOUT:g} s timeout fired after {elapsed:.1f} s"
            assert len(asyncio.all_tasks()) < MAX_TASKS


# -- the limit itself ---------------------------------------------------------------------------


def _asker() -> MCPServer:
    """A server whose tool ``ask_thrice`` sends three roots/list requests at once."""
    server = MCPServer(name="asker", version="1")

    @server.tool
    async def ask_thrice(ctx: Context) -> str:
        async def one() -> str:
            try:
                await ctx.send_request("roots/list")
            except MCPError as exc:
                return f"{exc.code}: {exc}"
            return "answered"

        return json.dumps(await asyncio.gather(one(), one(), one()))

    return server


async def slow_roots() -> list[str]:
    await asyncio.sleep(0.3)  # still busy when the third request arrives
    return ["file:///w"]


async def test_requests_beyond_max_server_requests_are_refused() -> None:
    server = _asker()
    async with Client(
        server=server,
        protocol_version="2025-11-25",
        roots=slow_roots,
        max_server_requests=2,
        timeout=10,
    ) as client:
        outcome = json.loads((await client.call_tool("ask_thrice", {}))["content"][0]["text"])
        assert outcome.count("answered") == 2
        refused = next(o for o in outcome if o != "answered")
        assert refused.startswith(f"{TOO_MANY_REQUESTS}: ")
        assert "Too many concurrent requests" in refused
        # Once the first two are answered there is room again.
        again = json.loads((await client.call_tool("ask_thrice", {}))["content"][0]["text"])
        assert again.count("answered") == 2


@pytest.mark.parametrize(
    ("everyone", "own", "answered"),
    [
        (2, None, 2),  # the MCPClient's limit applies to a server without its own
        (32, 2, 2),  # a server's own limit wins over the MCPClient's
        (2, 3, 3),
    ],
)
async def test_mcp_client_passes_max_server_requests_on(
    everyone: int, own: int | None, answered: int
) -> None:
    definition: dict[str, Any] = {
        "server": _asker(),
        "roots": slow_roots,
        "protocol_version": "2025-11-25",  # server requests (2026-07-28 has none)
    }
    if own is not None:
        definition["max_server_requests"] = own
    async with MCPClient(
        servers={"asker": definition}, timeout=10, max_server_requests=everyone
    ) as mcp:
        result = await mcp.call_tool("asker", "ask_thrice")
        outcome = json.loads(result["content"][0]["text"])
    assert outcome.count("answered") == answered
    assert all(o.startswith(f"{TOO_MANY_REQUESTS}: ") for o in outcome if o != "answered")


def test_max_server_requests_comes_from_a_config_file() -> None:
    config = load_config({"mcpServers": {"a": {"command": "x", "max_server_requests": 4}}})
    assert config["a"].max_server_requests == 4
    assert load_config({"mcpServers": {"a": {"command": "x"}}})["a"].max_server_requests is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8", None])
def test_max_server_requests_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_server_requests must be a positive integer"):
        Client(command=sys.executable, max_server_requests=bad)
    with pytest.raises(ConfigurationError, match="max_server_requests must be a positive integer"):
        MCPClient(servers={}, max_server_requests=bad)
    if bad is not None:  # None in a definition means "the MCPClient's"
        with pytest.raises(
            ConfigurationError,
            match="server 'a': 'max_server_requests' must be a positive integer",
        ):
            MCPClient(servers={"a": {"command": "x", "max_server_requests": bad}})
        with pytest.raises(ConfigurationError, match="'max_server_requests' must be a positive"):
            load_config({"mcpServers": {"a": {"command": "x", "max_server_requests": bad}}})
