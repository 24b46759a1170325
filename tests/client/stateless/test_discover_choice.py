"""The era a client left to choose takes when it has handlers: the modern-only cases.

With sampling, elicitation or roots handlers and no ``protocol_version``, a client that
found a modern server not declaring ``mcpkit/input-rounds`` tries ``initialize``
(``mcpkit.client.stateless.discover.prefers_handshake``). A modern-only server refuses it, and the
client must end on 2026-07-28 all the same: over stdio after a second process (the first
one may have fixed its era with the probe), over Streamable HTTP at once. The dual-era
peers (FastMCP, the official SDK, mcpkit) are in ``tests/interop/test_era_choice.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcpkit.client import Client
from mcpkit.client.stateless.discover import prefers_handshake
from tests.client.conftest import FIXTURES
from tests.interop.fixtures.peers import Wire
from tests.transports.conftest import run_app

MODERN = "2026-07-28"
MODERN_ONLY = str(FIXTURES / "modern_only_server.py")
INFO = {"io.modelcontextprotocol/serverInfo": {"name": "modern-only", "version": "1"}}


def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "decline"}


def test_only_a_client_with_handlers_prefers_the_handshake() -> None:
    plain = {"capabilities": {"tools": {}}}
    declared = {"capabilities": {"tools": {}, "extensions": {"mcpkit/input-rounds": {}}}}
    for capability in ("sampling", "elicitation", "roots"):
        assert prefers_handshake(plain, {capability: {}})
        assert not prefers_handshake(declared, {capability: {}})
    assert not prefers_handshake(plain, {})
    assert not prefers_handshake(plain, {"experimental": {}})
    assert prefers_handshake({"capabilities": {"extensions": []}}, {"roots": {}})


async def test_a_modern_only_stdio_server_is_started_again_then_kept_on_2026(
    tmp_path: Path,
) -> None:
    log, wire = tmp_path / "starts.log", Wire()
    async with Client(
        command=sys.executable,
        args=[MODERN_ONLY, str(log)],
        elicitation_handler=elicit,
        trace=wire,
        timeout=10,
    ) as client:
        assert client.protocol_version == MODERN
        assert (await client.call_tool("hello", {}))["content"][0]["text"] == "hello"
    assert log.read_text().splitlines() == ["started", "started"]
    sent = [m["method"] for m in wire.sent() if m.get("method") != "notifications/cancelled"]
    # The probe, initialize refused; a new process: initialize refused, the probe again.
    assert sent[:5] == [
        "server/discover",
        "initialize",
        "initialize",
        "server/discover",
        "tools/call",
    ]


async def modern_only_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The same modern-only server over Streamable HTTP (plain JSON answers, no session)."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    msg = json.loads(body) if body else {}
    status, answer = 202, None
    if msg.get("method") == "initialize":
        error = {"code": -32022, "message": "only 2026-07-28", "data": {"supported": [MODERN]}}
        status, answer = 400, {"jsonrpc": "2.0", "id": msg["id"], "error": error}
    elif msg.get("method") == "server/discover":
        result = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": INFO,
        }
        status, answer = 200, {"jsonrpc": "2.0", "id": msg["id"], "result": result}
    elif msg.get("method") == "tools/call":
        result = {"content": [{"type": "text", "text": "hello"}], "resultType": "complete"}
        status, answer = 200, {"jsonrpc": "2.0", "id": msg["id"], "result": result}
    payload = b"" if answer is None else json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json")] if answer is not None else []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def test_a_modern_only_http_server_is_kept_on_2026() -> None:
    wire = Wire()
    async with run_app(modern_only_app) as base:
        async with Client(
            url=f"{base}/mcp", elicitation_handler=elicit, trace=wire, timeout=10
        ) as client:
            assert client.protocol_version == MODERN
            assert (await client.call_tool("hello", {}))["content"][0]["text"] == "hello"
    sent = [m["method"] for m in wire.sent()]
    assert sent == ["server/discover", "initialize", "tools/call"]


async def test_a_client_that_speaks_only_2026_does_not_try_the_handshake(tmp_path: Path) -> None:
    log, wire = tmp_path / "starts.log", Wire()
    async with Client(
        command=sys.executable,
        args=[MODERN_ONLY, str(log)],
        supported_versions=(MODERN,),
        elicitation_handler=elicit,
        trace=wire,
        timeout=10,
    ) as client:
        assert client.protocol_version == MODERN
    assert [m["method"] for m in wire.sent()] == ["server/discover"]
    assert log.read_text().splitlines() == ["started"]
