"""Server metadata: Mastra's id, repository, release date, packages and remotes.

Mastra gives a server an ``id`` (slugified when given, a UUID otherwise,
and final), a ``description``, a source ``repository``, a ``release_date``
(ISO 8601, default: construction time), ``is_latest`` (default true), a
``package_canonical`` and lists of installable ``packages`` and ``remotes``;
all but the description are given as ``MCPServer(metadata=ServerMetadata(...))``.
:meth:`MCPServer.get_server_info` and :meth:`MCPServer.get_server_detail`
report them in Mastra's shapes (snake_case, ``version_detail``).

:func:`registry_document` writes the same facts as a ``server.json`` for the
official MCP registry; :func:`validate_server_json` checks one. The format's
rules (names, fields, validation) live in :mod:`.server_json`, which knows
nothing of these classes; this module builds the document from them.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import ConfigurationError

# The server.json half lives in .server_json; its public names are reachable from here too.
from .server_json import (
    SERVER_SCHEMA_URL,
    ServerJsonError,
    is_registry_name,
    validate_server_json,
)

__all__ = [
    "SERVER_SCHEMA_URL",
    "Package",
    "Remote",
    "Repository",
    "ServerJsonError",
    "ServerMetadata",
    "registry_document",
    "registry_name_from_repository",
    "slugify",
    "validate_server_json",
]

# Mastra's transport names, and other spellings people use, for the registry's names.
_TRANSPORT_ALIASES = {"streamable": "streamable-http", "http": "streamable-http"}


def slugify(value: str) -> str:
    """``value`` as an id: lowercase ASCII letters and digits, ``.``, ``_``, ``-`` and ``/``.

    Runs of anything else become one ``-``, so ``"My Server!"`` is
    ``"my-server"`` while a reverse-DNS name such as ``"io.github.me/weather"``
    keeps its shape.
    """
    ascii_text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9._/-]+", "-", ascii_text.lower())
    return re.sub(r"-{2,}", "-", slug).strip("-")


def _pick(data: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in data:
            return data[name]
    return None


# -- Mastra's metadata objects -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Repository:
    """Where the server's source lives: ``url`` and ``source`` (``"github"``, ``"gitlab"``...)."""

    url: str
    source: str
    id: str | None = None
    subfolder: str | None = None

    @classmethod
    def parse(cls, value: Repository | Mapping[str, Any]) -> Repository:
        if isinstance(value, Repository):
            return value
        if not isinstance(value, Mapping):
            raise ConfigurationError("repository: expected a Repository or a mapping")
        return cls(
            url=str(value.get("url", "")),
            source=str(value.get("source", "")),
            id=value.get("id"),
            subfolder=value.get("subfolder"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"url": self.url, "source": self.source}
        if self.id is not None:
            out["id"] = self.id
        if self.subfolder is not None:
            out["subfolder"] = self.subfolder
        return out


_PACKAGE_FIELDS = {
    # field: accepted spellings (registry camelCase, snake_case, Mastra's PackageInfo)
    "registry_type": ("registryType", "registry_type", "registry_name"),
    "identifier": ("identifier", "name"),
    "version": ("version",),
    "transport": ("transport", "transport_type"),
    "registry_base_url": ("registryBaseUrl", "registry_base_url"),
    "runtime_hint": ("runtimeHint", "runtime_hint"),
    "file_sha256": ("fileSha256", "file_sha256"),
    "environment_variables": ("environmentVariables", "environment_variables"),
    "package_arguments": ("packageArguments", "package_arguments"),
    "runtime_arguments": ("runtimeArguments", "runtime_arguments"),
}


def _transport(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"type": _TRANSPORT_ALIASES.get(value, value)}
    if isinstance(value, Mapping):
        out = dict(value)
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = _TRANSPORT_ALIASES.get(kind, kind)
        return out
    return {"type": value}


@dataclass(frozen=True, slots=True, kw_only=True)
class Package:
    """An installable package of the server (registry ``packages`` entry).

    ``transport`` is ``"stdio"`` (the default), or a mapping such as
    ``{"type": "streamable-http", "url": "http://localhost:8000/mcp"}``.
    """

    registry_type: str
    identifier: str
    version: str
    transport: str | Mapping[str, Any] = "stdio"
    registry_base_url: str | None = None
    runtime_hint: str | None = None
    file_sha256: str | None = None
    environment_variables: Sequence[Mapping[str, Any]] = ()
    package_arguments: Sequence[Mapping[str, Any]] = ()
    runtime_arguments: Sequence[Mapping[str, Any]] = ()

    @classmethod
    def parse(cls, value: Package | Mapping[str, Any], where: str) -> Package:
        if isinstance(value, Package):
            return value
        if not isinstance(value, Mapping):
            raise ConfigurationError(f"{where}: expected a Package or a mapping")
        known = {name for names in _PACKAGE_FIELDS.values() for name in names}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ConfigurationError(f"{where}: unknown field(s) {', '.join(unknown)}")
        found = {f: _pick(value, *names) for f, names in _PACKAGE_FIELDS.items()}
        kwargs = {k: v for k, v in found.items() if v is not None}
        for required in ("registry_type", "identifier", "version"):
            kwargs.setdefault(required, "")
        return cls(**kwargs)

    def to_registry(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "registryType": self.registry_type,
            "identifier": self.identifier,
            "version": self.version,
            "transport": _transport(self.transport),
        }
        return self._with_optional(
            out,
            ("registryBaseUrl", "runtimeHint", "fileSha256"),
            ("environmentVariables", "packageArguments", "runtimeArguments"),
        )

    def to_detail(self) -> dict[str, Any]:
        """Mastra's ``PackageInfo`` shape (``registry_name``, ``name``, ``version``)."""
        out: dict[str, Any] = {
            "registry_name": self.registry_type,
            "name": self.identifier,
            "version": self.version,
            "transport_type": _transport(self.transport).get("type"),
        }
        return self._with_optional(
            out,
            ("registry_base_url", "runtime_hint", "file_sha256"),
            ("environment_variables", "package_arguments", "runtime_arguments"),
        )

    def _with_optional(
        self, out: dict[str, Any], scalar_keys: tuple[str, ...], list_keys: tuple[str, ...]
    ) -> dict[str, Any]:
        """``out`` plus the optional fields that are set, under the names each shape uses."""
        scalars = (self.registry_base_url, self.runtime_hint, self.file_sha256)
        for key, value in zip(scalar_keys, scalars, strict=True):
            if value is not None:
                out[key] = value
        lists = (self.environment_variables, self.package_arguments, self.runtime_arguments)
        for key, items in zip(list_keys, lists, strict=True):
            if items:
                out[key] = [dict(i) for i in items]
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Remote:
    """A URL the server is reachable at: ``type`` ``"streamable-http"`` or ``"sse"``."""

    type: str
    url: str
    headers: Sequence[Mapping[str, Any]] = ()

    @classmethod
    def parse(cls, value: Remote | Mapping[str, Any], where: str) -> Remote:
        if isinstance(value, Remote):
            return value
        if not isinstance(value, Mapping):
            raise ConfigurationError(f"{where}: expected a Remote or a mapping")
        unknown = sorted(set(value) - {"type", "transport_type", "url", "headers"})
        if unknown:
            raise ConfigurationError(f"{where}: unknown field(s) {', '.join(unknown)}")
        kind = _pick(value, "type", "transport_type")
        return cls(
            type=_TRANSPORT_ALIASES.get(kind, kind) if isinstance(kind, str) else str(kind),
            url=str(value.get("url", "")),
            headers=tuple(value.get("headers") or ()),
        )

    def to_registry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "url": self.url}
        if self.headers:
            out["headers"] = [dict(h) for h in self.headers]
        return out

    def to_detail(self) -> dict[str, Any]:
        """Mastra's ``RemoteInfo`` shape (``transport_type``, ``url``)."""
        out: dict[str, Any] = {"transport_type": self.type, "url": self.url}
        if self.headers:
            out["headers"] = [dict(h) for h in self.headers]
        return out


def _iso_date(value: str | datetime | None) -> str:
    if value is None:
        value = datetime.now(UTC)
    if isinstance(value, datetime):
        return value.isoformat()
    if not isinstance(value, str):
        raise ConfigurationError(f"release_date: expected an ISO 8601 string, got {value!r}")
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ConfigurationError(
            f"release_date: {value!r} is not an ISO 8601 date or date-time"
        ) from None
    return value


@dataclass(frozen=True, slots=True, init=False)
class ServerMetadata:
    """Mastra's registry metadata of a server: ``MCPServer(metadata=ServerMetadata(...))``.

    Made from the options below (all keyword-only, all optional) and kept
    normalised: ``id`` is slugified, or a new UUID when none is given (so give each
    server its own object: two servers sharing one share the id); ``release_date``
    is an ISO 8601 string (default: when the object was made); ``repository``,
    ``packages`` and ``remotes`` accept their classes or dicts and hold the classes.

    What cannot be used is listed in ``problems`` rather than raised, so that
    ``MCPServer`` reports it with every other registration problem, all at once
    (a :class:`~mcpkit.errors.RegistrationError`).
    """

    id: str
    release_date: str
    is_latest: bool
    repository: Repository | None
    package_canonical: str | None
    packages: tuple[Package, ...]
    remotes: tuple[Remote, ...]
    problems: tuple[str, ...]

    def __init__(
        self,
        *,
        id: str | None = None,
        repository: Repository | Mapping[str, Any] | None = None,
        release_date: str | datetime | None = None,
        is_latest: bool = True,
        package_canonical: str | None = None,
        packages: Sequence[Package | Mapping[str, Any]] | None = None,
        remotes: Sequence[Remote | Mapping[str, Any]] | None = None,
    ) -> None:
        problems: list[str] = []
        server_id = str(uuid.uuid4())
        if id is not None:
            slug = slugify(id) if isinstance(id, str) else ""
            if slug:
                server_id = slug
            else:
                problems.append(f"id: {id!r} has no letters or digits to make an id of")
        try:
            date = _iso_date(release_date)
        except ConfigurationError as exc:
            problems.append(str(exc))
            date = _iso_date(None)
        repo = None
        if repository is not None:
            try:
                repo = Repository.parse(repository)
            except ConfigurationError as exc:
                problems.append(str(exc))
        parsed_packages: list[Package] = []
        for i, p in enumerate(packages or ()):
            try:
                parsed_packages.append(Package.parse(p, f"packages[{i}]"))
            except (ConfigurationError, TypeError) as exc:
                problems.append(str(exc))
        parsed_remotes: list[Remote] = []
        for i, r in enumerate(remotes or ()):
            try:
                parsed_remotes.append(Remote.parse(r, f"remotes[{i}]"))
            except ConfigurationError as exc:
                problems.append(str(exc))
        # Frozen: the fields are set once, here.
        for name, value in (
            ("id", server_id),
            ("release_date", date),
            ("is_latest", bool(is_latest)),
            ("repository", repo),
            ("package_canonical", package_canonical),
            ("packages", tuple(parsed_packages)),
            ("remotes", tuple(parsed_remotes)),
            ("problems", tuple(problems)),
        ):
            object.__setattr__(self, name, value)


# -- the server.json document, built from the metadata ---------------------------------------

_GITHUB_RE = re.compile(
    r"^https?://(?:www\.)?github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?$"
)


def registry_name_from_repository(repository: Repository | None) -> str | None:
    """``io.github.<owner>/<repo>`` for a GitHub repository (the registry's GitHub namespace)."""
    if repository is None:
        return None
    match = _GITHUB_RE.match(repository.url)
    return f"io.github.{match.group(1)}/{match.group(2)}" if match else None


def registry_document(
    *,
    name: str | None,
    fallback_names: Sequence[str | None],
    description: str | None,
    version: str,
    website_url: str | None,
    metadata: ServerMetadata,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated ``server.json``; raises :class:`ServerJsonError` listing every problem.

    ``name`` wins; otherwise the first of ``fallback_names`` that is a valid
    registry name (the server id, the GitHub repository's ``io.github.*`` name).
    """
    chosen = name
    if chosen is None:
        chosen = next((n for n in fallback_names if n and is_registry_name(n)), None)
    doc: dict[str, Any] = {"$schema": SERVER_SCHEMA_URL}
    problems: list[str] = []
    if chosen is None:
        problems.append(
            "name: no registry name: the server id is not a reverse-DNS name and there is no "
            "GitHub repository to derive one from; pass name='io.github.<user>/<server>' "
            "(or id='com.example/<server>')"
        )
    else:
        doc["name"] = chosen
    if description is not None:
        doc["description"] = description
    doc["version"] = version
    if website_url:
        doc["websiteUrl"] = website_url
    if metadata.repository is not None:
        doc["repository"] = metadata.repository.to_dict()
    if metadata.packages:
        doc["packages"] = [p.to_registry() for p in metadata.packages]
    if metadata.remotes:
        doc["remotes"] = [r.to_registry() for r in metadata.remotes]
    if meta:
        doc["_meta"] = dict(meta)
    problems.extend(
        p for p in validate_server_json(doc) if not (chosen is None and p.startswith("name:"))
    )
    if problems:
        raise ServerJsonError(problems)
    return doc
