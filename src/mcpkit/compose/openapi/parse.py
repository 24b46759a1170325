"""OpenAPI documents read and validated, and their operations as plain records.

A document (a dict, JSON or YAML text, or a path) is validated once by
openapi-pydantic's models of OpenAPI 3.0 and 3.1, which say where a document is
malformed; the operations are then read from the plain dict, which the tools need
as JSON anyway (the validated models would have to be dumped back). Every ``$ref``
is local: a reference to another document would make start-up fetch it, so one is
refused with the place it was found (OpenAPI 3.1 § 4.8.23, Reference Object).
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import unquote

from ..._extras import require_extra
from ...errors import ConfigurationError

log = logging.getLogger("mcpkit.compose.openapi")

with require_extra("openapi", feature="OpenAPI import (mcpkit.compose.openapi.parse)"):
    import openapi_pydantic
    import pydantic

__all__ = [
    "METHODS",
    "Body",
    "Document",
    "Operation",
    "Parameter",
    "load_document",
    "read_document",
]

#: The HTTP methods a Path Item may hold, in the order operations are read.
METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

Location = Literal["path", "query", "header", "cookie"]

# The default style of each location (OpenAPI 3.1 § 4.8.12.4, Style Values).
_DEFAULT_STYLE: Final[dict[str, str]] = {
    "path": "simple",
    "query": "form",
    "header": "simple",
    "cookie": "form",
}
_MAX_PROBLEMS: Final = 5
_IGNORED_HEADERS: Final = frozenset({"accept", "content-type", "authorization"})
_PATH_VAR: Final = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of an operation, its references resolved."""

    name: str
    location: Location
    required: bool
    style: str
    explode: bool
    schema: dict[str, Any]
    description: str | None = None
    allow_reserved: bool = False
    #: A parameter described by ``content`` (one media type) instead of a schema: its
    #: value is serialized as JSON (OpenAPI 3.1 § 4.8.12.2.2, Fixed Fields for use with content).
    as_json: bool = False


@dataclass(frozen=True, slots=True)
class Body:
    """An operation's request body: the media type chosen and its schema."""

    media_type: str
    schema: dict[str, Any]
    required: bool
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """An operation of the document (a method on a path), references resolved."""

    method: str
    path: str
    operation_id: str | None
    summary: str | None
    description: str | None
    tags: tuple[str, ...]
    parameters: tuple[Parameter, ...]
    body: Body | None
    #: The success response's JSON schema, or None (no 2xx response, or none with JSON).
    response_schema: dict[str, Any] | None
    deprecated: bool = False


@dataclass(slots=True)
class Document:
    """A validated OpenAPI document: its raw form, version and a reference resolver."""

    raw: dict[str, Any]
    version: str
    _resolved: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_31(self) -> bool:
        """Whether schemas are JSON Schema 2020-12 (3.1), not OpenAPI 3.0's dialect."""
        return self.version.startswith("3.1")

    @property
    def title(self) -> str:
        info = self.raw.get("info") or {}
        return str(info.get("title") or "openapi")

    @property
    def api_version(self) -> str:
        info = self.raw.get("info") or {}
        return str(info.get("version") or "0")

    @property
    def server_url(self) -> str | None:
        """The first server's URL, variables filled with their defaults (§ 4.8.5)."""
        servers = self.raw.get("servers") or []
        if not servers or not isinstance(servers[0], dict):
            return None
        url = str(servers[0].get("url") or "")
        for name, var in (servers[0].get("variables") or {}).items():
            url = url.replace("{" + name + "}", str(var.get("default", "")))
        return url or None

    def resolve(self, ref: str) -> Any:
        """The object a local ``$ref`` names (a JSON Pointer, RFC 6901, after ``#``)."""
        if not ref.startswith("#"):
            raise ConfigurationError(
                f"OpenAPI reference {ref!r} points outside the document: remote references "
                "are not fetched (start-up makes no network calls); bundle the document first"
            )
        found = self._resolved.get(ref)
        if found is not None:
            return found
        node: Any = self.raw
        for token in ref[1:].split("/")[1:] if ref != "#" else []:
            # A fragment is percent-encoded (RFC 6901 § 6), then ~1 and ~0 (§ 4).
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(token)] if isinstance(node, list) else node[token]
            except (KeyError, IndexError, ValueError, TypeError):
                raise ConfigurationError(f"OpenAPI reference {ref!r} names nothing") from None
        self._resolved[ref] = node
        return node

    def deref(self, obj: Any) -> Any:
        """``obj`` itself, or what its ``$ref`` chain ends at (a loop is an error)."""
        seen: set[str] = set()
        while isinstance(obj, dict) and isinstance(obj.get("$ref"), str):
            ref = obj["$ref"]
            if ref in seen:
                raise ConfigurationError(f"OpenAPI reference {ref!r} refers to itself")
            seen.add(ref)
            obj = self.resolve(ref)
        return obj

    def operations(self) -> Iterator[Operation]:
        """Every operation, in document order (paths, then :data:`METHODS`)."""
        for path, item in (self.raw.get("paths") or {}).items():
            item = self.deref(item)
            if not isinstance(item, dict):
                continue
            shared = item.get("parameters") or []
            for method in METHODS:
                op = item.get(method)
                if isinstance(op, dict):
                    yield self._operation(method, path, op, shared)

    def _operation(
        self, method: str, path: str, op: dict[str, Any], shared: list[Any]
    ) -> Operation:
        # Operation-level parameters override path-level ones of the same name and
        # location (§ 4.8.10.1, the ``parameters`` field).
        params: dict[tuple[str, str], Parameter] = {}
        for raw in (*shared, *(op.get("parameters") or [])):
            param = self._parameter(self.deref(raw))
            if param.location == "header" and param.name.lower() in _IGNORED_HEADERS:
                continue  # "SHALL be ignored" (§ 4.8.12.2.1): the body and auth set these
            params[(param.name, param.location)] = param
        # A path template variable the document forgot to declare is still one
        # (§ 4.8.8.1 requires each to be declared): a required string.
        for name in _PATH_VAR.findall(path):
            if (name, "path") not in params:
                params[(name, "path")] = Parameter(
                    name, "path", True, "simple", False, {"type": "string"}
                )
        return Operation(
            method=method,
            path=path,
            operation_id=op.get("operationId"),
            summary=op.get("summary"),
            description=op.get("description"),
            tags=tuple(str(t) for t in op.get("tags") or ()),
            parameters=tuple(params.values()),
            body=self._body(op.get("requestBody")),
            response_schema=self._response_schema(op.get("responses") or {}),
            deprecated=bool(op.get("deprecated")),
        )

    def _parameter(self, raw: dict[str, Any]) -> Parameter:
        location: Location = raw["in"]
        schema = raw.get("schema")
        as_json = False
        if schema is None:
            content = raw.get("content") or {}
            media: dict[str, Any] = next(iter(content.values()), {})
            schema = media.get("schema") or {}
            as_json = True
        style = raw.get("style") or _DEFAULT_STYLE[location]
        return Parameter(
            name=raw["name"],
            location=location,
            # Path parameters are always required (§ 4.8.12.2.1).
            required=bool(raw.get("required")) or location == "path",
            style=style,
            explode=bool(raw.get("explode", style == "form")),
            schema=schema,
            description=raw.get("description"),
            allow_reserved=bool(raw.get("allowReserved")),
            as_json=as_json,
        )

    def _body(self, raw: Any) -> Body | None:
        body = self.deref(raw)
        if not isinstance(body, dict):
            return None
        content: dict[str, Any] = body.get("content") or {}
        media_type = _pick_media_type(content)
        if media_type is None:
            return None
        return Body(
            media_type=media_type,
            schema=(content[media_type] or {}).get("schema") or {},
            required=bool(body.get("required")),
            description=body.get("description"),
        )

    def _response_schema(self, responses: Mapping[str, Any]) -> dict[str, Any] | None:
        # The first success code in document order; "2XX" counts (§ 4.8.16.2).
        for code, raw in responses.items():
            if not str(code).startswith("2"):
                continue
            response = self.deref(raw)
            content = (response or {}).get("content") or {}
            media_type = next((m for m in content if _is_json(m)), None)
            if media_type is None:
                return None
            schema = (content[media_type] or {}).get("schema")
            return schema if isinstance(schema, dict) else None
        return None


def _is_json(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base == "application/json" or base.endswith("+json") or base == "*/*"


def _pick_media_type(content: Mapping[str, Any]) -> str | None:
    """JSON first, then a form, then multipart, then whatever comes first (sent as text)."""
    for media_type in content:
        if _is_json(media_type):
            return media_type
    for wanted in ("application/x-www-form-urlencoded", "multipart/form-data"):
        for media_type in content:
            if media_type.split(";", 1)[0].strip().lower() == wanted:
                return media_type
    return next(iter(content), None)


_VERSION_RE: Final = re.compile(r"^3\.[01]\.\d+")


def load_document(spec: Mapping[str, Any] | str | bytes | Path) -> Document:
    """Read and validate ``spec``: a parsed document, JSON or YAML text, or a file path."""
    raw = read_document(spec)
    version = str(raw.get("openapi") or "")
    if not _VERSION_RE.match(version):
        shown = version or (f"swagger {raw['swagger']}" if "swagger" in raw else "none")
        raise ConfigurationError(
            f"an OpenAPI 3.0 or 3.1 document is needed (its 'openapi' field), not {shown}"
        )
    try:
        openapi_pydantic.parse_obj(raw)
    except pydantic.ValidationError as exc:
        _judge(exc.errors())
    return Document(raw=raw, version=version)


# What the operations are made of: a problem there is fatal. Elsewhere (a missing
# info.version, a malformed tag) the server can be built as well as without it, and
# published documents have such slips (Anthropic's has no info.version): a warning.
_NEEDED: Final = frozenset({"paths", "components", "openapi"})


def _judge(errors: list[Any]) -> None:
    fatal = [e for e in errors if len(e["loc"]) < 2 or e["loc"][1] in _NEEDED]
    for error in errors:
        if error not in fatal:
            log.warning("OpenAPI document: %s", _problem(error))
    if not fatal:
        return
    problems = [_problem(e) for e in fatal[:_MAX_PROBLEMS]]
    more = len(fatal) - len(problems)
    raise ConfigurationError(
        "the OpenAPI document is not valid: "
        + "; ".join(problems)
        + (f"; and {more} more" if more > 0 else "")
    )


def _problem(error: Any) -> str:
    # The place as a JSON Pointer (RFC 6901), after the version pydantic puts first;
    # pydantic's union branch names stay in it ("Reference", "Response"), saying which
    # reading of the object failed.
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in error["loc"][1:])
    return "#/" + "/".join(escaped) + f": {error['msg']}"


def read_document(spec: Mapping[str, Any] | str | bytes | Path) -> dict[str, Any]:
    """``spec`` as a dict: a mapping as it is, JSON or YAML text parsed, a path read."""
    if isinstance(spec, Mapping):
        return dict(spec)
    if isinstance(spec, Path):
        spec = spec.read_bytes()
    text = spec.decode() if isinstance(spec, bytes) else spec
    if text.lstrip().startswith("{"):
        parsed: Any = json.loads(text)
    else:
        parsed = _yaml(text)
    if not isinstance(parsed, dict):
        raise ConfigurationError("an OpenAPI document is a JSON or YAML object")
    return parsed


def _yaml(text: str) -> Any:
    with require_extra("openapi", feature="reading YAML OpenAPI documents"):
        import yaml  # type: ignore[import-untyped, unused-ignore]

    return yaml.load(text, Loader=_json_loader(yaml))  # a safe loader: plain data only


@functools.cache
def _json_loader(yaml: Any) -> Any:
    """A safe YAML loader that reads only what JSON can hold: YAML 1.1 timestamps
    (``2024-01-01``) stay strings, as they would in the document's JSON form."""
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's is ~10× faster
    resolvers = {
        first: [(tag, rx) for tag, rx in rules if tag != "tag:yaml.org,2002:timestamp"]
        for first, rules in base.yaml_implicit_resolvers.items()
    }
    return type("JSONLoader", (base,), {"yaml_implicit_resolvers": resolvers})
