"""Response caching: listings and resource reads, kept for a while and dropped on change.

::

    from mcpkit.middleware import ResponseCache

    ResponseCache(ttl=60).install(server)

What is cached: the results of ``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list`` (each page, by cursor) and
``resources/read`` (by URI), for ``ttl`` seconds. Each entry is keyed by the
protocol revision (listings are shaped per revision) and, on an authenticated
request, by its principal: a listing or a read may depend on the caller's
scopes, so one user's answer is never handed to another (``per_principal=False``
shares entries when no component of the server is scoped). ``_meta`` of the
request is not part of the key (trace context differs on every request).

What drops entries before their ttl, as the server announces changes
(2025-11-25 server/tools, server/resources, server/prompts § list changed,
§ subscriptions):

- ``notifications/tools/list_changed`` → the tool listings;
- ``notifications/prompts/list_changed`` → the prompt listings;
- ``notifications/resources/list_changed`` → the resource and template listings;
- ``notifications/resources/updated`` (``server.resources.notify_updated(uri)``)
  → the reads of that URI.

Registration hooks this to the server: :meth:`ResponseCache.install` (or the first
request, when the cache was given as ``MCPServer(middleware=[cache])``). A tool
added without ``notify_list_changed()`` is seen once the ttl ran out.

Entries live in a :class:`CacheStore`: :class:`MemoryCache` by default; in a cluster,
:class:`mcpkit.middleware.redis.RedisCache` (give ``store=`` the server's
``RedisStore``), so that an entry one node filled serves them all, and a change
announced on any node drops it for all. A result that asks for more input
(2026-07-28 ``input_required``) or an error is never cached.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import orjson

from ..errors import ConfigurationError
from ..server.middleware import CallNext, MiddlewareContext
from .keys import digest

if TYPE_CHECKING:
    from ..server.server import MCPServer

__all__ = ["CACHED_METHODS", "CacheStore", "MemoryCache", "ResponseCache"]

#: Method → the group its entries belong to (a change drops a whole group).
_GROUPS: Final = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
}
CACHED_METHODS: Final = frozenset({*_GROUPS, "resources/read"})
#: Broadcast → the group it makes stale.
_STALE: Final = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
DEFAULT_MAX_ENTRIES: Final = 10_000


@runtime_checkable
class CacheStore(Protocol):
    """Cached answers in groups: an entry is found by group and key, a group dropped whole."""

    async def get(self, group: str, key: str) -> bytes | None:
        """The entry, or None when absent or expired."""
        ...

    async def put(self, group: str, key: str, value: bytes, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds."""
        ...

    async def drop(self, group: str) -> None:
        """Forget every entry of ``group``."""
        ...


class MemoryCache:
    """The in-memory :class:`CacheStore`: one process, at most ``max_entries`` entries."""

    __slots__ = ("_groups", "_order", "max_entries")

    def __init__(self, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if type(max_entries) is not int or max_entries < 1:
            raise ConfigurationError(
                f"MemoryCache: max_entries must be a positive integer, not {max_entries!r}"
            )
        self.max_entries = max_entries
        self._groups: dict[str, dict[str, tuple[float, bytes]]] = {}
        self._order: OrderedDict[tuple[str, str], None] = OrderedDict()  # oldest put first

    def __len__(self) -> int:
        return len(self._order)

    async def get(self, group: str, key: str) -> bytes | None:
        entry = self._groups.get(group, {}).get(key)
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            del self._groups[group][key]
            self._order.pop((group, key), None)
            return None
        return entry[1]

    async def put(self, group: str, key: str, value: bytes, ttl: float) -> None:
        self._groups.setdefault(group, {})[key] = (time.monotonic() + ttl, value)
        self._order.pop((group, key), None)
        self._order[(group, key)] = None
        while len(self._order) > self.max_entries:
            (old_group, old_key), _ = self._order.popitem(last=False)
            self._groups[old_group].pop(old_key, None)

    async def drop(self, group: str) -> None:
        for key in self._groups.pop(group, {}):
            self._order.pop((group, key), None)


def _cache_store(store: Any) -> CacheStore:
    if store is None or getattr(store, "shared", None) is False:  # None, or MemoryStore
        return MemoryCache()
    if isinstance(store, CacheStore):
        return store
    if getattr(store, "shared", False) and hasattr(store, "client"):
        from .redis import RedisCache  # the redis extra, only for a Redis store

        return RedisCache(store)
    raise ConfigurationError(
        "ResponseCache: store must be a CacheStore (MemoryCache, RedisCache) or a "
        f"RedisStore, not {type(store).__name__}"
    )


class ResponseCache:
    """A middleware answering repeated listings and reads from its :class:`CacheStore`.

    ``ttl``: seconds an entry is served. ``methods``: which of
    :data:`CACHED_METHODS` to cache (default all). ``per_principal``: key entries
    by the caller's principal on authenticated requests (default True).
    ``store``: a :class:`CacheStore` or the server's ``RedisStore``.
    """

    __slots__ = ("__weakref__", "_drops", "_servers", "methods", "per_principal", "store", "ttl")

    def __init__(
        self,
        *,
        ttl: float = 60.0,
        methods: Collection[str] | None = None,
        per_principal: bool = True,
        store: Any = None,
    ) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise ConfigurationError(f"ResponseCache: ttl must be a positive number, not {ttl!r}")
        chosen = CACHED_METHODS if methods is None else frozenset(methods)
        unknown = sorted(chosen - CACHED_METHODS)
        if unknown:
            raise ConfigurationError(
                f"ResponseCache: cannot cache {', '.join(unknown)}; "
                f"only {', '.join(sorted(CACHED_METHODS))}"
            )
        self.ttl = float(ttl)
        self.methods = chosen
        self.per_principal = per_principal
        self.store: CacheStore = _cache_store(store)
        self._servers: weakref.WeakSet[MCPServer] = weakref.WeakSet()
        # Drops per group in this process: an answer computed while its group was dropped
        # may predate the change, so it is not kept (another node's drop bounds it by ttl).
        self._drops: dict[str, int] = {}

    def install(self, server: MCPServer) -> ResponseCache:
        """Listen to ``server``'s changes and join its middleware chain (innermost)."""
        self.watch(server)
        server.add_middleware(self)
        return self

    def watch(self, server: MCPServer) -> None:
        """Drop entries when ``server`` announces a change (once per server)."""
        if server in self._servers:
            return
        self._servers.add(server)
        server.add_broadcast_listener(self._on_broadcast)
        server.resources.add_update_listener(self.drop_reads)

    async def _on_broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        group = _STALE.get(method)
        if group is not None:
            await self._drop(group)

    async def drop_reads(self, uri: str) -> None:
        """Forget the cached reads of ``uri`` (``notifications/resources/updated``)."""
        await self._drop("read:" + uri)

    async def _drop(self, group: str) -> None:
        drops = self._drops
        drops[group] = drops.get(group, 0) + 1
        await self.store.drop(group)

    def _place(self, ctx: MiddlewareContext) -> tuple[str, str] | None:
        method = ctx.method
        params = ctx.params
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str):
                return None
            group, what = "read:" + uri, b""
        else:
            group = _GROUPS[method]
            cursor = params.get("cursor")
            what = orjson.dumps([method, cursor])
        who = ""
        if self.per_principal:
            auth = ctx.auth
            if auth is not None:
                who = auth.principal
        return group, digest(f"{ctx.revision}\x00{who}\x00") + digest(what.decode())

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method not in self.methods:
            return await call_next(ctx)
        if ctx.server not in self._servers:
            self.watch(ctx.server)
        place = self._place(ctx)
        if place is None:
            return await call_next(ctx)
        group, key = place
        hit = await self.store.get(group, key)
        if hit is not None:
            cached: dict[str, Any] = orjson.loads(hit)
            return cached
        drops = self._drops.get(group, 0)
        result = await call_next(ctx)
        if (
            result.get("resultType", "complete") == "complete"
            and self._drops.get(group, 0) == drops
        ):
            await self.store.put(group, key, orjson.dumps(result), self.ttl)
        return result
