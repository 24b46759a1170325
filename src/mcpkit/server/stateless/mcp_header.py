"""``McpHeader``: mirror a tool argument into an ``Mcp-Param-{Name}`` HTTP header.

2026-07-28 lets a server designate tool parameters that clients copy into
HTTP headers so that gateways can route on them without reading the body
(SEP-2243, basic/transports/streamable-http § custom headers from tool
parameters). In the tool's ``inputSchema`` the parameter carries
``"x-mcp-header": "{Name}"``; the server checks every such header against the
body (:mod:`mcpkit.protocol.http_headers`)::

    @server.tool
    async def deploy(region: Annotated[str, McpHeader("Region")]) -> str: ...

The name must be an HTTP token (RFC 9110 §5.6.2) and the parameter a string,
integer or boolean (the revision's constraints; ``number`` is not allowed).

Every tool's input schema is checked when the tool is registered
(:func:`header_problems`), whether the annotation comes from ``McpHeader`` or
from a raw JSON-Schema ``inputSchema``: a client must drop a tool whose
annotations break the rules (2026-07-28 server/tools § x-mcp-header), so a
mistake is reported at decoration time, not discovered by a missing tool.
"""

from __future__ import annotations

from typing import Any, Final

from ...errors import ConfigurationError
from ...protocol.http_headers import header_annotations

__all__ = ["McpHeader", "header_problems"]

_TCHAR: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def McpHeader(name: str, *, description: str | None = None) -> Any:
    """Pydantic field metadata putting ``x-mcp-header: name`` on the parameter's schema."""
    if not isinstance(name, str) or not name or not set(name) <= _TCHAR:
        raise ConfigurationError(
            f"McpHeader({name!r}): the name must be a non-empty HTTP token (letters, digits, "
            "and !#$%&'*+-.^_`|~)"
        )
    from pydantic import Field  # only here: see lazy_pydantic

    return Field(description=description, json_schema_extra={"x-mcp-header": name})


# The JSON types a header may mirror (string, integer, boolean; `number` is excluded).
_PRIMITIVES: Final = frozenset({"string", "integer", "boolean"})
# Integers must survive a trip through an IEEE 754 double (-(2**53 - 1) .. 2**53 - 1).
_SAFE_INT: Final = 2**53 - 1
# Keywords whose values are instances, not subschemas: an `x-mcp-header` key inside a
# `default` or an `enum` member is data, not an annotation.
_RULES: Final = "2026-07-28 server/tools § x-mcp-header"


def header_problems(tool: str, input_schema: Any) -> list[str]:
    """Every way ``input_schema``'s ``x-mcp-header`` annotations break the revision's rules.

    Each message names the tool, the parameter (its property path) and the rule.
    The rules (2026-07-28 basic/transports/streamable-http § schema extension):
    a non-empty HTTP token (no control characters), unique among the tool's
    annotations ignoring case, on a property of type string, integer or
    boolean, reachable from the root through ``properties`` keys only (never
    ``items``, ``anyOf``/``oneOf``/``allOf``/``not``, ``if``/``then``/``else``
    or ``$ref``), and integer values within the IEEE 754 safe range.
    """
    found, misplaced = header_annotations(input_schema)
    problems = [
        f"tool {tool!r}, parameter at {where}: x-mcp-header must be on a property reachable "
        f"from the root through 'properties' keys only (not under items, anyOf/oneOf/allOf/"
        f"not, if/then/else or $ref; {_RULES})"
        + (
            "; a nested pydantic model is emitted as a $ref: put the header on a top-level "
            "parameter, or give a raw input schema with the object inlined"
            if "$defs" in where
            else ""
        )
        for where in map(repr, misplaced)
    ]
    seen: dict[str, str] = {}
    for path, name, node in found:
        param = ".".join(path)
        prefix = f"tool {tool!r}, parameter {param!r}:"
        if not isinstance(name, str) or not name:
            problems.append(f"{prefix} x-mcp-header must be a non-empty string ({_RULES})")
            continue
        if not set(name) <= _TCHAR:
            problems.append(
                f"{prefix} x-mcp-header {name!r} is not an HTTP field-name token (letters, "
                f"digits and !#$%&'*+-.^_`|~; no spaces or control characters; {_RULES})"
            )
        other = seen.get(name.lower())
        if other is not None:
            problems.append(
                f"{prefix} x-mcp-header {name!r} is already used by parameter {other!r} "
                f"(names must be unique ignoring case; {_RULES})"
            )
        else:
            seen[name.lower()] = param
        problem = _type_problem(node)
        if problem is not None:
            problems.append(f"{prefix} x-mcp-header {name!r} {problem} ({_RULES})")
    return problems


def _type_problem(node: dict[str, Any]) -> str | None:
    kind = node.get("type")
    if kind not in _PRIMITIVES:
        if kind is None and any(k in node for k in ("anyOf", "oneOf")):
            # pydantic's `str | None`: the type hides in a union the client cannot mirror.
            return (
                "needs a single type (string, integer or boolean), not a union; for an "
                "optional header parameter give it a default instead of allowing None"
            )
        return f"is on a parameter of type {kind!r}; only string, integer or boolean may carry it"
    if kind == "integer":
        values = [node[k] for k in ("default", "const") if k in node]
        enum = node.get("enum")
        values.extend(enum if isinstance(enum, list) else ())
        for v in values:
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > _SAFE_INT:
                return f"allows the integer {v}, outside the safe range +-(2**53 - 1)"
    return None
