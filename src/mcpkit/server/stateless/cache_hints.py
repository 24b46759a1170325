"""Caching hints of the 2026-07-28 era: ``ttlMs`` and ``cacheScope`` (SEP-2549).

List and read results of 2026-07-28 carry how long a client (or a shared cache)
may keep them. They are resolved from the most specific setting down: the read
resource's or template's own :class:`CacheHint` (``resources/read`` only), then
the per-method hint of ``CacheOptions(methods={...})``, then the server-wide
``CacheOptions(ttl_ms=..., scope=...)`` (given as ``MCPServer(cache=...)``). A hint
field left ``None`` falls through to the next level, so ``CacheHint(ttl_ms=60_000)``
keeps the server's scope. Handshake-era results never carry them (the fields do not
exist there); they are written into results by
:func:`mcpkit.server.stateless.dispatch.complete_result`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from ...errors import ConfigurationError
from ...protocol.envelope import CACHEABLE_METHODS

__all__ = [
    "CacheHint",
    "CacheOptions",
    "CacheScope",
    "check_cache_hint",
    "check_cache_scope",
    "check_ttl_ms",
]

CacheScope = Literal["public", "private"]
_SCOPES: Final = ("public", "private")  # 2026-07-28 server/utilities/caching § cache scope


def check_ttl_ms(option: str, value: object) -> None:
    """Refuse a ``ttlMs`` servers may not send: an integer >= 0 (caching § TTL field)."""
    if type(value) is not int or value < 0:
        raise ConfigurationError(f"{option} must be an integer >= 0 (milliseconds), got {value!r}")


def check_cache_scope(option: str, value: object) -> None:
    if value not in _SCOPES:
        raise ConfigurationError(f"{option} must be 'public' or 'private', got {value!r}")


@dataclass(frozen=True, slots=True)
class CacheHint:
    """``ttlMs`` and ``cacheScope`` for a list method, a resource or a resource template.

    A field left ``None`` inherits from the next, less specific level (see the
    module docstring). ``scope="public"`` lets a shared cache serve the result
    to every caller, so keep it for results that are the same for everyone.
    """

    ttl_ms: int | None = None
    scope: CacheScope | None = None

    def __post_init__(self) -> None:
        if self.ttl_ms is not None:
            check_ttl_ms("CacheHint.ttl_ms", self.ttl_ms)
        if self.scope is not None:
            check_cache_scope("CacheHint.scope", self.scope)

    def fields(self) -> dict[str, Any]:
        """The hint's set fields as result members (``ttlMs``, ``cacheScope``)."""
        out: dict[str, Any] = {}
        if self.ttl_ms is not None:
            out["ttlMs"] = self.ttl_ms
        if self.scope is not None:
            out["cacheScope"] = self.scope
        return out


def check_cache_hint(where: str, value: object) -> None:
    """Refuse a ``cache=`` that is not a :class:`CacheHint` (None means none)."""
    if value is not None and not isinstance(value, CacheHint):
        raise ConfigurationError(f"{where}: cache must be a CacheHint, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheOptions:
    """A server's caching hints: ``MCPServer(cache=CacheOptions(...))``.

    ``ttl_ms`` and ``scope`` are the server-wide hint (defaults ``0`` and
    ``"private"``: they promise nothing, stale at once and never shared across
    credentials); ``methods`` refines them per cacheable method
    (``{"tools/list": CacheHint(ttl_ms=300_000, scope="public")}``). A resource's
    own hint is given where the resource is registered.
    """

    ttl_ms: int = 0
    scope: CacheScope = "private"
    methods: Mapping[str, CacheHint] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_ttl_ms("CacheOptions.ttl_ms", self.ttl_ms)
        check_cache_scope("CacheOptions.scope", self.scope)
        if not isinstance(self.methods, Mapping):
            raise ConfigurationError(
                "CacheOptions.methods must be a mapping of method name to CacheHint"
            )
        for method, hint in self.methods.items():
            if method not in CACHEABLE_METHODS:
                raise ConfigurationError(
                    f"CacheOptions.methods[{method!r}]: not a cacheable method; "
                    f"use one of {sorted(CACHEABLE_METHODS)}"
                )
            if not isinstance(hint, CacheHint):
                raise ConfigurationError(
                    f"CacheOptions.methods[{method!r}]: expected a CacheHint, got {hint!r}"
                )
        # A copy, read-only: the caller's dict changing later must not change the server.
        object.__setattr__(self, "methods", MappingProxyType(dict(self.methods)))
