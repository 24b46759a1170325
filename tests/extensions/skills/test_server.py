"""The skills extension served in process (mcpkit.testing's Client), on both eras."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.errors import RemoteError
from mcpkit.extensions.skills import add_skills, digest, skill_from_files
from mcpkit.extensions.skills.server import SkillCatalog

from .conftest import skill_md

ERAS = ["2025-11-25", "2026-07-28"]
# The extension's methods are in no published schema.
pytestmark = pytest.mark.no_schema_check


def served(skills_dir: Path, **options: Any) -> MCPServer:
    server = MCPServer(name="skills", version="1")
    add_skills(server, skills_dir, **options)
    return server


@pytest.mark.parametrize("version", ERAS)
async def test_the_listing_carries_uris_frontmatter_digests_and_sizes(
    skills_dir: Path, version: str
) -> None:
    async with Client(server=served(skills_dir), protocol_version=version) as client:
        caps = client.server_capabilities
        listed = await client.request("skills/list")
        got = await client.request("skills/get", {"uri": "skill://pdf-forms/SKILL.md"})
    assert caps["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    assert "resources" in caps
    assert "nextCursor" not in listed
    assert isinstance(listed["ttlMs"], int) and listed["cacheScope"] in ("public", "private")
    assert [e["uri"] for e in listed["skills"]] == [
        "skill://pdf-forms/SKILL.md",
        "skill://team/csv-tidy/SKILL.md",
    ]
    pdf = listed["skills"][0]
    assert pdf["frontmatter"] == {
        "name": "pdf-forms",
        "description": "Fill PDF forms from data.",
        "license": "MIT",
        "metadata": {"author": "tests", "version": "2"},
    }
    manifest = (skills_dir / "pdf-forms" / "SKILL.md").read_bytes()
    assert pdf["resources"][0] == {
        "uri": "skill://pdf-forms/SKILL.md",
        "digest": digest(manifest),
        "size": len(manifest),
    }
    assert got["skill"] == pdf and "nextCursor" not in got


@pytest.mark.parametrize("version", ERAS)
async def test_files_are_resources_text_or_blob_as_their_bytes_are(
    skills_dir: Path, version: str
) -> None:
    async with Client(server=served(skills_dir), protocol_version=version) as client:
        resources = {r["uri"]: r for r in await client.list_resources()}
        manifest = await client.read_resource("skill://pdf-forms/SKILL.md")
        logo = await client.read_resource("skill://pdf-forms/references/logo.png")
    assert resources["skill://pdf-forms/SKILL.md"] | {"size": 0} == {
        "uri": "skill://pdf-forms/SKILL.md",
        "name": "pdf-forms",
        "description": "Fill PDF forms from data.",
        "mimeType": "text/markdown",
        "size": 0,
    }
    text = (skills_dir / "pdf-forms" / "SKILL.md").read_text()
    assert manifest["contents"][0]["text"] == text
    blob = base64.b64decode(logo["contents"][0]["blob"])
    assert blob == (skills_dir / "pdf-forms/references/logo.png").read_bytes()


async def test_an_unknown_skill_or_cursor_is_invalid_params(skills_dir: Path) -> None:
    async with Client(server=served(skills_dir)) as client:
        with pytest.raises(RemoteError) as unknown:
            await client.request("skills/get", {"uri": "skill://nope/SKILL.md"})
        with pytest.raises(RemoteError) as cursor:
            await client.request("skills/list", {"cursor": "garbage"})
    assert unknown.value.code == cursor.value.code == -32602


@pytest.mark.parametrize("page_size", [1, 2, 3, 7])
async def test_pages_hold_whole_entries_and_end(page_size: int) -> None:
    skills = [
        skill_from_files(
            f"s{i:02d}",
            {
                "SKILL.md": skill_md(f"s{i:02d}", f"skill {i}"),
                **{f"f{j}.txt": "x" for j in range(i)},
            },
        )
        for i in range(10)
    ]
    server = MCPServer(name="skills", version="1")
    add_skills(server, skills=skills, page_size=page_size)
    pages: list[list[dict[str, Any]]] = []
    async with Client(server=server) as client:
        params: dict[str, Any] = {}
        while True:
            result = await client.request("skills/list", params)
            pages.append(result["skills"])
            if "nextCursor" not in result:
                break
            params = {"cursor": result["nextCursor"]}
    assert all(len(page) == page_size for page in pages[:-1]) and 0 < len(pages[-1]) <= page_size
    entries = [e for page in pages for e in page]
    assert [e["uri"] for e in entries] == [s.uri for s in skills]  # each once, in order
    for skill, entry in zip(skills, entries, strict=True):  # never split: every file listed
        assert len(entry["resources"]) == len(skill.files)


async def _children(client: Client, uri: str) -> list[dict[str, Any]]:
    children: list[dict[str, Any]] = []
    params: dict[str, Any] = {"uri": uri}
    while True:
        result = await client.request("resources/directory/read", params)
        children.extend(result["resources"])
        if "nextCursor" not in result:
            return children
        params = {"uri": uri, "cursor": result["nextCursor"]}


async def test_directory_reads_list_direct_children_and_refuse_files(skills_dir: Path) -> None:
    async with Client(server=served(skills_dir, page_size=1)) as client:
        top = await _children(client, "skill://pdf-forms")
        sub = await _children(client, "skill://pdf-forms/references")
        with pytest.raises(RemoteError) as not_a_folder:
            await client.request("resources/directory/read", {"uri": "skill://pdf-forms/SKILL.md"})
    assert [(c["uri"], c["mimeType"]) for c in top] == [
        ("skill://pdf-forms/SKILL.md", "text/markdown"),
        ("skill://pdf-forms/references", "inode/directory"),
    ]
    assert [c["name"] for c in sub] == ["FIELDS.md", "logo.png"]
    assert not_a_folder.value.code == -32602


async def test_without_directory_read_the_method_and_flag_are_absent(skills_dir: Path) -> None:
    async with Client(server=served(skills_dir, directory_read=False)) as client:
        caps = client.server_capabilities
        with pytest.raises(RemoteError) as missing:
            await client.request("resources/directory/read", {"uri": "skill://pdf-forms"})
    assert caps["extensions"]["io.modelcontextprotocol/skills"] == {}
    assert missing.value.code == -32601


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=12),
    page_size=st.integers(min_value=1, max_value=5),
)
def test_any_paging_lists_every_entry_once_and_whole(sizes: list[int], page_size: int) -> None:
    skills = [
        skill_from_files(
            f"k{i:02d}",
            {"SKILL.md": skill_md(f"k{i:02d}", "d"), **{f"f{j}.txt": str(j) for j in range(n)}},
        )
        for i, n in enumerate(sizes)
    ]
    catalog = SkillCatalog(skills, page_size=page_size, directory_read=True)
    entries: list[dict[str, Any]] = []
    start: int | None = 0
    pages = 0
    while start is not None:
        page, cursor = catalog.page(catalog.entries, start)
        assert 0 < len(page) <= page_size
        entries.extend(page)
        pages += 1
        start = int(cursor[1:]) if cursor is not None else None
    assert pages == -(-len(skills) // page_size)
    assert [len(e["resources"]) for e in entries] == [n + 1 for n in sizes]
