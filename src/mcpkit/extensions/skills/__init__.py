"""The skills extension (``io.modelcontextprotocol/skills``, SEP-2640): skills served as resources.

Experimental: SEP-2640 is a draft extension; its wire may still change.

A skill is a folder with a ``SKILL.md`` (YAML frontmatter, then instructions) and the
files it refers to. The server side (:mod:`.server`, :func:`add_skills`) serves
skills from a directory tree or from code through the core's public seams only:
``server.resources.add`` for the ``skill://`` files and ``server.add_extension`` for
the capability and the ``skills/list``, ``skills/get`` and
``resources/directory/read`` methods. The client side (:mod:`.client`) lists and
fetches skills through any client's public ``request``/``read_resource`` and verifies
what it reads (digest, size, frontmatter). :mod:`.records` holds the rules both
share, :mod:`.frontmatter` the restricted YAML parser (no PyYAML dependency),
:mod:`.source` the directory loader.
"""

from __future__ import annotations

from .records import EXTENSION_ID, Skill, digest
from .server import add_skills
from .source import load_skills, skill_from_files

__all__ = ["EXTENSION_ID", "Skill", "add_skills", "digest", "load_skills", "skill_from_files"]
