"""examples/gateway_server.py: in memory on both eras, and over stdio as a user runs it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.errors import RemoteError
from tests.examples.fresh import fresh_example

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "gateway_server.py"
SERVED = {"briefing", "demo_add", "demo_forecast", "hub_weather_forecast", "hub_notes_add_note"}


@pytest.fixture
def example() -> Iterator[ModuleType]:
    with fresh_example(EXAMPLE) as module:
        yield module


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_gateway_serves_both_upstreams_under_their_names(
    example: ModuleType, version: str
) -> None:
    server: MCPServer = example.server
    async with Client(server=server, protocol_version=version, timeout=30.0) as client:
        assert {t["name"] for t in await client.list_tools()} == SERVED
        added = await client.call_tool("demo_add", {"a": 2, "b": 3})
        assert added["content"][0]["text"] == "5"
        forecast = await client.call_tool("hub_weather_forecast", {"city": "Rome"})
        assert forecast["content"][0]["text"] == "Sunny in Rome, 21°C"
        with pytest.raises(RemoteError, match="Unknown tool: demo_count_slowly"):
            await client.call_tool("demo_count_slowly", {"to": 1})
        read = await client.read_resource("weather://hub/weather/stations")
        assert read["contents"][0]["text"] == "Paris, Oslo, Rome"
        brief = await client.call_tool("briefing", {"city": "Oslo"})
        assert brief["content"][0]["text"] == (
            'settings: {"theme":"dark","language":"en"}\n'
            "prompt: Write a two-line weather report for Oslo."
        )


async def test_run_with_one_command_over_stdio() -> None:
    """``mcpkit run examples/gateway_server.py``, driven by mcpkit's own client."""
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(EXAMPLE)],
        cwd=REPO,
        timeout=30.0,
    ) as client:
        assert {t["name"] for t in await client.list_tools()} == SERVED
        added = await client.call_tool("hub_notes_add_note", {"text": "call mum"})
        assert added["content"][0]["text"] == "1 note(s)"
