"""Server metadata and the MCP registry's ``server.json``.

The seeds give a server an ``id`` (slugified when given, a UUID otherwise,
and final), a ``description``, a source ``repository``, a ``release_date``
(ISO 8601, default: construction time), ``is_latest`` (default true), a
``package_canonical`` and lists of installable ``packages`` and ``remotes``.
:meth:`MCPServer.get_server_info` and :meth:`MCPServer.get_server_detail`
report them in the seeds' shapes (snake_case, ``version_detail``).

:func:`registry_document` writes the same facts as a ``server.json`` for the
official MCP registry (format 2025-09-29) and :func:`validate_server_json`
checks a document against the rules the registry enforces, naming every
field it would reject, so a bad file is caught before it is published.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigurationError

__all__ = [
    "SERVER_SCHEMA_URL",
    "Package",
    "Remote",
    "Repository",
    "ServerJsonError",
    "ServerMetadata",
    "registry_document",
    "slugify",
    "validate_server_json",
]

#: The ``$schema`` of the server.json format written and checked here.
SERVER_SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"

REGISTRY_TYPES = ("npm", "pypi", "oci", "nuget", "mcpb")
PACKAGE_TRANSPORTS = ("stdio", "streamable-http", "sse")
REMOTE_TRANSPORTS = ("streamable-http", "sse")
# The seeds' transport names, and other spellings people use, for the registry's names.
_TRANSPORT_ALIASES = {"streamable": "streamable-http", "http": "streamable-http"}


class ServerJsonError(ConfigurationError):
    """A server.json the registry would reject; ``problems`` names each bad field."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"server.json would be rejected by the MCP registry ({len(self.problems)} "
            f"problem(s)):\n{lines}"
        )


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


# -- the seeds' metadata objects -----------------------------------------------------------------


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
    # field: accepted spellings (registry camelCase, snake_case, the seeds' PackageInfo)
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
        for key, value in (
            ("registryBaseUrl", self.registry_base_url),
            ("runtimeHint", self.runtime_hint),
            ("fileSha256", self.file_sha256),
        ):
            if value is not None:
                out[key] = value
        for key, items in (
            ("environmentVariables", self.environment_variables),
            ("packageArguments", self.package_arguments),
            ("runtimeArguments", self.runtime_arguments),
        ):
            if items:
                out[key] = [dict(i) for i in items]
        return out

    def to_detail(self) -> dict[str, Any]:
        """The seeds' ``PackageInfo`` shape (``registry_name``, ``name``, ``version``)."""
        out: dict[str, Any] = {
            "registry_name": self.registry_type,
            "name": self.identifier,
            "version": self.version,
            "transport_type": _transport(self.transport).get("type"),
        }
        for key, value in (
            ("registry_base_url", self.registry_base_url),
            ("runtime_hint", self.runtime_hint),
            ("file_sha256", self.file_sha256),
        ):
            if value is not None:
                out[key] = value
        for key, items in (
            ("environment_variables", self.environment_variables),
            ("package_arguments", self.package_arguments),
            ("runtime_arguments", self.runtime_arguments),
        ):
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
        """The seeds' ``RemoteInfo`` shape (``transport_type``, ``url``)."""
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


@dataclass(slots=True)
class ServerMetadata:
    """What ``MCPServer`` keeps of its metadata options, normalised."""

    id: str
    release_date: str
    is_latest: bool = True
    repository: Repository | None = None
    package_canonical: str | None = None
    packages: tuple[Package, ...] = ()
    remotes: tuple[Remote, ...] = ()
    problems: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        *,
        id: str | None,
        repository: Repository | Mapping[str, Any] | None,
        release_date: str | datetime | None,
        is_latest: bool,
        package_canonical: str | None,
        packages: Sequence[Package | Mapping[str, Any]] | None,
        remotes: Sequence[Remote | Mapping[str, Any]] | None,
    ) -> ServerMetadata:
        """The metadata; what cannot be used is listed in ``problems`` (all at once)."""
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
        return cls(
            id=server_id,
            release_date=date,
            is_latest=bool(is_latest),
            repository=repo,
            package_canonical=package_canonical,
            packages=tuple(parsed_packages),
            remotes=tuple(parsed_remotes),
            problems=problems,
        )


# -- server.json ---------------------------------------------------------------------------------

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAMESPACE_RE = re.compile(rf"^{_LABEL}(?:\.{_LABEL})+$")
_SERVER_PART_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_SHA256_RE = re.compile(r"^[a-f0-9]{64}$")
_GITHUB_RE = re.compile(
    r"^https?://(?:www\.)?github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?$"
)
_TOP_FIELDS = frozenset(
    {"$schema", "name", "description", "version", "repository", "websiteUrl", "packages",
     "remotes", "_meta"}
)  # fmt: skip
_PACKAGE_KEYS = frozenset(
    {"registryType", "registryBaseUrl", "identifier", "version", "fileSha256", "runtimeHint",
     "transport", "runtimeArguments", "packageArguments", "environmentVariables"}
)  # fmt: skip


def is_registry_name(name: str) -> bool:
    if name.count("/") != 1 or not 3 <= len(name) <= 200:
        return False
    namespace, server = name.split("/")
    return bool(_NAMESPACE_RE.match(namespace) and _SERVER_PART_RE.match(server))


def registry_name_from_repository(repository: Repository | None) -> str | None:
    """``io.github.<owner>/<repo>`` for a GitHub repository (the registry's GitHub namespace)."""
    if repository is None:
        return None
    match = _GITHUB_RE.match(repository.url)
    return f"io.github.{match.group(1)}/{match.group(2)}" if match else None


def _is_url(value: Any, *, http_only: bool = True) -> bool:
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        return False
    parts = urlsplit(value)
    if http_only:
        return parts.scheme in ("http", "https") and bool(parts.netloc)
    return bool(parts.scheme)


def _is_exact_version(version: str) -> bool:
    """The registry wants one release, not ``latest`` or a range (``^1``, ``>=1``, ``1.x``...)."""
    v = version.strip()
    if not v or v.lower() == "latest" or v != version:
        return False
    if v[0] in "^~<>=!*" or "||" in v or " - " in v or "*" in v or " " in v:
        return False
    return not any(part in ("x", "X") for part in v.split("."))


def _check_string(problems: list[str], where: str, value: Any, *, required: bool) -> bool:
    if value is None:
        if required:
            problems.append(f"{where}: is required")
        return False
    if not isinstance(value, str) or not value:
        problems.append(f"{where}: must be a non-empty string")
        return False
    return True


def _check_inputs(problems: list[str], where: str, items: Any, *, kind: str) -> None:
    """``environmentVariables``/``headers`` (need ``name``) or arguments (``positional``/``named``)."""
    if not isinstance(items, list):
        problems.append(f"{where}: must be an array")
        return
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f"{at}: must be an object")
            continue
        if kind == "key-value":
            _check_string(problems, f"{at}.name", item.get("name"), required=True)
            continue
        arg_type = item.get("type")
        if arg_type == "positional":
            if item.get("valueHint") is None and item.get("value") is None:
                problems.append(f"{at}: a positional argument needs 'valueHint' or 'value'")
        elif arg_type == "named":
            _check_string(problems, f"{at}.name", item.get("name"), required=True)
        else:
            problems.append(f"{at}.type: must be 'positional' or 'named', not {arg_type!r}")


def _check_transport(
    problems: list[str], where: str, transport: Any, allowed: Sequence[str]
) -> None:
    if not isinstance(transport, Mapping):
        problems.append(f"{where}: must be an object with a 'type'")
        return
    kind = transport.get("type")
    if kind not in allowed:
        problems.append(f"{where}.type: must be one of {', '.join(allowed)}, not {kind!r}")
        return
    if kind in ("streamable-http", "sse"):
        url = transport.get("url")
        # A package's streamable-http URL is a template ({port}...); the others are real URLs.
        ok = isinstance(url, str) and bool(url) if kind == "streamable-http" else _is_url(url)
        if not ok:
            problems.append(f"{where}.url: a {kind} transport needs a URL, got {url!r}")
    if "headers" in transport:
        _check_inputs(problems, f"{where}.headers", transport["headers"], kind="key-value")


def validate_server_json(doc: Any) -> list[str]:
    """Every problem the MCP registry would reject ``doc`` for (format 2025-09-29)."""
    if not isinstance(doc, Mapping):
        return ["(document): must be a JSON object"]
    problems: list[str] = []
    for key in sorted(set(doc) - _TOP_FIELDS):
        problems.append(f"{key}: unknown field")
    schema = doc.get("$schema")
    if schema is not None and schema != SERVER_SCHEMA_URL:
        problems.append(f"$schema: mcpkit writes and checks {SERVER_SCHEMA_URL}, not {schema!r}")
    name: Any = doc.get("name")
    if _check_string(problems, "name", name, required=True) and not is_registry_name(name):
        problems.append(
            f"name: {name!r} is not a reverse-DNS name with exactly one '/', "
            "such as 'io.github.<user>/<server>' or 'com.example/<server>' (3-200 characters)"
        )
    description: Any = doc.get("description")
    if (
        _check_string(problems, "description", description, required=True)
        and len(description) > 100
    ):
        problems.append(f"description: {len(description)} characters; the registry allows 100")
    version: Any = doc.get("version")
    if _check_string(problems, "version", version, required=True):
        if len(version) > 255:
            problems.append("version: longer than 255 characters")
        elif not _is_exact_version(version):
            problems.append(
                f"version: {version!r} is not one exact version "
                "(no 'latest', ranges such as '^1.2', '>=1', '1.x' or wildcards)"
            )
    if "websiteUrl" in doc and not _is_url(doc["websiteUrl"]):
        problems.append(f"websiteUrl: {doc['websiteUrl']!r} is not an http(s) URL")
    if "repository" in doc:
        _check_repository(problems, doc["repository"])
    packages = doc.get("packages")
    if packages is not None:
        if not isinstance(packages, list):
            problems.append("packages: must be an array")
        else:
            for i, package in enumerate(packages):
                _check_package(problems, f"packages[{i}]", package)
    remotes = doc.get("remotes")
    if remotes is not None:
        if not isinstance(remotes, list):
            problems.append("remotes: must be an array")
        else:
            for i, remote in enumerate(remotes):
                where = f"remotes[{i}]"
                _check_transport(problems, where, remote, REMOTE_TRANSPORTS)
                if isinstance(remote, Mapping) and remote.get("type") in REMOTE_TRANSPORTS:
                    if not _is_url(remote.get("url")):
                        problems.append(f"{where}.url: {remote.get('url')!r} is not an http(s) URL")
    if "_meta" in doc and not isinstance(doc["_meta"], Mapping):
        problems.append("_meta: must be an object")
    return list(dict.fromkeys(problems))  # one report per problem, in order


def _check_repository(problems: list[str], repo: Any) -> None:
    if not isinstance(repo, Mapping):
        problems.append("repository: must be an object with 'url' and 'source'")
        return
    url = repo.get("url")
    if url is None:
        problems.append("repository.url: is required")
    elif not _is_url(url):
        problems.append(f"repository.url: {url!r} is not an http(s) URL")
    source = repo.get("source")
    if _check_string(problems, "repository.source", source, required=True) and _is_url(url):
        host = urlsplit(str(url)).netloc.lower()
        for forge in ("github", "gitlab"):
            if source == forge and host not in (f"{forge}.com", f"www.{forge}.com"):
                problems.append(f"repository.url: a {forge} repository lives on {forge}.com")
    for key in ("id", "subfolder"):
        if key in repo and not isinstance(repo[key], str):
            problems.append(f"repository.{key}: must be a string")
    sub = repo.get("subfolder")
    if isinstance(sub, str) and (
        sub.startswith("/") or "\\" in sub or ".." in sub.split("/") or not sub.strip("/")
    ):
        problems.append(f"repository.subfolder: {sub!r} is not a clean relative path")


def _check_package(problems: list[str], where: str, package: Any) -> None:
    if not isinstance(package, Mapping):
        problems.append(f"{where}: must be an object")
        return
    for key in sorted(set(package) - _PACKAGE_KEYS):
        problems.append(f"{where}.{key}: unknown field")
    registry_type = package.get("registryType")
    if _check_string(problems, f"{where}.registryType", registry_type, required=True):
        if registry_type not in REGISTRY_TYPES:
            problems.append(
                f"{where}.registryType: {registry_type!r} is not one the registry supports "
                f"({', '.join(REGISTRY_TYPES)})"
            )
    _check_string(problems, f"{where}.identifier", package.get("identifier"), required=True)
    version: Any = package.get("version")
    if _check_string(problems, f"{where}.version", version, required=True):
        if not _is_exact_version(version):
            problems.append(
                f"{where}.version: {version!r} is not one exact version (no 'latest' or ranges)"
            )
    if "transport" not in package:
        problems.append(f"{where}.transport: is required")
    else:
        _check_transport(problems, f"{where}.transport", package["transport"], PACKAGE_TRANSPORTS)
    if "registryBaseUrl" in package and not _is_url(package["registryBaseUrl"]):
        problems.append(f"{where}.registryBaseUrl: {package['registryBaseUrl']!r} is not a URL")
    sha = package.get("fileSha256")
    if sha is not None and not (isinstance(sha, str) and _SHA256_RE.match(sha)):
        problems.append(f"{where}.fileSha256: must be 64 lowercase hexadecimal characters")
    if registry_type == "mcpb" and sha is None:
        problems.append(f"{where}.fileSha256: is required for mcpb packages")
    if "runtimeHint" in package:
        _check_string(problems, f"{where}.runtimeHint", package["runtimeHint"], required=True)
    for key, kind in (
        ("environmentVariables", "key-value"),
        ("packageArguments", "argument"),
        ("runtimeArguments", "argument"),
    ):
        if key in package:
            _check_inputs(problems, f"{where}.{key}", package[key], kind=kind)


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
