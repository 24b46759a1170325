"""The MCP registry's ``server.json`` format, and checking a document as the registry would.

:func:`~.metadata.registry_document` (in :mod:`.metadata`, next to the classes
it reads) builds a ``server.json`` (format 2025-09-29) from a server's metadata;
:func:`validate_server_json` checks any document against the rules the official registry enforces: a reverse-DNS ``name``
with one ``/``, a ``description`` of at most 100 characters, one exact
``version``, a ``repository`` with ``url`` and ``source``, ``packages`` with
``registryType``/``identifier``/``version``/``transport`` and ``remotes``
with ``type``/``url``. Every problem is reported, naming its field
(``packages[0].transport.type``), so a bad file is caught before publishing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..errors import ServerJsonError

__all__ = [
    "SERVER_SCHEMA_URL",
    "ServerJsonError",
    "is_registry_name",
    "validate_server_json",
]

#: The ``$schema`` of the server.json format written and checked here.
SERVER_SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"

REGISTRY_TYPES = ("npm", "pypi", "oci", "nuget", "mcpb")
PACKAGE_TRANSPORTS = ("stdio", "streamable-http", "sse")
REMOTE_TRANSPORTS = ("streamable-http", "sse")


_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAMESPACE_RE = re.compile(rf"^{_LABEL}(?:\.{_LABEL})+$")
_SERVER_PART_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_SHA256_RE = re.compile(r"^[a-f0-9]{64}$")
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
