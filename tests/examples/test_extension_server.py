"""examples/extension_server.py: in memory on both eras, and over stdio as a user runs it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.errors import RemoteError
from tests.examples.fresh import fresh_example

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "extension_server.py"
TIMEOUT = 30.0


@pytest.fixture
def example() -> Iterator[ModuleType]:
    """A fresh copy of the example per test (its counter keeps state)."""
    with fresh_example(EXAMPLE) as module:
        yield module


# The extension's methods are in no schema: what the client sends is not checked here
# (tests/server/test_extension.py checks the specification's messages around them).
@pytest.mark.no_schema_check
@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_counter_extension_on_both_eras(example: ModuleType, version: str) -> None:
    server: MCPServer = example.server
    storage: Any = example.storage
    async with Client(
        server=server, protocol_version=version, extensions=[example.counter]
    ) as client:
        assert storage.open  # the extension's lifespan runs while serving
        assert client.server_capabilities["extensions"]["com.example/counter"] == {"max": 1000}
        assert (await client.request("com.example.counter/add", {"by": 2}))["value"] == 2
        assert (await client.request("com.example.counter/add"))["value"] == 3
        with pytest.raises(RemoteError, match="positive integer"):
            await client.request("com.example.counter/add", {"by": -1})
        got = await client.request("com.example.counter/get")
        tool = await client.call_tool("count", {})
    assert not storage.open
    assert got["value"] == 3 and got["requests"] >= 4  # the middleware saw each request
    assert tool["content"][0]["text"] == "3"


@pytest.mark.no_schema_check  # the extension's methods are in no schema
async def test_run_with_one_command_over_stdio() -> None:
    """``mcpkit run examples/extension_server.py``, driven by mcpkit's own client."""
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(EXAMPLE)],
        cwd=REPO,
        timeout=TIMEOUT,
    ) as client:
        assert client.server_capabilities["extensions"]["com.example/counter"] == {"max": 1000}
        assert (await client.request("com.example.counter/add", {"by": 5}))["value"] == 5
        assert (await client.request("com.example.counter/get"))["value"] == 5
