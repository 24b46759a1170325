"""proxy() of a real stdio server: an example server started with ``python -m mcpkit run``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client
from mcpkit.compose import proxy
from mcpkit.errors import RemoteError

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_server.py"


async def test_a_stdio_upstream_is_served_through_one_process_per_session() -> None:
    command = shlex.join([sys.executable, "-m", "mcpkit", "run", str(DEMO)])
    server = proxy(command, name="demo-proxy")
    progress: list[float] = []
    logs: list[Any] = []
    async with Client(
        server=server, log_handler=logs.append, protocol_version="2025-11-25"
    ) as client:
        names = {t["name"] for t in await client.list_tools()}
        assert {"add", "forecast", "count_slowly"} <= names
        for a in range(3):
            result = await client.call_tool("add", {"a": a, "b": 1})
            assert result["content"][0]["text"] == str(a + 1)
        counted = await client.call_tool(
            "count_slowly", {"to": 2}, progress=lambda p, t, m: progress.append(p)
        )
        assert counted["content"][0]["text"] == "counted to 2"
        note = await client.read_resource("notes://missing")
        assert "no note called" in note["contents"][0]["text"]
        styles = await client.complete({"type": "ref/prompt", "name": "greeting"}, "style", "f")
        assert styles["values"] == ["friendly", "formal"]
        (source,) = server.component_sources
        assert len(source.upstreams) == 1  # type: ignore[attr-defined]
    assert progress == [1, 2]
    assert [entry["data"] for entry in logs] == ["counted 1", "counted 2"]


MORTAL = """
import os
from mcpkit import MCPServer

server = MCPServer(name="mortal", version="1.0.0")

@server.tool
def pid() -> int:
    return os.getpid()

@server.tool
def die() -> str:
    os._exit(3)
"""


async def test_an_upstream_that_dies_is_a_clear_error_and_the_next_call_restarts_it(
    tmp_path: Path,
) -> None:
    script = tmp_path / "mortal.py"
    script.write_text(MORTAL)
    server = proxy(shlex.join([sys.executable, "-m", "mcpkit", "run", str(script)]))
    async with Client(server=server, protocol_version="2025-11-25") as client:
        first = (await client.call_tool("pid", {}))["content"][0]["text"]
        with pytest.raises(RemoteError, match=r"upstream server .* is unavailable") as exc:
            await client.call_tool("die", {})
        assert exc.value.code == -32603
        second = (await client.call_tool("pid", {}))["content"][0]["text"]
        assert second != first  # a new upstream process, same downstream session
