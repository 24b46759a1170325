"""Skills read from a directory tree, or given in code, checked as a whole at start-up.

:func:`load_skills` walks a directory: every folder holding a ``SKILL.md`` is a skill,
its path under the root is the skill path (``skill://<path>/SKILL.md``) and every file
below it is one of its files. Files are read once, here: the bytes served are the
bytes digested, so a listing never disagrees with a read. Hidden names (``.git``,
``.DS_Store``) are left out; symbolic links are refused (a link could serve a file
from outside the tree). :func:`check_skills` raises one
:class:`~mcpkit.errors.RegistrationError` listing every problem of every skill.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...errors import RegistrationError
from .records import SKILL_FILE, Skill, skill_problems

__all__ = ["check_skills", "load_skills", "skill_from_files"]


def skill_from_files(path: str, files: Mapping[str, bytes | str]) -> Skill:
    """A skill given in code: ``path`` (``"name"`` or ``"prefix/name"``) and its files."""
    raw = {p: v.encode("utf-8") if isinstance(v, str) else bytes(v) for p, v in files.items()}
    return Skill.from_files(path, raw)


def load_skills(root: str | os.PathLike[str]) -> list[Skill]:
    """Every skill under ``root``, by path; raises RegistrationError listing all problems."""
    base = Path(root)
    problems: list[str] = []
    skills: list[Skill] = []
    if not base.is_dir():
        raise RegistrationError([f"skills directory {str(base)!r} does not exist"])
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if SKILL_FILE not in filenames:
            continue
        here = Path(dirpath)
        rel = here.relative_to(base).as_posix()
        if rel == ".":
            problems.append(
                f"{str(base)!r} itself holds a {SKILL_FILE}: put each skill in a folder of its own"
            )
            dirnames[:] = []
            continue
        files, file_problems = _read_tree(here, rel)
        problems.extend(file_problems)
        skills.append(Skill.from_files(rel, files))
        dirnames[:] = []  # the rest of this folder belongs to the skill
    if not skills and not problems:
        problems.append(f"no skill (a folder with a {SKILL_FILE}) under {str(base)!r}")
    try:
        check_skills(skills)
    except RegistrationError as exc:
        problems.extend(exc.problems)
    if problems:
        raise RegistrationError(problems)
    return skills


def _read_tree(skill_dir: Path, rel: str) -> tuple[dict[str, bytes], list[str]]:
    files: dict[str, bytes] = {}
    problems: list[str] = []
    for dirpath, dirnames, filenames in os.walk(skill_dir):
        here = Path(dirpath)
        for d in list(dirnames):
            if (here / d).is_symlink():
                problems.append(f"skill {rel!r}: {(here / d).relative_to(skill_dir)} is a link")
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and not (here / d).is_symlink()
        )
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = here / name
            relpath = path.relative_to(skill_dir).as_posix()
            if path.is_symlink():
                problems.append(f"skill {rel!r}: {relpath} is a symbolic link (not served)")
                continue
            if name == SKILL_FILE and here != skill_dir:
                problems.append(f"skill {rel!r}: {relpath}: a skill inside a skill")
                continue
            files[relpath] = path.read_bytes()
    return files, problems


def check_skills(skills: Iterable[Skill]) -> None:
    """Raise RegistrationError listing every problem of ``skills`` (each, and together)."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    paths: set[str] = set()
    for skill in skills:
        problems.extend(skill_problems(skill))
        if skill.path in paths:
            problems.append(f"skill {skill.path!r} is given twice")
        paths.add(skill.path)
        # SEP-2640: names SHOULD be unique within a listing; serving two is refused here
        # so a host never has to pick between them.
        other = seen.setdefault(skill.name, skill.path)
        if other != skill.path:
            problems.append(f"skills {other!r} and {skill.path!r} share the name {skill.name!r}")
    if problems:
        raise RegistrationError(problems)
