"""Caching hints of the 2026-07-28 era: ``ttlMs`` and ``cacheScope`` (SEP-2549).

List and read results of 2026-07-28 carry how long a client (or a shared cache)
may keep them. They are resolved from the most specific setting down: the read
resource's or template's own :class:`CacheHint` (``resources/read`` only), then
the per-method hint of ``MCPServer(cache={...})``, then the server-wide
``cache_ttl_ms``/``cache_scope``. A hint field left ``None`` falls through to the
next level, so ``CacheHint(ttl_ms=60_000)`` keeps the server's scope.
Handshake-era results never carry them (the fields do not exist there); they are
written into results by :func:`mcpkit.server.stateless.dispatch.complete_result`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ...errors import ConfigurationError
from ...protocol.envelope import CACHEABLE_METHODS

__all__ = [
    "CacheHint",
    "CacheScope",
    "check_cache_hint",
    "check_cache_option",
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


def check_cache_option(cache: Mapping[str, CacheHint] | None) -> dict[str, CacheHint]:
    """``MCPServer(cache=...)``: per-method hints, keyed by a cacheable method name."""
    if cache is None:
        return {}
    if not isinstance(cache, Mapping):
        raise ConfigurationError("cache must be a mapping of method name to CacheHint")
    out: dict[str, CacheHint] = {}
    for method, hint in cache.items():
        if method not in CACHEABLE_METHODS:
            raise ConfigurationError(
                f"cache[{method!r}]: not a cacheable method; use one of {sorted(CACHEABLE_METHODS)}"
            )
        if not isinstance(hint, CacheHint):
            raise ConfigurationError(f"cache[{method!r}]: expected a CacheHint, got {hint!r}")
        out[method] = hint
    return out
