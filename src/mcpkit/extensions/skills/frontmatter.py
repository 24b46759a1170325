"""The SKILL.md frontmatter: a safe parser for the restricted YAML subset skills use.

Why not PyYAML: mcpkit does not depend on it, and the frontmatter the Agent Skills
specification defines (``name``, ``description``, ``license``, ``compatibility``,
``allowed-tools``: strings; ``metadata``: a map of strings) needs only a small,
predictable subset. Parsing that subset here keeps the extension free of an extra
and never evaluates YAML tags, anchors or aliases. What lies outside the subset is
refused with a sentence saying why, never guessed at: a plain value that YAML would
read as a number, a boolean or null (``version: 1.0``) must be quoted, so that this
parser and any full YAML parser (the host's) read the same strings — SEP-2640 asks
hosts to compare the parsed file with the listed ``frontmatter`` field by field.

Accepted: ``key: value`` lines (plain, ``'single'`` or ``"double"`` quoted values),
one level of nested mapping (``metadata:`` then indented ``key: value`` lines),
blank lines and ``#`` comment lines.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ...errors import MCPKitError

__all__ = ["FrontmatterError", "parse_frontmatter", "split_frontmatter"]

_KEY: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")
# Plain scalars a YAML 1.1/1.2 parser reads as something other than a string.
_NOT_STRING: Final = re.compile(
    r"(?i:~|null|true|false|yes|no|on|off|y|n|\.nan|[-+]?\.inf)"
    r"|[-+]?(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][-+]?\d+)?|0x[0-9a-fA-F_]+|0o?[0-7_]+"
    r"|\d{4}-\d\d?-\d\d?.*"
)
# A plain scalar may not start with YAML indicators, nor hold ': ' or ' #'.
_INDICATORS: Final = frozenset("-?:,[]{}#&*!|>'\"%@`")


class FrontmatterError(MCPKitError, ValueError):
    """The frontmatter is missing or lies outside the subset this parser reads."""


def split_frontmatter(text: str) -> tuple[str, str]:
    """``(frontmatter block, body)`` of a SKILL.md; it must begin with a ``---`` line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r ") != "---":
        raise FrontmatterError("SKILL.md must begin with a '---' line opening its YAML frontmatter")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r \t") == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :])
    raise FrontmatterError("the YAML frontmatter of SKILL.md is not closed by a '---' line")


def _scalar(raw: str, where: str) -> str:
    value = raw.strip()
    if not value:
        raise FrontmatterError(f"{where}: an empty value (write '' for an empty string)")
    if value[0] == '"':
        if not value.endswith('"') or len(value) < 2:
            raise FrontmatterError(f"{where}: unterminated double-quoted string")
        try:  # YAML double-quoted escapes are a superset of JSON's; JSON's are accepted
            out = json.loads(value)
        except ValueError:
            raise FrontmatterError(
                f"{where}: a double-quoted string with escapes JSON lacks"
            ) from None
        if not isinstance(out, str):
            raise FrontmatterError(f"{where}: not a string")
        return out
    if value[0] == "'":
        if not value.endswith("'") or len(value) < 2:
            raise FrontmatterError(f"{where}: unterminated single-quoted string")
        inner = value[1:-1]
        if re.search(r"(?<!')'(?!')", inner.replace("''", "")):
            raise FrontmatterError(f"{where}: a lone quote inside a single-quoted string")
        return inner.replace("''", "'")
    if value[0] in _INDICATORS or ": " in value or " #" in value or value.endswith(":"):
        raise FrontmatterError(f"{where}: quote this value (it holds YAML syntax)")
    if _NOT_STRING.fullmatch(value):
        raise FrontmatterError(
            f"{where}: {value!r} would be read as a number, boolean, date or null by YAML: quote it"
        )
    return value


def _key_value(line: str, where: str) -> tuple[str, str]:
    key, sep, rest = line.partition(":")
    if not sep or not _KEY.fullmatch(key):
        raise FrontmatterError(f"{where}: expected 'key: value', got {line.strip()!r}")
    if rest and not rest.startswith((" ", "\t")):
        raise FrontmatterError(f"{where}: expected a space after '{key}:'")
    return key, rest


def parse_frontmatter(block: str) -> dict[str, Any]:
    """The frontmatter block as a dict of strings (and one level of string maps)."""
    out: dict[str, Any] = {}
    nested: dict[str, str] | None = None
    for number, raw in enumerate(block.split("\n"), 1):
        line = raw.rstrip("\r \t")
        where = f"frontmatter line {number}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise FrontmatterError(f"{where}: indent with spaces, not tabs")
        if line[0] == " ":
            if nested is None:
                raise FrontmatterError(f"{where}: unexpected indentation")
            key, rest = _key_value(line.strip(), where)
            if key in nested:
                raise FrontmatterError(f"{where}: {key!r} appears twice")
            nested[key] = _scalar(rest, where)
            continue
        key, rest = _key_value(line, where)
        if key in out:
            raise FrontmatterError(f"{where}: {key!r} appears twice")
        if rest.strip():
            out[key] = _scalar(rest, where)
            nested = None
        else:
            nested = out[key] = {}
    for key, value in out.items():
        if value == {}:
            raise FrontmatterError(f"frontmatter: {key!r} has no value")
    return out
