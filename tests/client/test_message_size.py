"""max_message_size: a server that never ends a message fails the call, the client's memory
stays bounded.

Hostile peers: a stdio server writing an endless line, and HTTP servers (hand-written ASGI
apps on uvicorn, real sockets) answering with an endless JSON body or with SSE ``data:``
lines that never reach the blank line ending the event. Memory is measured with
tracemalloc in this process (the client's buffers): without the limit the client would
buffer everything the peer sends (128 MiB here, until the call times out).
"""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit.client import Client, MCPClient, load_config
from mcpkit.client.transports.base import MessageTooLarge
from mcpkit.errors import ConfigurationError
from tests.client.conftest import PYTHON, RAW
from tests.client.http_servers import read_body, serve

MiB = 1024 * 1024
PEER_CAP = 128 * MiB  # what a hostile peer sends at most (so a regression cannot eat the box)


@pytest.fixture
def peak_memory() -> Iterator[Callable[[], int]]:
    """``peak_memory()``: the most memory Python allocated in this process so far in the
    test, in bytes."""
    tracemalloc.start()
    try:
        yield lambda: tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_error(exc: BaseException, server: str, limit: str) -> None:
    message = str(exc)
    assert server in message
    assert f"larger than max_message_size ({limit})" in message
    assert "raise max_message_size" in message


# -- stdio ---------------------------------------------------------------------------------------


async def test_an_endless_stdout_line_fails_the_call_and_stops_the_reading(
    tmp_path: Path, peak_memory: Callable[[], int]
) -> None:
    sent = tmp_path / "sent"
    servers = {
        "hostile": {
            "command": PYTHON,
            "args": [RAW, "endless", str(sent)],
            "max_message_size": MiB,  # the server's own setting wins over the client's
        }
    }
    async with MCPClient(servers=servers, timeout=30, max_message_size=64 * MiB) as mcp:
        start = time.monotonic()
        with pytest.raises(MessageTooLarge) as info:
            await mcp.call_tool("hostile", "anything")
        assert time.monotonic() - start < 20.0  # not the call's 30 s timeout
        check_error(info.value, "'hostile'", "1 MiB")
        assert "stdout" in str(info.value)
        # The client stopped reading: the server's writes failed soon after the limit.
        for _ in range(500):
            if sent.exists() and sent.read_text():
                break
            await asyncio.sleep(0.02)
        assert int(sent.read_text()) < 16 * MiB
    assert peak_memory() < 24 * MiB  # generous; unbounded would be 128 MiB


# -- Streamable HTTP -----------------------------------------------------------------------------


def hostile_app(answer: str) -> Any:
    """A Streamable HTTP server that answers tools/call with an endless ``answer``:
    ``"json"`` (a JSON body that never ends) or ``"sse"`` (data lines, never a blank line).
    Any other request gets an empty result, so the session is usable after the failure."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        if scope["method"] != "POST":  # no standalone stream; DELETE: fine
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        msg = json.loads(body)
        if "id" not in msg:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        json_headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
        if msg["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif msg["method"] != "tools/call":
            result = {}
        else:
            await endless(msg["id"], answer, send)
            return
        reply = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": json_headers})
        await send({"type": "http.response.body", "body": reply})

    return app


async def endless(rid: Any, answer: str, send: Any) -> None:
    ctype = b"application/json" if answer == "json" else b"text/event-stream"
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", ctype)]}
    )
    head = '{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "'
    first = (head % json.dumps(rid)).encode()
    if answer == "sse":
        first = b"data: " + first + b"\n"
    await send({"type": "http.response.body", "body": first, "more_body": True})
    chunk = b"x" * 65536 if answer == "json" else b"data: " + b"x" * 65530 + b"\n"
    for _ in range(PEER_CAP // len(chunk)):
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


@pytest.mark.parametrize(
    ("answer", "what"), [("json", "as an HTTP body"), ("sse", "as an SSE event")]
)
async def test_an_endless_http_answer_fails_the_call_and_the_session_survives(
    answer: str, what: str, peak_memory: Callable[[], int]
) -> None:
    async with (
        serve(hostile_app(answer)) as url,
        Client(
            url=url,
            name="hostile",
            timeout=30,
            max_message_size=MiB,
            protocol_version="2025-11-25",
        ) as client,
    ):
        start = time.monotonic()
        with pytest.raises(MessageTooLarge) as info:
            await client.call_tool("anything")
        assert time.monotonic() - start < 20.0  # not the call's 30 s timeout
        check_error(info.value, f"hostile ({url})", "1 MiB")
        assert what in str(info.value)
        await client.ping(timeout=10)  # only that request failed
    assert peak_memory() < 24 * MiB  # generous; unbounded would be 128 MiB


async def test_a_content_length_over_the_limit_fails_before_reading() -> None:
    release = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", b"999999999")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{", "more_body": True})
        await release.wait()  # never sends the rest

    async with serve(app) as url:
        start = time.monotonic()
        try:
            with pytest.raises(MessageTooLarge, match="as an HTTP body of 999999999 bytes"):
                async with Client(
                    url=url, http_transport="streamable-http", timeout=20, max_message_size=MiB
                ):
                    pass
        finally:
            release.set()
        assert time.monotonic() - start < 10.0


# -- legacy HTTP+SSE ------------------------------------------------------------------------------


def hostile_sse_app() -> tuple[Any, asyncio.Queue[Any]]:
    """A legacy HTTP+SSE server whose answer to tools/call is an SSE event that never ends."""
    outbox: asyncio.Queue[Any] = asyncio.Queue()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        if scope["method"] == "GET":
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            first = b"event: endpoint\ndata: /messages\n\n"
            await send({"type": "http.response.body", "body": first, "more_body": True})
            while (item := await outbox.get()) is not None:
                if item == "endless":
                    chunk = b"data: " + b"x" * 65530 + b"\n"  # never a blank line
                    for _ in range(PEER_CAP // len(chunk)):
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    break
                event = b"event: message\ndata: " + json.dumps(item).encode() + b"\n\n"
                await send({"type": "http.response.body", "body": event, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        msg = json.loads(body)
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        if msg.get("method") == "initialize":
            result = {
                "protocolVersion": "2024-11-05",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            outbox.put_nowait({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        elif msg.get("method") == "tools/call":
            outbox.put_nowait("endless")

    return app, outbox


async def test_an_endless_event_on_a_legacy_sse_stream_fails_the_call(
    peak_memory: Callable[[], int],
) -> None:
    app, outbox = hostile_sse_app()
    try:
        async with (
            serve(app, path="/sse") as url,
            Client(url=url, name="legacy", timeout=30, max_message_size=MiB) as client,
        ):
            start = time.monotonic()
            with pytest.raises(MessageTooLarge) as info:
                await client.call_tool("anything")
            assert time.monotonic() - start < 20.0  # not the call's 30 s timeout
            check_error(info.value, f"legacy ({url})", "1 MiB")
            assert "as an SSE event" in str(info.value)
    finally:
        outbox.put_nowait(None)
    assert peak_memory() < 24 * MiB  # generous; unbounded would be 128 MiB


# -- the option ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, 100, 1.5e6, "32MiB", True, None])
def test_max_message_size_is_validated(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_message_size must be a whole number"):
        Client(command="x", max_message_size=bad)
    with pytest.raises(ConfigurationError, match="max_message_size must be a whole number"):
        MCPClient(servers={}, max_message_size=bad)
    if bad is not None:
        with pytest.raises(ConfigurationError, match="server 'a': 'max_message_size' must be"):
            MCPClient(servers={"a": {"command": "x", "max_message_size": bad}})


def test_max_message_size_comes_from_a_config_file() -> None:
    config = load_config({"mcpServers": {"a": {"command": "x", "max_message_size": 4096}}})
    assert config["a"].max_message_size == 4096
