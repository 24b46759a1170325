"""Checking the 2026-07-28 request headers against the body (SEP-2243), without I/O.

On Streamable HTTP a 2026-07-28 POST mirrors body fields into headers so that
intermediaries can route without parsing JSON (2026-07-28
basic/transports/streamable-http § request metadata): ``Mcp-Method`` (every
request), ``Mcp-Name`` (``params.name`` of ``tools/call``/``prompts/get``,
``params.uri`` of ``resources/read``) and one ``Mcp-Param-{Name}`` per tool
argument whose schema carries ``"x-mcp-header": "{Name}"``. A server that
reads the body must reject any disagreement with ``HeaderMismatch``
(-32020, HTTP 400): a load balancer routing on the header and a server acting
on the body must never see different requests.

Values: optional whitespace around a value is not part of it (RFC 9110 §5.5).
``Mcp-Name`` and ``Mcp-Param-*`` values may use the sentinel
``=?base64?{value}?=`` (strict Base64 of the UTF-8 bytes, padding included);
anything else is the literal value, which must be visible ASCII plus inner
spaces. Header *names* arrive lower-cased (ASGI), so their case never matters;
values are compared case-sensitively.

Both sides live here: the server checks the headers (:func:`check_request_headers`),
the client writes them (:func:`http_headers`, :func:`encode_header_value`, and
:func:`param_headers_of_tool`, which also refuses a tool whose annotations break
the schema extension's rules).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Final

from .envelope import PROTOCOL_VERSION

__all__ = [
    "NAME_FIELDS",
    "ROUTED_FIELDS",
    "check_request_headers",
    "decode_value",
    "encode_header_value",
    "http_headers",
    "param_headers_of_schema",
    "param_headers_of_tool",
]

# The body field Mcp-Name mirrors, per method.
NAME_FIELDS: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# Extension methods whose Mcp-Name mirrors a body field too: checked when the header is
# sent (a mismatch is -32020), not required of clients. SEP-2663 (tasks): "Mcp-Name: <taskId>"
# on tasks/*, so that a load balancer can route a task's requests to the node that has it.
ROUTED_FIELDS: Final = {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="
_OWS: Final = " \t"


def decode_value(raw: bytes) -> str | None:
    """The value a ``Mcp-Name``/``Mcp-Param-*`` header carries; None if malformed."""
    try:
        text = raw.decode("ascii").strip(_OWS)
    except UnicodeDecodeError:
        return None
    if text.startswith(_PREFIX) and text.endswith(_SUFFIX) and len(text) >= 11:
        try:
            return base64.b64decode(text[len(_PREFIX) : -len(_SUFFIX)], validate=True).decode(
                "utf-8"
            )
        except (binascii.Error, ValueError):
            return None
    # ASCII already; printable ASCII is exactly 0x20-0x7E.
    return text if text.isprintable() else None


# JSON Schema keywords whose values are data, not schemas: an x-mcp-header inside is text.
_DATA_KEYWORDS: Final = frozenset({"default", "const", "enum", "examples"})

# (property path, the annotation's value, the property's schema)
Annotation = tuple[tuple[str, ...], Any, dict[str, Any]]


def header_annotations(input_schema: Any) -> tuple[list[Annotation], list[str]]:
    """Every ``x-mcp-header`` annotation of ``input_schema``.

    The first list holds those on properties reachable from the root through
    ``properties`` keys only; the second the JSON pointers of the others (the
    root, or under ``items``, composition or ``$ref``/``$defs``), which the
    revision forbids. Server registration, the server's header check and the
    client's tool filter all read annotations through this one walk.
    """
    found: list[Annotation] = []
    misplaced: list[str] = []
    _walk(input_schema, (), "", found, misplaced)
    return found, misplaced


def _walk(
    node: Any,
    path: tuple[str, ...] | None,
    where: str,
    found: list[Annotation],
    misplaced: list[str],
) -> None:
    """``path`` is None once the walk has left the chain of ``properties``."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _walk(item, None, f"{where}/{i}", found, misplaced)
        return
    if not isinstance(node, dict):
        return
    if "x-mcp-header" in node:
        if path:
            found.append((path, node["x-mcp-header"], node))
        else:
            misplaced.append(where or "/")
    for key, value in node.items():
        if key in _DATA_KEYWORDS or key == "x-mcp-header":
            continue
        if key == "properties" and path is not None and isinstance(value, dict):
            for prop, sub in value.items():
                _walk(sub, (*path, prop), f"{where}/properties/{prop}", found, misplaced)
        else:
            _walk(value, None, f"{where}/{key}", found, misplaced)


def param_headers_of_schema(input_schema: Any) -> dict[tuple[str, ...], str]:
    """Argument path → the ``Mcp-Param-{Name}`` it is mirrored into (well-placed, named
    annotations only; registration refuses the rest)."""
    found, _ = header_annotations(input_schema)
    return {path: name for path, name, _ in found if isinstance(name, str) and name}


def _at(arguments: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(arguments, dict):
            return None
        arguments = arguments.get(key)
    return arguments


def _same(header: str, body: Any) -> bool:
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, int | float):
        # Numbers compare numerically ("42.0" matches 42), as the transport page advises.
        try:
            return float(header) == float(body)
        except ValueError:
            return False
    return isinstance(body, str) and header == body


def check_request_headers(
    msg: dict[str, Any],
    headers: Mapping[bytes, bytes],
    params_for_tool: Mapping[tuple[str, ...], str],
) -> str | None:
    """Why the headers disagree with request ``msg`` (None when they agree).

    ``params_for_tool`` is :func:`param_headers_of_schema` of the called tool's input
    schema (empty for other methods).
    """
    method = msg["method"]
    raw = headers.get(b"mcp-method")
    if raw is None:
        return "the Mcp-Method header is required"
    if raw.decode("latin-1").strip(_OWS) != method:
        return f"Mcp-Method header {raw.decode('latin-1')!r} does not match body method {method!r}"
    params = msg.get("params")
    params = params if isinstance(params, dict) else {}
    field = NAME_FIELDS.get(method)
    if field is not None:
        raw = headers.get(b"mcp-name")
        if raw is None:
            return f"the Mcp-Name header is required for {method}"
        value = decode_value(raw)
        if value is None:
            return "the Mcp-Name header value is malformed"
        if value != params.get(field):
            return f"Mcp-Name header {value!r} does not match body {field} {params.get(field)!r}"
    else:
        field = ROUTED_FIELDS.get(method)
        raw = headers.get(b"mcp-name") if field is not None else None
        if field is not None and raw is not None:
            value = decode_value(raw)
            if value is None:
                return "the Mcp-Name header value is malformed"
            if value != params.get(field):
                return (
                    f"Mcp-Name header {value!r} does not match body {field} {params.get(field)!r}"
                )
    if params_for_tool:
        arguments = params.get("arguments")
        for path, name in params_for_tool.items():
            body = _at(arguments, path)
            arg = ".".join(path)
            if body is None:  # absent or null: the client must omit the header
                continue
            raw = headers.get(b"mcp-param-" + name.lower().encode("latin-1"))
            if raw is None:
                return f"the Mcp-Param-{name} header is required (argument {arg!r} is set)"
            value = decode_value(raw)
            if value is None:
                return f"the Mcp-Param-{name} header value is malformed"
            if not _same(value, body):
                return f"Mcp-Param-{name} header {value!r} does not match argument {arg!r}"
    return None


# -- the client side: writing the headers of a request ------------------------------------
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 § 5.6.2 tchar
_HEADER_TYPES: Final = frozenset({"string", "integer", "boolean"})
_SAFE_INT: Final = 2**53 - 1


def encode_header_value(value: str) -> str:
    """A header-safe value: as is when plain visible ASCII, else ``=?base64?…?=``.

    Value encoding: non-ASCII, control characters (tab included), leading or trailing
    whitespace, and values that look like the sentinel itself are Base64-encoded.
    """
    plain = (
        value.isascii()
        and value.isprintable()  # for ASCII: " " to "~", no tab or control character
        and value == value.strip(" ")
        and not (value.startswith("=?base64?") and value.endswith("?="))
    )
    if plain:
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode("ascii") + "?="


def param_headers_of_tool(tool: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]] | str:
    """A tool's ``x-mcp-header`` annotations as ``(property path, name)`` pairs.

    Returns the reason as a string when an annotation breaks the schema extension's
    constraints; the client must then drop the tool from ``tools/list``.
    """
    found, misplaced = header_annotations(tool.get("inputSchema"))
    if misplaced:
        return f"x-mcp-header outside a chain of 'properties' ({misplaced[0]})"
    seen: set[str] = set()
    out: list[tuple[tuple[str, ...], str]] = []
    for path, name, node in found:
        where = ".".join(path)
        if not isinstance(name, str) or not name:
            return f"empty x-mcp-header on {where!r}"
        if not _TOKEN.match(name):
            return f"x-mcp-header {name!r} on {where!r} is not an HTTP field-name token"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} is used twice"
        seen.add(name.lower())
        kind = node.get("type")
        if kind not in _HEADER_TYPES:
            return f"x-mcp-header {name!r} on {where!r} has type {kind!r}, not a primitive"
        out.append((path, name))
    return out


def _param_value(value: Any) -> str | None:
    if value is None:
        return None
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if -_SAFE_INT <= value <= _SAFE_INT else None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def http_headers(
    message: Mapping[str, Any],
    tool_headers: Mapping[str, list[tuple[tuple[str, ...], str]]],
) -> dict[str, str]:
    """The request metadata headers of one modern message (empty for a legacy one)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if not isinstance(version, str) or not isinstance(params, dict):
        return {}
    method = message.get("method")
    headers = {"mcp-protocol-version": version}
    if isinstance(method, str):
        headers["mcp-method"] = method
        field = NAME_FIELDS.get(method) or ROUTED_FIELDS.get(method)
        name = params.get(field) if field else None
        if isinstance(name, str):
            headers["mcp-name"] = encode_header_value(name)
        if method == "tools/call" and isinstance(name, str):
            arguments = params.get("arguments")
            for path, header in tool_headers.get(name, ()):
                value: Any = arguments
                for step in path:
                    value = value.get(step) if isinstance(value, dict) else None
                text = _param_value(value)
                if text is not None:
                    headers[f"Mcp-Param-{header}"] = encode_header_value(text)
    return headers
