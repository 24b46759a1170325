"""examples/mount_server.py: in memory on both eras, and over stdio as a user runs it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client
from tests.examples.fresh import fresh_example

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mount_server.py"


@pytest.fixture
def example() -> Iterator[ModuleType]:
    """A fresh copy of the example per test (its notes server gains a tool)."""
    with fresh_example(EXAMPLE) as module:
        yield module


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_hub_serves_both_servers_under_their_namespaces(
    example: ModuleType, version: str
) -> None:
    server: MCPServer = example.server
    async with Client(server=server, protocol_version=version) as client:
        names = {t["name"] for t in (await client.list_tools())}
        assert names == {"weather_forecast", "notes_add_note"}
        result = await client.call_tool("weather_forecast", {"city": "Oslo"})
        assert result["content"][0]["text"] == "Sunny in Oslo, 21°C"
        read = await client.read_resource("weather://weather/stations")
        assert read["contents"][0]["text"] == "Paris, Oslo, Rome"
        prompt = await client.get_prompt("weather_report", {"city": "Rome"})
        assert "Rome" in prompt["messages"][0]["content"]["text"]
        added = await client.call_tool("notes_add_note", {"text": "buy milk"})
        assert added["content"][0]["text"] == "1 note(s)"
        await asyncio.sleep(0.05)
        assert "notes_clear_notes" in {t["name"] for t in (await client.list_tools())}
        cleared = await client.call_tool("notes_clear_notes")
        assert cleared["content"][0]["text"] == "cleared"


async def test_run_with_one_command_over_stdio() -> None:
    """``mcpkit run examples/mount_server.py``, driven by mcpkit's own client."""
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(EXAMPLE)],
        cwd=REPO,
        timeout=30.0,
    ) as client:
        added = await client.call_tool("notes_add_note", {"text": "call mum"})
        assert added["content"][0]["text"] == "1 note(s)"
        forecast = await client.call_tool("weather_forecast", {"city": "Paris"})
        assert forecast["content"][0]["text"] == "Sunny in Paris, 21°C"
