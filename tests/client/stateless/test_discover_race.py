"""The stdio era probe when the server is silent for a while (client/session.py ``_race``).

After ``PROBE_GRACE`` seconds without an answer to ``server/discover`` the client
sends ``initialize`` too. An accepted ``initialize`` selects the handshake era for
the whole process (2026-07-28 basic/versioning § dual-era servers), so it wins; a
refused one leaves the probe to decide (a modern-only server that starts slowly).
Real subprocesses; the slowness is a sleep in the server before it reads stdin.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcpkit.client import Client
from mcpkit.client.stateless.discover import PROBE_GRACE

FIXTURES = Path(__file__).parent.parent / "fixtures"

# Speaks 2026-07-28 only: `initialize` is an unknown method to it.
MODERN_ONLY = """
import json, sys, time
time.sleep(float(sys.argv[1]))
meta = {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1"}}
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue
    if method == "server/discover":
        out = {"result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                          "capabilities": {"tools": {}}, "_meta": meta}}
    elif method == "tools/list":
        out = {"result": {"resultType": "complete", "_meta": meta,
                          "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}
    elif method == "subscriptions/listen":
        continue  # a long-lived stream: never answered
    else:
        out = {"error": {"code": -32601, "message": "unknown method " + method}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, **out}) + "\\n")
    sys.stdout.flush()
"""

# A dual-era mcpkit server that starts slowly.
SLOW_DUAL = f"""
import sys, time
time.sleep(float(sys.argv[1]))
sys.path.insert(0, {str(FIXTURES)!r})
from demo_server import build_server
build_server().run_stdio()
"""

# Legacy, and ignores every request before `initialize` (no answer at all).
MUTE_LEGACY = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "mute", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    else:
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\\n")
    sys.stdout.flush()
"""


def _client(tmp_path: Path, source: str, *args: str, seen: list[dict[str, Any]]) -> Client:
    script = tmp_path / "server.py"
    script.write_text(source)
    return Client(
        command=sys.executable,
        args=[str(script), *args],
        timeout=30,
        trace=lambda direction, msg: seen.append({"direction": direction, **msg}),
    )


def _sent(seen: list[dict[str, Any]]) -> list[str]:
    return [m.get("method", "") for m in seen if m["direction"] == "sent"]


async def test_a_mute_legacy_server_gets_the_handshake_without_waiting_out_the_probe(
    tmp_path: Path,
) -> None:
    seen: list[dict[str, Any]] = []
    async with _client(tmp_path, MUTE_LEGACY, seen=seen) as client:
        assert client.protocol_version == "2025-11-25"
        assert [t["name"] for t in await client.list_tools()] == ["t"]
    # The probe was given up on quietly: no notifications/cancelled before the handshake.
    assert _sent(seen)[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert "notifications/cancelled" not in _sent(seen)


async def test_a_slow_modern_only_server_is_used_in_the_stateless_era(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    async with _client(tmp_path, MODERN_ONLY, str(PROBE_GRACE + 1), seen=seen) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_info["name"] == "modern"
        assert [t["name"] for t in await client.list_tools()] == ["t"]
    sent = _sent(seen)
    # initialize went out after the grace and was refused; the probe's answer decided.
    assert sent[:2] == ["server/discover", "initialize"]
    assert "notifications/initialized" not in sent
    listed = next(m for m in seen if m["direction"] == "sent" and m.get("method") == "tools/list")
    assert listed["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


async def test_a_slow_dual_era_server_keeps_the_handshake_it_accepted(tmp_path: Path) -> None:
    """Both answers come; ``initialize`` selected the legacy era for the process."""
    seen: list[dict[str, Any]] = []
    async with _client(tmp_path, SLOW_DUAL, str(PROBE_GRACE + 1), seen=seen) as client:
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["content"] == [{"type": "text", "text": "5"}]
        assert "resultType" not in result  # served by the legacy session, consistently
    assert _sent(seen)[:3] == ["server/discover", "initialize", "notifications/initialized"]


async def test_a_quick_dual_era_server_is_used_in_the_stateless_era(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    async with _client(tmp_path, SLOW_DUAL, "0", seen=seen) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["resultType"] == "complete"
    assert "initialize" not in _sent(seen)


async def test_a_reconnection_remembers_a_legacy_server_and_skips_the_probe(
    tmp_path: Path,
) -> None:
    """basic/versioning: the era is a property of the server; clients SHOULD cache it."""
    from mcpkit.client import MCPClient

    script = tmp_path / "server.py"
    script.write_text(MUTE_LEGACY)
    seen: list[str] = []
    definition = {
        "command": sys.executable,
        "args": [str(script)],
        "trace": lambda direction, msg: seen.append(f"{direction} {msg.get('method', '')}"),
    }
    async with MCPClient(servers={"old": definition}, timeout=30) as mcp:
        assert mcp.client("old").protocol_version == "2025-11-25"
        first = list(seen)
        seen.clear()
        await mcp.reconnect("old")
        assert mcp.client("old").protocol_version == "2025-11-25"
        assert list(await mcp.get_tools()) == ["old_t"]
    assert first[0] == "sent server/discover"
    assert "sent server/discover" not in seen
    assert seen[0] == "sent initialize"
