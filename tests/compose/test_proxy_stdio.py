"""proxy() of a real stdio server: an example server started with ``python -m mcpkit run``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from mcpkit import Client
from mcpkit.compose import proxy

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
