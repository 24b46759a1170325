"""A ``subscriptions/listen`` stream does not hold a stdio server open after stdin EOF.

The stream has no end of its own; the client closing stdin is done listening
(2026-07-28 transports/stdio § shutdown). Ordinary requests still get the
shutdown grace. The grace is set far longer than the test waits, so waiting it
out cannot pass.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from mcpkit.client.stateless.discover import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY

SERVER = """
import asyncio
from mcpkit import MCPServer
from mcpkit.transports.stdio import serve_stdio

server = MCPServer(name="listen-eof", version="1")

@server.tool
async def slow() -> str:
    await asyncio.sleep(0.5)
    return "finished"

asyncio.run(serve_stdio(server, shutdown_grace=60.0))
"""
META = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}


def line(rid: int, method: str, params: dict[str, object]) -> bytes:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}}
    return json.dumps(msg).encode() + b"\n"


async def test_stdin_eof_ends_listen_streams_but_lets_calls_finish(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), stdin=-1, stdout=-1, stderr=-1
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        async with asyncio.timeout(20):
            listen = {"notifications": {"toolsListChanged": True}}
            proc.stdin.write(line(1, "subscriptions/listen", listen))
            ack = json.loads(await proc.stdout.readline())
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            proc.stdin.write(line(2, "tools/call", {"name": "slow", "arguments": {}}))
            await proc.stdin.drain()
            proc.stdin.close()  # EOF while a call is running and the listen is open
            answer = json.loads(await proc.stdout.readline())
            assert answer["id"] == 2
            assert answer["result"]["content"] == [{"type": "text", "text": "finished"}]
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
