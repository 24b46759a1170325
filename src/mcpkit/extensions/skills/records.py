"""Skills and their files as frozen records, the SEP-2640 rules they obey, and their wire forms.

A :class:`Skill` is a name, its frontmatter and its files (path inside the skill ->
raw bytes, ``SKILL.md`` among them). :func:`skill_problems` says everything a skill
breaks, one sentence each; :meth:`Skill.entry` is its ``skills/list`` entry
(``uri``, ``frontmatter``, ``resources``: ``{uri, digest, size}`` for every file).
Both the server and the client use the constants here, so they agree on the rules.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from .frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter

__all__ = [
    "EXTENSION_ID",
    "MAX_FILES",
    "MAX_TOTAL_BYTES",
    "SKILL_FILE",
    "Skill",
    "digest",
    "name_problem",
    "skill_problems",
]

#: The extension identifier (SEP-2640), the key in ``capabilities.extensions``.
EXTENSION_ID: Final = "io.modelcontextprotocol/skills"
SKILL_FILE: Final = "SKILL.md"
SCHEME: Final = "skill://"
#: SEP-2640 limits: servers SHOULD NOT serve more files or more bytes in one skill.
MAX_FILES: Final = 512
MAX_TOTAL_BYTES: Final = 16 * 1024 * 1024
#: Agent Skills specification: ``description`` is 1-1024 characters.
MAX_DESCRIPTION: Final = 1024
# Agent Skills naming rule, as SEP-2640 restates it: 1-64 characters of lowercase
# letters, digits and hyphens, no leading, trailing or consecutive hyphen.
_NAME: Final = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
# A path segment of a skill URI: RFC 3986 unreserved characters only, and no braces
# (a brace would make the resource a URI template).
_SEGMENT: Final = re.compile(r"[A-Za-z0-9._~-]+")
RESERVED_META_PREFIX: Final = "io.modelcontextprotocol/"


def digest(data: bytes) -> str:
    """``sha256:<64 lowercase hex>`` of raw bytes (SEP-2640 integrity and verification)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid skill name (None: it is)."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        return (
            f"name {name!r} must be 1-64 lowercase letters, digits and hyphens, "
            "without a leading, trailing or doubled hyphen"
        )
    return None


@dataclass(frozen=True)
class Skill:
    """One skill: its path (``prefix/.../name``), frontmatter and files (path -> bytes).

    Build it with :meth:`from_files` (parses the frontmatter from ``SKILL.md``);
    check it with :func:`skill_problems`.
    """

    path: str
    frontmatter: Mapping[str, Any]
    files: Mapping[str, bytes] = field(repr=False)

    @classmethod
    def from_files(cls, path: str, files: Mapping[str, bytes]) -> Skill:
        """A skill from its files; an unreadable frontmatter is left empty (a problem)."""
        try:
            text = files[SKILL_FILE].decode("utf-8")
            front = parse_frontmatter(split_frontmatter(text)[0])
        except (KeyError, UnicodeDecodeError, FrontmatterError):
            front = {}
        return cls(path, MappingProxyType(front), MappingProxyType(dict(files)))

    @property
    def name(self) -> str:
        """The final path segment, which must equal ``frontmatter['name']``."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def uri(self) -> str:
        """``skill://<path>/SKILL.md``, the skill's URI (and its SKILL.md resource)."""
        return f"{self.directory_uri}/{SKILL_FILE}"

    @property
    def directory_uri(self) -> str:
        return f"{SCHEME}{self.path}"

    def file_uri(self, relpath: str) -> str:
        return f"{self.directory_uri}/{relpath}"

    def entry(self) -> dict[str, Any]:
        """The ``skills/list`` / ``skills/get`` entry: SKILL.md first, then files by path."""
        order = [SKILL_FILE, *sorted(p for p in self.files if p != SKILL_FILE)]
        return {
            "uri": self.uri,
            "frontmatter": _plain(self.frontmatter),
            "resources": [
                {
                    "uri": self.file_uri(p),
                    "digest": digest(self.files[p]),
                    "size": len(self.files[p]),
                }
                for p in order
            ],
        }


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def skill_problems(skill: Skill) -> list[str]:
    """Everything ``skill`` breaks of SEP-2640 and the Agent Skills rules, one sentence each."""
    label = f"skill {skill.path!r}"
    problems: list[str] = []
    segments = skill.path.split("/")
    if not all(_SEGMENT.fullmatch(s) for s in segments):
        problems.append(f"{label}: its path segments may hold only letters, digits and . _ ~ -")
    if SKILL_FILE not in skill.files:
        problems.append(f"{label}: has no {SKILL_FILE} at its root")
    else:
        try:
            text = skill.files[SKILL_FILE].decode("utf-8")
            parse_frontmatter(split_frontmatter(text)[0])
        except UnicodeDecodeError:
            problems.append(f"{label}: {SKILL_FILE} is not UTF-8 text")
        except FrontmatterError as exc:
            problems.append(f"{label}: {SKILL_FILE}: {exc}")
        else:
            problems.extend(_frontmatter_problems(skill, label))
    for relpath in skill.files:
        if not all(_SEGMENT.fullmatch(s) for s in relpath.split("/")):
            problems.append(
                f"{label}: file {relpath!r}: names may hold only letters, digits and . _ ~ -"
            )
    if len(skill.files) > MAX_FILES:
        problems.append(f"{label}: {len(skill.files)} files, more than {MAX_FILES}")
    total = sum(len(b) for b in skill.files.values())
    if total > MAX_TOTAL_BYTES:
        problems.append(f"{label}: {total} bytes in all, more than {MAX_TOTAL_BYTES} (16 MiB)")
    return problems


def _frontmatter_problems(skill: Skill, label: str) -> list[str]:
    front = skill.frontmatter
    problems: list[str] = []
    name = front.get("name")
    if name is None:
        problems.append(f"{label}: the frontmatter has no 'name'")
    else:
        problem = name_problem(name)
        if problem is not None:
            problems.append(f"{label}: frontmatter {problem}")
        elif name != skill.name:
            problems.append(
                f"{label}: frontmatter name {name!r} must equal the folder name {skill.name!r}"
            )
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{label}: the frontmatter needs a non-empty 'description'")
    elif len(description) > MAX_DESCRIPTION:
        problems.append(f"{label}: description longer than {MAX_DESCRIPTION} characters")
    for key, value in front.items():
        if key != "metadata" and not isinstance(value, str):
            problems.append(f"{label}: frontmatter {key!r} must be a string, not a mapping")
    metadata = front.get("metadata")
    if isinstance(metadata, str):
        problems.append(f"{label}: frontmatter 'metadata' must be a mapping of strings")
    elif isinstance(metadata, Mapping):
        for key in metadata:
            if key.startswith(RESERVED_META_PREFIX):
                problems.append(
                    f"{label}: metadata key {key!r}: the {RESERVED_META_PREFIX} prefix is "
                    "reserved for MCP extensions (SEP-2640)"
                )
    return problems
