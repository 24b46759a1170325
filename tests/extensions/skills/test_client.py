"""The client helpers verify what they read, and read nothing they were not asked for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpkit import CallNext, MCPClient, MCPServer, MiddlewareContext
from mcpkit.client import Client
from mcpkit.extensions.skills import add_skills
from mcpkit.extensions.skills.client import (
    SkillEntry,
    SkillsClient,
    SkillVerificationError,
    skills_by_server,
)

pytestmark = pytest.mark.no_schema_check  # the extension's methods are in no schema

Tamper = Callable[[str], str]


def served(skills_dir: Path, *, tamper: Tamper | None = None) -> tuple[MCPServer, list[str]]:
    """The skills of ``skills_dir``; every method called is recorded, reads may be altered."""
    server = MCPServer(name="skills", version="1")
    add_skills(server, skills_dir)
    calls: list[str] = []

    async def watch(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        calls.append(f"{ctx.method} {ctx.params.get('uri', '')}".strip())
        result = await call_next(ctx)
        if tamper is not None and ctx.method == "resources/read":
            for item in result["contents"]:
                if "text" in item:
                    item["text"] = tamper(item["text"])
        return result

    server.add_middleware(watch)
    return server, calls


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_lists_then_loads_only_what_is_asked_for(skills_dir: Path, version: str) -> None:
    server, calls = served(skills_dir)
    async with Client(server=server, protocol_version=version) as client:
        skills = SkillsClient(client)
        entries = await skills.list()
        after_listing = [c for c in calls if c.startswith("resources/")]
        loaded = await skills.load(entries[0])
        fields = await skills.read_file(entries[0], "skill://pdf-forms/references/FIELDS.md")
    assert [e.name for e in entries] == ["pdf-forms", "csv-tidy"]
    assert entries[1].description == "Tidy CSV files."
    assert after_listing == []  # listing fetched no file
    reads = [c for c in calls if c.startswith("resources/read")]
    assert reads == [
        "resources/read skill://pdf-forms/SKILL.md",
        "resources/read skill://pdf-forms/references/FIELDS.md",
    ]
    assert loaded.body.strip() == "Do the thing."
    assert fields == (skills_dir / "pdf-forms/references/FIELDS.md").read_bytes()


async def test_a_tampered_file_is_caught_by_its_digest(skills_dir: Path) -> None:
    # Same length, other bytes: only the digest can tell.
    server, _ = served(skills_dir, tamper=lambda text: text.replace("Do the", "Rm -rf"))
    async with Client(server=server) as client:
        skills = SkillsClient(client)
        entry = (await skills.list())[0]
        with pytest.raises(SkillVerificationError, match="does not match its digest"):
            await skills.load(entry)


async def test_a_file_of_another_size_is_refused(skills_dir: Path) -> None:
    server, _ = served(skills_dir, tamper=lambda text: text + "one more line\n")
    async with Client(server=server) as client:
        skills = SkillsClient(client)
        entry = (await skills.list())[0]
        with pytest.raises(SkillVerificationError, match="bytes read"):
            await skills.read_file(entry, "skill://pdf-forms/references/FIELDS.md")


async def test_frontmatter_that_differs_from_the_entry_is_refused(skills_dir: Path) -> None:
    server, _ = served(skills_dir)
    async with Client(server=server) as client:
        skills = SkillsClient(client)
        listed = (await skills.list())[1]
        # An entry whose digest matches the file but whose frontmatter was altered.
        forged = SkillEntry(
            listed.uri, {**listed.frontmatter, "description": "Something else."}, listed.files
        )
        with pytest.raises(
            SkillVerificationError, match=r"differs from the entry in \['description'\]"
        ):
            await skills.load(forged)


async def test_files_outside_the_entry_or_over_the_limit_are_not_read(skills_dir: Path) -> None:
    server, calls = served(skills_dir)
    async with Client(server=server) as client:
        skills = SkillsClient(client, max_file_bytes=10)
        entry = (await skills.list())[0]
        with pytest.raises(SkillVerificationError, match="not a file of the skill"):
            await skills.read_file(entry, "skill://team/csv-tidy/SKILL.md")
        with pytest.raises(SkillVerificationError, match="more than the 10 allowed"):
            await skills.load(entry)
    assert not [c for c in calls if c.startswith("resources/read")]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda e: e["frontmatter"].update(name="other"), "is not the URI's"),
        (lambda e: e["resources"][0].update(digest="md5:abc"), "is not sha256"),
        (lambda e: e["resources"].pop(0), "do not list the SKILL.md"),
        (lambda e: e["resources"][1].update(uri="skill://elsewhere/x"), "outside the skill"),
    ],
)
def test_malformed_entries_are_refused(
    mutate: Callable[[dict[str, Any]], Any], reason: str
) -> None:
    entry: dict[str, Any] = {
        "uri": "skill://a/SKILL.md",
        "frontmatter": {"name": "a", "description": "d"},
        "resources": [
            {"uri": "skill://a/SKILL.md", "digest": "sha256:" + "0" * 64, "size": 1},
            {"uri": "skill://a/b.txt", "digest": "sha256:" + "1" * 64, "size": 2},
        ],
    }
    SkillEntry.parse(entry)
    mutate(entry)
    with pytest.raises(SkillVerificationError, match=reason):
        SkillEntry.parse(entry)


async def test_skills_of_every_server_of_an_mcp_client(skills_dir: Path) -> None:
    server, _ = served(skills_dir)
    plain = MCPServer(name="plain", version="1")
    async with MCPClient(servers={"skills": {"server": server}, "plain": {"server": plain}}) as mcp:
        by_server = await skills_by_server(mcp)
        loaded = await SkillsClient(mcp.client("skills")).load(by_server["skills"][1])
    assert list(by_server) == ["skills"]
    assert [e.name for e in by_server["skills"]] == ["pdf-forms", "csv-tidy"]
    assert loaded.entry.name == "csv-tidy"
