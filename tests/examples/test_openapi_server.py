"""examples/openapi_server.py: in memory on both eras, and over stdio as a user runs it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client
from tests.examples.fresh import fresh_example

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "openapi_server.py"


@pytest.fixture
def example() -> Iterator[ModuleType]:
    """A fresh copy of the example per test (its app keeps a pet store)."""
    with fresh_example(EXAMPLE) as module:
        yield module


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_apps_operations_are_tools_that_reach_it(
    example: ModuleType, version: str
) -> None:
    server: MCPServer = example.server
    async with Client(server=server, protocol_version=version) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        # The admin operation is excluded by its tag.
        assert set(tools) == {"list_pets", "get_pet", "create_pet", "delete_pet"}
        assert tools["create_pet"]["inputSchema"]["required"] == ["name", "species", "age"]
        # The app's lifespan ran: Tom is in the store.
        listed = await client.call_tool("list_pets", {"species": "cat"})
        assert [p["name"] for p in listed["structuredContent"]["result"]] == ["Tom"]
        created = await client.call_tool(
            "create_pet",
            {"name": "Rex", "species": "dog", "age": 2, "owner": {"name": "Bo"}},
        )
        assert created["structuredContent"]["id"] == 2
        assert created["structuredContent"]["owner"] == {"name": "Bo", "email": None}
        missing = await client.call_tool("get_pet", {"pet_id": 9})
        assert missing["isError"] is True
        assert missing["content"][0]["text"] == (
            'GET /pets/{pet_id}: HTTP 404 Not Found: {"detail":"no pet 9"}'
        )
        bad = await client.call_tool("create_pet", {"name": "X", "species": "bird", "age": 1})
        assert bad["isError"] is True and "'bird' is not one of" in bad["content"][0]["text"]


async def test_run_with_one_command_over_stdio() -> None:
    """``mcpkit run examples/openapi_server.py``, driven by mcpkit's own client."""
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(EXAMPLE)],
        cwd=REPO,
        timeout=30.0,
    ) as client:
        pet = await client.call_tool("get_pet", {"pet_id": 1})
        assert pet["structuredContent"]["name"] == "Tom"
        deleted = await client.call_tool("delete_pet", {"pet_id": 1})
        assert deleted["content"][0]["text"] == "HTTP 204 No Content"
        gone = await client.call_tool("get_pet", {"pet_id": 1})
        assert gone["isError"] is True
