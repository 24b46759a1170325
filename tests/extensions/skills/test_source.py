"""Skills read from a real directory, and bad skills refused at start-up with every problem."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpkit import MCPServer
from mcpkit.errors import RegistrationError
from mcpkit.extensions.skills import add_skills, digest, load_skills, skill_from_files

from .conftest import skill_md, write


def test_every_folder_with_a_skill_md_is_a_skill_with_all_its_files(skills_dir: Path) -> None:
    skills = {s.path: s for s in load_skills(skills_dir)}
    assert sorted(skills) == ["pdf-forms", "team/csv-tidy"]
    pdf = skills["pdf-forms"]
    assert sorted(pdf.files) == ["SKILL.md", "references/FIELDS.md", "references/logo.png"]
    assert pdf.frontmatter["metadata"] == {"author": "tests", "version": "2"}
    entry = pdf.entry()
    assert entry["uri"] == "skill://pdf-forms/SKILL.md"
    logo = (skills_dir / "pdf-forms/references/logo.png").read_bytes()
    assert {
        "uri": "skill://pdf-forms/references/logo.png",
        "digest": digest(logo),
        "size": len(logo),
    } in entry["resources"]
    assert skills["team/csv-tidy"].uri == "skill://team/csv-tidy/SKILL.md"


def test_bad_skills_are_refused_at_start_up_with_every_problem_listed(tmp_path: Path) -> None:
    root = write(
        tmp_path / "bad",
        {
            "Bad_Name/SKILL.md": skill_md("Bad_Name", "upper case and underscore"),
            "mismatch/SKILL.md": skill_md("other-name", "name is not the folder's"),
            "no-description/SKILL.md": "---\nname: no-description\n---\nbody\n",
            "unquoted/SKILL.md": skill_md("unquoted", "x", extra="version: 1.0\n"),
            "reserved/SKILL.md": skill_md(
                "reserved", "x", extra="metadata:\n  io.modelcontextprotocol/x: value\n"
            ),
            "no-frontmatter/SKILL.md": "# just a title\n",
            "a/dup/SKILL.md": skill_md("dup", "first"),
            "b/dup/SKILL.md": skill_md("dup", "second"),
            "big/SKILL.md": skill_md("big", "too many files"),
            **{f"big/f{i}.txt": "x" for i in range(512)},
        },
    )
    os.symlink("/etc/hostname", root / "mismatch" / "link.txt")
    server = MCPServer(name="s", version="1")
    with pytest.raises(RegistrationError) as info:
        add_skills(server, root)
    text = "\n".join(info.value.problems)
    for expected in (
        "'Bad_Name'",
        "'other-name' must equal the folder name 'mismatch'",
        "non-empty 'description'",
        "'1.0' would be read as a number",
        "io.modelcontextprotocol/ prefix is reserved",
        "must begin with a '---' line",
        "share the name 'dup'",
        "513 files, more than 512",
        "link.txt is a symbolic link",
    ):
        assert expected in text, text
    # Nothing was added: no capability, no method, no resource.
    assert server.extensions == {}
    assert server.resources.static == {}


def test_skills_given_in_code_obey_the_same_rules() -> None:
    good = skill_from_files("hello", {"SKILL.md": skill_md("hello", "Say hello.")})
    bad = skill_from_files("x--y", {"SKILL.md": skill_md("x--y", "doubled hyphen")})
    server = MCPServer(name="s", version="1")
    with pytest.raises(RegistrationError, match="x--y"):
        add_skills(server, skills=[good, bad])
    add_skills(server, skills=[good])
    assert "skill://hello/SKILL.md" in server.resources.static


def test_an_empty_or_missing_directory_is_a_start_up_error(tmp_path: Path) -> None:
    with pytest.raises(RegistrationError, match="no skill"):
        load_skills(tmp_path)
    with pytest.raises(RegistrationError, match="does not exist"):
        load_skills(tmp_path / "missing")


def test_a_second_add_or_a_taken_uri_is_refused_and_adds_nothing(skills_dir: Path) -> None:
    server = MCPServer(name="s", version="1")
    add_skills(server, skills_dir)
    before = dict(server.resources.static)
    with pytest.raises(RegistrationError) as twice:
        add_skills(
            server, skills=[skill_from_files("new-one", {"SKILL.md": skill_md("new-one", "d")})]
        )
    assert "added already" in twice.value.problems[0]
    assert server.resources.static == before

    other = MCPServer(name="s", version="1")
    other.resources.add("skill://pdf-forms/SKILL.md", lambda: "mine", name="mine")
    with pytest.raises(RegistrationError, match="registered already"):
        add_skills(other, skills_dir)
    assert other.extensions == {}
