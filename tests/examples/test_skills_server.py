"""examples/skills_server.py: its skills listed and verified in memory and over stdio."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.extensions.skills import digest
from mcpkit.extensions.skills.client import SkillsClient
from tests.examples.fresh import fresh_example

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "skills_server.py"
SKILLS = REPO / "examples" / "skills"
TIMEOUT = 30.0

pytestmark = pytest.mark.no_schema_check  # the extension's methods are in no schema


@pytest.fixture
def example() -> Iterator[ModuleType]:
    with fresh_example(EXAMPLE) as module:
        yield module


async def check(client: Client) -> None:
    assert "io.modelcontextprotocol/skills" in client.server_capabilities["extensions"]
    skills = SkillsClient(client)
    entries = await skills.list()
    assert [e.name for e in entries] == ["changelog-writer", "csv-cleanup"]
    assert len(entries) >= 2
    for entry in entries:
        loaded = await skills.load(entry)
        path = SKILLS / entry.name / "SKILL.md"
        assert loaded.text.encode() == path.read_bytes()
    script = await skills.read_file(entries[1], "skill://csv-cleanup/scripts/clean.py")
    assert digest(script) == digest((SKILLS / "csv-cleanup/scripts/clean.py").read_bytes())
    tool = await client.call_tool("skill_count", {})
    assert tool["content"][0]["text"] == "2"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_example_skills_in_memory(example: ModuleType, version: str) -> None:
    server: MCPServer = example.server
    async with Client(server=server, protocol_version=version) as client:
        await check(client)


async def test_the_example_skills_over_stdio() -> None:
    """``mcpkit run examples/skills_server.py``, read and verified by mcpkit's own client."""
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(EXAMPLE)],
        cwd=REPO,
        timeout=TIMEOUT,
    ) as client:
        await check(client)
