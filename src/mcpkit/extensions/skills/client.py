"""The client side of the skills extension: list, fetch and verify skills (SEP-2640).

Experimental: SEP-2640 (``io.modelcontextprotocol/skills``) is a draft extension.

Works with anything that has the public ``request(method, params)`` and
``read_resource(uri)`` of a session: a :class:`~mcpkit.Client`, a client session, or
one server of an :class:`~mcpkit.MCPClient` (``mcp.client(name)``;
:func:`skills_by_server` lists them all). Nothing is read before it is asked for
(SEP-2640: hosts MUST NOT retrieve a skill's files ahead of need): listing reads
only ``skills/list``, :meth:`SkillsClient.load` reads only the ``SKILL.md``, and
:meth:`SkillsClient.read_file` one file when the caller asks for it.

Every read is verified before it is returned (SEP-2640, integrity and verification):
a file listed in the entry's ``resources`` must have the listed size (checked
first, and a declared size above ``max_file_bytes`` is refused before the read)
and SHA-256 digest; a ``SKILL.md`` must carry frontmatter equal, field by field, to
the entry's. A failure raises :class:`SkillVerificationError`: unverified content
is never returned.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from ...errors import MCPKitError
from .frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter
from .records import EXTENSION_ID, MAX_TOTAL_BYTES, SKILL_FILE, digest, name_problem

if TYPE_CHECKING:
    from ...client.mcp_client import MCPClient

__all__ = [
    "LoadedSkill",
    "SkillEntry",
    "SkillFile",
    "SkillVerificationError",
    "SkillsClient",
    "SkillsPeer",
    "skills_by_server",
]

_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
DYNAMIC: Final = "dynamic"


class SkillsPeer(Protocol):
    """What the helpers need of a client: its public request and read methods."""

    async def request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]: ...

    async def read_resource(self, uri: str) -> dict[str, Any]: ...


class SkillVerificationError(MCPKitError):
    """A skill entry or file failed verification; its content is not to be used."""


@dataclass(frozen=True)
class SkillFile:
    """One ``{uri, digest, size}`` of an entry's ``resources``."""

    uri: str
    digest: str
    size: int


@dataclass(frozen=True)
class SkillEntry:
    """A ``skills/list`` entry, checked; ``files`` is None for ``"resources": "dynamic"``."""

    uri: str
    frontmatter: Mapping[str, Any]
    files: tuple[SkillFile, ...] | None

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def directory_uri(self) -> str:
        return self.uri[: -len(SKILL_FILE) - 1]

    def file(self, uri: str) -> SkillFile | None:
        """The listed ``{uri, digest, size}`` of ``uri`` (None: not listed)."""
        return next((f for f in self.files or () if f.uri == uri), None)

    @classmethod
    def parse(cls, raw: object) -> SkillEntry:
        """Check a wire entry (shape, name, digests, bounds); raise SkillVerificationError."""
        problems: list[str] = []
        if not isinstance(raw, dict):
            raise SkillVerificationError(f"a skill entry must be an object, not {raw!r}")
        uri, front, resources = raw.get("uri"), raw.get("frontmatter"), raw.get("resources")
        if not isinstance(uri, str) or not uri.endswith("/" + SKILL_FILE) or "://" not in uri:
            raise SkillVerificationError(f"skill entry uri {uri!r} must end in /{SKILL_FILE}")
        if not isinstance(front, dict):
            raise SkillVerificationError(f"{uri}: frontmatter must be an object")
        name = uri.rsplit("/", 2)[-2]
        if front.get("name") != name:
            problems.append(f"frontmatter name {front.get('name')!r} is not the URI's {name!r}")
        problem = name_problem(front.get("name"))
        if problem is not None:
            problems.append(problem)
        if not isinstance(front.get("description"), str) or not front["description"]:
            problems.append("frontmatter has no description")
        files: tuple[SkillFile, ...] | None = None
        if resources != DYNAMIC:
            files = _files(uri, resources, problems)
        if problems:
            raise SkillVerificationError(f"{uri}: " + "; ".join(problems))
        return cls(uri, front, files)


def _files(uri: str, resources: object, problems: list[str]) -> tuple[SkillFile, ...]:
    if not isinstance(resources, list):
        problems.append('resources must be a list or "dynamic"')
        return ()
    folder = uri[: -len(SKILL_FILE)]
    out: list[SkillFile] = []
    for item in resources:
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            problems.append(f"resources entry {item!r} has no uri")
            continue
        size, dig = item.get("size"), item.get("digest")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            problems.append(f"{item['uri']}: size {size!r} is not a byte count")
        elif not isinstance(dig, str) or _DIGEST.fullmatch(dig) is None:
            problems.append(f"{item['uri']}: digest {dig!r} is not sha256:<64 hex>")
        elif not item["uri"].startswith(folder):
            problems.append(f"{item['uri']} lies outside the skill's folder")
        else:
            out.append(SkillFile(item["uri"], dig, size))
    uris = [f.uri for f in out]
    if uri not in uris:
        problems.append(f"resources do not list the {SKILL_FILE} itself")
    if len(set(uris)) != len(uris):
        problems.append("resources list a file twice")
    return tuple(out)


@dataclass(frozen=True)
class LoadedSkill:
    """A skill whose ``SKILL.md`` was read and verified: its entry, text and body."""

    entry: SkillEntry
    text: str

    @property
    def body(self) -> str:
        """The instructions after the frontmatter."""
        return split_frontmatter(self.text)[1]


def _content_bytes(uri: str, result: dict[str, Any]) -> bytes:
    contents = result.get("contents")
    items = [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
    item = next((c for c in items if c.get("uri") == uri), items[0] if items else None)
    if item is None:
        raise SkillVerificationError(f"{uri}: resources/read returned no contents")
    if isinstance(item.get("text"), str):
        return str(item["text"]).encode("utf-8")
    if isinstance(item.get("blob"), str):
        try:
            return base64.b64decode(item["blob"], validate=True)
        except (binascii.Error, ValueError):
            raise SkillVerificationError(f"{uri}: the blob is not base64") from None
    raise SkillVerificationError(f"{uri}: resources/read returned neither text nor blob")


class SkillsClient:
    """List, fetch and verify the skills of one server, through ``peer``'s public methods.

    ``max_file_bytes`` bounds a single read (a larger listed size is refused before
    reading); ``max_pages`` bounds ``skills/list`` paging (a server that never stops).
    """

    def __init__(
        self, peer: SkillsPeer, *, max_file_bytes: int = MAX_TOTAL_BYTES, max_pages: int = 100
    ) -> None:
        self.peer = peer
        self.max_file_bytes = max_file_bytes
        self.max_pages = max_pages

    async def list(self) -> list[SkillEntry]:
        """Every entry of ``skills/list``, all pages, each checked (no file is read)."""
        entries: list[SkillEntry] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(self.max_pages):
            result = await self.peer.request("skills/list", {"cursor": cursor} if cursor else {})
            raw = result.get("skills")
            if not isinstance(raw, list):
                raise SkillVerificationError("skills/list returned no skills array")
            entries.extend(SkillEntry.parse(item) for item in raw)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return entries
            if cursor in seen:
                raise SkillVerificationError(f"skills/list repeated the cursor {cursor!r}")
            seen.add(cursor)
        raise SkillVerificationError(f"skills/list did not end within {self.max_pages} pages")

    async def get(self, uri: str) -> SkillEntry:
        """The entry of the skill at ``uri`` (``skills/get``), checked."""
        result = await self.peer.request("skills/get", {"uri": uri})
        entry = SkillEntry.parse(result.get("skill"))
        if entry.uri != uri:
            raise SkillVerificationError(f"skills/get for {uri} answered {entry.uri}")
        return entry

    async def load(self, skill: SkillEntry | str) -> LoadedSkill:
        """Read and verify a skill's ``SKILL.md`` (only that file); a URI is looked up first."""
        entry = skill if isinstance(skill, SkillEntry) else await self.get(skill)
        data = await self.read_file(entry, entry.uri)
        return LoadedSkill(entry, data.decode("utf-8"))

    async def read_file(self, entry: SkillEntry, uri: str) -> bytes:
        """Read one file of ``entry`` and return its bytes once verified."""
        listed = entry.file(uri)
        if entry.files is not None and listed is None:
            raise SkillVerificationError(f"{uri} is not a file of the skill {entry.uri}")
        if not uri.startswith(entry.directory_uri + "/"):
            raise SkillVerificationError(f"{uri} lies outside the skill {entry.uri}")
        if listed is not None and listed.size > self.max_file_bytes:
            raise SkillVerificationError(
                f"{uri}: {listed.size} bytes listed, more than the {self.max_file_bytes} allowed"
            )
        data = _content_bytes(uri, await self.peer.read_resource(uri))
        if len(data) > self.max_file_bytes:
            raise SkillVerificationError(f"{uri}: more than {self.max_file_bytes} bytes read")
        if listed is not None:
            # SEP-2640: a size mismatch is a verification failure, like a digest mismatch.
            if len(data) != listed.size:
                raise SkillVerificationError(f"{uri}: {len(data)} bytes read, {listed.size} listed")
            if digest(data) != listed.digest:
                raise SkillVerificationError(f"{uri}: the content does not match its digest")
        if uri == entry.uri:
            _check_frontmatter(entry, data)
        return data


def _check_frontmatter(entry: SkillEntry, data: bytes) -> None:
    """SEP-2640: the file's frontmatter, parsed, equals the entry's, field by field."""
    try:
        front = parse_frontmatter(split_frontmatter(data.decode("utf-8"))[0])
    except (UnicodeDecodeError, FrontmatterError) as exc:
        raise SkillVerificationError(f"{entry.uri}: unreadable frontmatter: {exc}") from None
    differing = sorted(
        k for k in {*front, *entry.frontmatter} if front.get(k) != entry.frontmatter.get(k)
    )
    if differing:
        raise SkillVerificationError(
            f"{entry.uri}: the file's frontmatter differs from the entry in {differing}"
        )


async def skills_by_server(mcp: MCPClient, **options: Any) -> dict[str, list[SkillEntry]]:
    """The skills of every server of ``mcp`` that declares the extension, by server name."""
    out: dict[str, list[SkillEntry]] = {}
    await mcp.connect()
    for name in mcp.server_names:
        client = mcp.client(name)
        if EXTENSION_ID in (client.server_capabilities.get("extensions") or {}):
            out[name] = await SkillsClient(client, **options).list()
    return out
