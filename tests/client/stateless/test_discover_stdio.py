"""The era probe on stdio: legacy servers that refuse or ignore ``server/discover``.

2026-07-28 transports/stdio § backward compatibility: any error that is not a modern
one, or no answer in time, means a legacy server; the client then runs the handshake.
The servers are real subprocesses speaking only the 2025-11-25 handshake.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from mcpkit.client import Client, MCPClient
from mcpkit.client.config import parse_servers
from mcpkit.errors import ConfigurationError

LEGACY = """
import json, sys
mode = sys.argv[1]
ready = False
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        ready = True
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "legacy", "version": "0"}}
    elif rid is None:
        continue
    elif not ready:
        if mode == "mute":
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                         "error": {"code": -32601, "message": "Method not found"}}) + "\\n")
        sys.stdout.flush()
        continue
    else:
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "saw": msg}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("mode", ["error", "mute"])
async def test_legacy_stdio_server_gets_the_handshake(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "legacy.py"
    script.write_text(LEGACY)
    seen: list[str] = []
    started = time.monotonic()
    async with Client(
        command=sys.executable,
        args=[str(script), mode],
        protocol_version="2026-07-28",
        connect_timeout=1.0,
        timeout=10,
        trace=lambda direction, msg: seen.append(f"{direction} {msg.get('method', '')}"),
    ) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info["name"] == "legacy"
        assert [t["name"] for t in await client.list_tools()] == ["t"]
    sent = [s.split(" ", 1)[1] for s in seen if s.startswith("sent")]
    assert sent[0] == "server/discover"
    # A probe given up on (mute) is left unanswered, not cancelled: the handshake follows.
    assert sent[1:4] == ["initialize", "notifications/initialized", "tools/list"]
    assert "notifications/cancelled" not in sent
    if mode == "error":
        assert time.monotonic() - started < 5  # no waiting out the probe's timeout


async def test_server_definitions_choose_the_revision(tmp_path: Path) -> None:
    """``protocol_version`` in an MCPClient definition reaches the connection (and is checked)."""
    script = tmp_path / "legacy.py"
    script.write_text(LEGACY)
    seen: list[str] = []
    definition = {
        "command": sys.executable,
        "args": [str(script), "error"],
        "protocol_version": "2026-07-28",
        "trace": lambda direction, msg: seen.append(msg.get("method", "")),
    }
    async with MCPClient(servers={"old": definition}) as mcp:
        assert list(await mcp.get_tools()) == ["old_t"]
        assert mcp.client("old").protocol_version == "2025-11-25"
    assert seen[0] == "server/discover" and "initialize" in seen
    with pytest.raises(ConfigurationError, match="'protocol_version' must be one of"):
        parse_servers({"x": {"command": "x", "protocol_version": "2030-01-01"}})
