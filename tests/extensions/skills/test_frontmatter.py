"""The restricted YAML frontmatter subset: what it reads, and what it refuses with a reason."""

from __future__ import annotations

import pytest

from mcpkit.extensions.skills.frontmatter import (
    FrontmatterError,
    parse_frontmatter,
    split_frontmatter,
)


def test_reads_plain_and_quoted_strings_and_one_level_of_mapping() -> None:
    block = (
        "name: pdf-forms\n"
        "description: 'It''s for forms: all of them'\n"
        "# a comment\n"
        'license: "MIT \\u00e9"\n'
        "metadata:\n"
        "  author: me\n"
        '  version: "1.0"\n'
    )
    assert parse_frontmatter(block) == {
        "name": "pdf-forms",
        "description": "It's for forms: all of them",
        "license": "MIT é",
        "metadata": {"author": "me", "version": "1.0"},
    }


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("version: 1.0", "quote it"),
        ("enabled: true", "quote it"),
        ("when: 2026-01-01", "quote it"),
        ("nothing: ~", "quote it"),
        ("list: [a, b]", "YAML syntax"),
        ("anchor: &a x", "YAML syntax"),
        ("tag: !!python/object x", "YAML syntax"),
        ("text: a: b", "YAML syntax"),
        ("  indented: x", "unexpected indentation"),
        ("no colon here", "key: value"),
        ("name: a\nname: b", "appears twice"),
    ],
)
def test_refuses_what_a_yaml_parser_would_read_differently(line: str, reason: str) -> None:
    with pytest.raises(FrontmatterError, match=reason):
        parse_frontmatter(line)


def test_split_needs_an_opening_and_a_closing_line() -> None:
    assert split_frontmatter("\ufeff---\nname: x\n---\nbody\n") == ("name: x", "body\n")
    with pytest.raises(FrontmatterError, match="begin with"):
        split_frontmatter("# no frontmatter\n")
    with pytest.raises(FrontmatterError, match="not closed"):
        split_frontmatter("---\nname: x\n")
