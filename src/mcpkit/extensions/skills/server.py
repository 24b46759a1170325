"""The server side of the skills extension: ``add_skills(server, directory)``.

Experimental: SEP-2640 (``io.modelcontextprotocol/skills``) is a draft extension.

What a server declaring the extension serves (SEP-2640, and the official
conformance suite's ``sep-2640-*`` scenarios):

- ``capabilities.extensions["io.modelcontextprotocol/skills"]``: the settings inline,
  ``{"directoryRead": true}`` when directory reads are served (SEP-2133: no envelope);
- ``skills/list {cursor?}``: entries (``uri``, ``frontmatter``, ``resources``), a page
  holding whole entries only, so a skill's file set is never split across pages;
- ``skills/get {uri}``: one entry; an unknown URI is ``-32602`` Invalid params;
- every file of every skill as a ``skill://`` resource (``resources/read``), the
  ``SKILL.md`` as ``text/markdown`` named and described by its frontmatter;
- ``resources/directory/read {uri, cursor?}`` (with ``directoryRead``): the direct
  children of a skill folder, subfolders as ``inode/directory``; a URI that is not a
  served folder is ``-32602``.

The list and get results carry the caching hints ``ttlMs``/``cacheScope`` of the
server (SEP-2549: ``GetSkillResult`` is a ``CacheableResult``). Skills are checked as
a whole before anything is added: one :class:`~mcpkit.errors.RegistrationError`
lists every problem of every skill. Core seams used: ``server.resources.add`` and
``server.add_extension`` (the :class:`~mcpkit.Extension` contract) only.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from ...errors import InvalidParams, RegistrationError
from ...server.extension import Extension
from .records import EXTENSION_ID, SKILL_FILE, Skill
from .source import check_skills, load_skills

if TYPE_CHECKING:
    from ...server.context import Context
    from ...server.server import MCPServer

__all__ = ["DIRECTORY_MIME", "SkillCatalog", "add_skills"]

DIRECTORY_MIME: Final = "inode/directory"
DEFAULT_PAGE_SIZE: Final = 50


def _mime(relpath: str) -> str:
    if relpath.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(relpath)
    return guessed or "application/octet-stream"


def _cursor(params: dict[str, Any], method: str) -> int:
    cursor = params.get("cursor")
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or not cursor.startswith("o") or not cursor[1:].isdigit():
        raise InvalidParams(f"{method}: invalid cursor {cursor!r}")
    return int(cursor[1:])


def _uri(params: dict[str, Any], method: str) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams(f"{method}: 'uri' must be a non-empty string")
    return uri


class SkillCatalog:
    """The skills one server serves, indexed for the extension's methods."""

    def __init__(self, skills: Sequence[Skill], *, page_size: int, directory_read: bool) -> None:
        self.skills = sorted(skills, key=lambda s: s.path)
        self.page_size = page_size
        self.directory_read = directory_read
        self.entries = [s.entry() for s in self.skills]
        self.by_uri = {e["uri"]: e for e in self.entries}
        # folder URI -> its direct children (a resource each), for resources/directory/read.
        self.folders: dict[str, list[dict[str, Any]]] = {}
        for skill in self.skills:
            self._index(skill)

    def _index(self, skill: Skill) -> None:
        children: dict[str, dict[str, dict[str, Any]]] = {skill.directory_uri: {}}
        for relpath, data in skill.files.items():
            parts = relpath.split("/")
            parent = skill.directory_uri
            for depth in range(len(parts) - 1):  # every folder on the way is a child too
                folder = skill.file_uri("/".join(parts[: depth + 1]))
                children.setdefault(parent, {})[folder] = {
                    "uri": folder,
                    "name": parts[depth],
                    "mimeType": DIRECTORY_MIME,
                }
                children.setdefault(folder, {})
                parent = folder
            uri = skill.file_uri(relpath)
            children[parent][uri] = {
                "uri": uri,
                "name": parts[-1],
                "mimeType": _mime(relpath),
                "size": len(data),
            }
        for folder, items in children.items():
            self.folders[folder] = [items[k] for k in sorted(items)]

    def page(
        self, items: list[dict[str, Any]], start: int
    ) -> tuple[list[dict[str, Any]], str | None]:
        end = start + self.page_size
        return items[start:end], (f"o{end}" if end < len(items) else None)

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True} if self.directory_read else {}


def _resource_reader(data: bytes) -> Any:
    try:  # text where it is text (the digest is of these same UTF-8 bytes), else a blob
        text: str | bytes = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data

    def read() -> str | bytes:
        return text

    return read


def _register_resources(server: MCPServer, catalog: SkillCatalog) -> None:
    problems: list[str] = []
    for skill in catalog.skills:
        for relpath in sorted(skill.files):
            data = skill.files[relpath]
            uri = skill.file_uri(relpath)
            is_manifest = relpath == SKILL_FILE
            try:
                server.resources.add(
                    uri,
                    _resource_reader(data),
                    name=str(skill.frontmatter["name"]) if is_manifest else relpath,
                    description=str(skill.frontmatter["description"]) if is_manifest else None,
                    mime_type=_mime(relpath),
                    size=len(data),
                )
            except RegistrationError as exc:
                problems.extend(exc.problems)
    if problems:
        raise RegistrationError(problems)


def add_skills(
    server: MCPServer,
    directory: str | os.PathLike[str] | None = None,
    *,
    skills: Iterable[Skill] = (),
    page_size: int = DEFAULT_PAGE_SIZE,
    directory_read: bool = True,
) -> Extension:
    """Serve the skills under ``directory`` (and ``skills`` built in code) from ``server``.

    Declares ``io.modelcontextprotocol/skills``, adds ``skills/list``, ``skills/get``
    and (``directory_read``) ``resources/directory/read``, and registers every file as
    a ``skill://`` resource. ``page_size`` is the number of entries per
    ``skills/list`` page. Raises :class:`~mcpkit.errors.RegistrationError` listing
    every problem of every skill; nothing is added then. Returns the extension added.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise RegistrationError([f"page_size must be a positive integer, not {page_size!r}"])
    found: list[Skill] = []
    problems: list[str] = []
    if directory is not None:
        try:
            found.extend(load_skills(directory))
        except RegistrationError as exc:
            problems.extend(exc.problems)
    given = list(skills)
    if not all(isinstance(s, Skill) for s in given):
        problems.append("skills= takes Skill objects (skill_from_files(path, files))")
        given = []
    found.extend(given)
    if directory is None and not given:
        problems.append("add_skills needs a directory or skills=[...]")
    try:
        check_skills(found)
    except RegistrationError as exc:
        problems.extend(p for p in exc.problems if p not in problems)
    if problems:
        raise RegistrationError(problems)
    catalog = SkillCatalog(found, page_size=page_size, directory_read=directory_read)
    # Checked before anything is added, so a refusal leaves the server as it was.
    if EXTENSION_ID in server.extensions:
        problems.append(f"{EXTENSION_ID} is added already: call add_skills once per server")
    problems.extend(
        f"resource {f['uri']!r} is registered already"
        for entry in catalog.entries
        for f in entry["resources"]
        if f["uri"] in server.resources.static
    )
    if problems:
        raise RegistrationError(problems)
    extension = server.add_extension(_extension(server, catalog))
    _register_resources(server, catalog)
    return extension


def _extension(server: MCPServer, catalog: SkillCatalog) -> Extension:
    def hints() -> dict[str, Any]:
        return {"ttlMs": server.cache_ttl_ms, "cacheScope": server.cache_scope}

    async def skills_list(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        items, next_cursor = catalog.page(catalog.entries, _cursor(params, "skills/list"))
        result: dict[str, Any] = {"skills": items, **hints()}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def skills_get(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        uri = _uri(params, "skills/get")
        entry = catalog.by_uri.get(uri)
        if entry is None:
            raise InvalidParams(f"skills/get: no skill is served at {uri!r}")
        return {"skill": entry, **hints()}

    async def directory_read(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        uri = _uri(params, "resources/directory/read").rstrip("/")
        children = catalog.folders.get(uri)
        if children is None:
            raise InvalidParams(f"resources/directory/read: {uri!r} is not a served directory")
        items, next_cursor = catalog.page(children, _cursor(params, "resources/directory/read"))
        result: dict[str, Any] = {"resources": items}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    methods: dict[str, Any] = {"skills/list": skills_list, "skills/get": skills_get}
    if catalog.directory_read:
        methods["resources/directory/read"] = directory_read
    return Extension(identifier=EXTENSION_ID, settings=catalog.settings(), methods=methods)
