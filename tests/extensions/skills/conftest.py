"""A real skills directory on disk, written fresh for each test."""

from __future__ import annotations

from pathlib import Path

import pytest


def skill_md(name: str, description: str, body: str = "Do the thing.\n", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}"


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    """Two skills: one with a subfolder holding text and binary files, one with a prefix."""
    return write(
        tmp_path / "skills",
        {
            "pdf-forms/SKILL.md": skill_md(
                "pdf-forms",
                "Fill PDF forms from data.",
                extra='license: MIT\nmetadata:\n  author: tests\n  version: "2"\n',
            ),
            "pdf-forms/references/FIELDS.md": "# Fields\n\nname, date, signature\n",
            "pdf-forms/references/logo.png": b"\x89PNG\r\n\x1a\n\x00\xff binary",
            "team/csv-tidy/SKILL.md": skill_md("csv-tidy", "Tidy CSV files."),
            ".git/config": "ignored",
        },
    )
