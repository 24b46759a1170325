"""Route maps (which operations become tools, resources, templates or nothing) and names.

Every operation becomes a tool unless a route map says otherwise: a model can call
tools, while resources are read by the application (2025-11-25 server/resources:
"application-driven"), so serving a GET as a resource hides it from the model
unless the client surfaces it. :data:`RESOURCE_ROUTES` is the other common choice.

Tool names come from ``operationId`` (cut to MCP's tool name alphabet,
2025-11-25 server/tools § Tool names: 1 to 128 of ``A-Z a-z 0-9 _ - .``), else
from the method and path (``GET /pets/{pet_id}`` → ``get_pets_pet_id``). When two
operations would share a name, the later one in the document gets ``_2``, ``_3``…
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from ...errors import ConfigurationError
from .parse import METHODS, Operation

__all__ = ["RESOURCE_ROUTES", "RouteKind", "RouteMap", "ToolNamer", "route_of"]

RouteKind = Literal["tool", "resource", "template", "exclude"]
_KINDS: Final = ("tool", "resource", "template", "exclude")


@dataclass(frozen=True, slots=True)
class RouteMap:
    """Operations that match become ``kind``; the first matching map of a list wins.

    ``methods`` (``"GET"``, ...) and ``tags`` (all of which an operation must have)
    narrow the match; ``pattern`` is searched in the path (``re.search``). A map
    with none of them matches every operation. ``"resource"`` and ``"template"``
    both serve an operation as a resource when it has no path parameter and as a
    resource template when it has (its optional scalar query parameters joining
    the template as ``{?a,b}``); an operation that needs other parameters
    (query, header, cookie or a body) stays a tool, a resource read having only its
    URI to carry them.
    """

    kind: RouteKind
    methods: Collection[str] | None = None
    pattern: str | re.Pattern[str] | None = None
    tags: Collection[str] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ConfigurationError(f"RouteMap kind must be one of {_KINDS}, not {self.kind!r}")
        if isinstance(self.methods, str):
            raise ConfigurationError("RouteMap methods is a collection, e.g. ('GET',)")
        for method in self.methods or ():
            if method.lower() not in METHODS:
                raise ConfigurationError(f"RouteMap method {method!r} is not an HTTP method")
        if isinstance(self.pattern, str):
            try:
                object.__setattr__(self, "pattern", re.compile(self.pattern))
            except re.error as exc:
                raise ConfigurationError(f"RouteMap pattern {self.pattern!r}: {exc}") from None

    def matches(self, op: Operation) -> bool:
        """Whether ``op`` is one of the operations this map is about."""
        if self.methods is not None and op.method.upper() not in {m.upper() for m in self.methods}:
            return False
        if isinstance(self.pattern, re.Pattern) and not self.pattern.search(op.path):
            return False
        return all(tag in op.tags for tag in self.tags)


#: GET operations as resources (templates when the path has parameters), the rest tools.
RESOURCE_ROUTES: Final = (RouteMap("resource", methods=("GET",)),)


def route_of(op: Operation, route_maps: Collection[RouteMap]) -> RouteKind:
    """What ``op`` becomes: the first matching map's kind (a tool if none matches),
    a resource or template only when its URI can carry every required parameter."""
    kind: RouteKind = next((m.kind for m in route_maps if m.matches(op)), "tool")
    if kind in ("resource", "template"):
        needs_more = (op.body is not None and op.body.required) or any(
            p.required and p.location != "path" for p in op.parameters
        )
        if needs_more:
            return "tool"
        has_vars = any(p.location == "path" for p in op.parameters)
        return "template" if has_vars else "resource"
    return kind


_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]+")


def slug(text: str) -> str:
    """``text`` in MCP's tool name alphabet: other runs become one ``_``."""
    return _UNSAFE.sub("_", text).strip("_")


def _from_path(op: Operation) -> str:
    """``get_pets_pet_id``: the method, then each path segment without its braces."""
    segments = (slug(s.strip("{}")) for s in op.path.split("/"))
    return "_".join([op.method, *(s for s in segments if s)])


class ToolNamer:
    """Unique component names for one document's operations, in document order."""

    def __init__(self, names: Mapping[str, str] | None = None) -> None:
        self._given = dict(names or {})
        self._taken: set[str] = set()

    def name(self, op: Operation) -> str:
        """``names[operationId]`` if given, else the operationId or method and path."""
        base = self._given.get(op.operation_id or "") if op.operation_id else None
        if base is None:
            base = slug(op.operation_id or "") or _from_path(op)
        base = base[:120]  # room for a suffix within 128
        name, n = base, 1
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        return name
