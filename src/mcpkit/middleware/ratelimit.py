"""Rate limiting: a token bucket per principal, session, client address or tool.

::

    from mcpkit.middleware import rate_limit, by_principal

    server.add_middleware(rate_limit(rate=5, burst=20, key=by_principal))

Each key (:mod:`.keys`) has a bucket of ``burst`` tokens that refills at ``rate``
tokens a second; a request takes ``cost`` tokens, and one that finds too few is
refused before any handler runs with :class:`RateLimited`: JSON-RPC error
``-31429`` whose ``data.retryAfter`` says how many seconds until it would pass.
Over Streamable HTTP the answer is HTTP 429 with ``Retry-After`` wherever the
status is still to be sent (:mod:`mcpkit.protocol.http_errors`). The code is
mcpkit's own: MCP defines none for a refused request, and new codes belong
outside JSON-RPC's reserved range (2026-07-28 basic § error codes).

Buckets live in a :class:`BucketStore`: :class:`MemoryBuckets` (one process) by
default, :class:`mcpkit.middleware.redis.RedisBuckets` in a cluster (one atomic
script per request, so every node draws on the same budget). Give
``store=`` either, or the server's store (a :class:`~mcpkit.stores.redis.RedisStore`
means Redis, a ``MemoryStore`` memory).

Only ``methods`` are counted (default: every request but ``initialize`` and
``ping``, which a client needs to learn it is limited); a request whose key is
None is not counted.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any, Final

from .._buckets import DEFAULT_MAX_BUCKETS, BucketStore, MemoryBuckets
from ..errors import ConfigurationError, MCPError
from ..protocol.http_errors import TOO_MANY_REQUESTS
from ..server.middleware import CallNext, Middleware, MiddlewareContext
from .keys import KeyFunction, by_principal, digest

__all__ = [
    "DEFAULT_MAX_BUCKETS",
    "TOO_MANY_REQUESTS",
    "BucketStore",
    "MemoryBuckets",
    "RateLimited",
    "rate_limit",
]

_UNCOUNTED: Final = frozenset({"initialize", "ping"})


class RateLimited(MCPError):
    """A request over its rate limit: ``-31429``, ``data.retryAfter`` in seconds."""

    code = TOO_MANY_REQUESTS

    def __init__(self, retry_after: float, *, limit: str) -> None:
        wait = math.ceil(retry_after * 1000) / 1000
        super().__init__(
            f"Too many requests: over the rate limit ({limit}); retry in {wait:g} s",
            data={"retryAfter": wait, "limit": limit},
        )
        self.retry_after = wait


def _bucket_store(store: Any) -> BucketStore:
    if store is None or getattr(store, "shared", None) is False:  # None, or MemoryStore
        return MemoryBuckets()
    if isinstance(store, BucketStore):
        return store
    if getattr(store, "shared", False) and hasattr(store, "client"):
        from .redis import RedisBuckets  # the redis extra, only for a Redis store

        return RedisBuckets(store)
    raise ConfigurationError(
        "rate_limit: store must be a BucketStore (MemoryBuckets, RedisBuckets) or a "
        f"RedisStore, not {type(store).__name__}"
    )


def rate_limit(
    *,
    rate: float,
    burst: float,
    key: KeyFunction = by_principal,
    cost: float = 1.0,
    methods: Collection[str] | None = None,
    store: Any = None,
    name: str | None = None,
) -> Middleware:
    """A middleware refusing requests over ``rate`` a second (bursts of ``burst``) per key.

    ``key``: whose bucket a request draws on (:mod:`.keys`; default the principal).
    ``cost``: tokens per request. ``methods``: the methods counted (default all but
    ``initialize`` and ``ping``). ``store``: a :class:`BucketStore` or a
    :class:`~mcpkit.stores.redis.RedisStore` (default: this process's memory).
    ``name``: how the limit is named in errors (default ``"<rate>/s"``); several
    limits with the same store need different names, which keep their buckets apart.
    """
    for label, value in (("rate", rate), ("burst", burst), ("cost", cost)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ConfigurationError(
                f"rate_limit: {label} must be a positive number, not {value!r}"
            )
    if cost > burst:
        raise ConfigurationError(
            f"rate_limit: cost {cost!r} is more than burst {burst!r}: no request could pass"
        )
    if not callable(key):
        raise ConfigurationError(f"rate_limit: key must be a function of the context, not {key!r}")
    counted = None if methods is None else frozenset(methods)
    buckets = _bucket_store(store)
    # In memory: the key as it is (after the limit's prefix), taken without a coroutine:
    # a dict operation. A shared store gets a digest: user text never becomes a Redis key.
    memory = buckets if isinstance(buckets, MemoryBuckets) else None
    limit = name if name is not None else f"{rate:g}/s, burst {burst:g}"
    prefix = digest(limit)[:8] + ":"
    rate_f, burst_f, cost_f = float(rate), float(burst), float(cost)

    async def rate_limited(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        method = ctx.method
        if (method in _UNCOUNTED) if counted is None else (method not in counted):
            return await call_next(ctx)
        who = key(ctx)
        if who is None:
            return await call_next(ctx)
        if memory is not None:
            wait = memory.take_now(prefix + who, rate_f, burst_f, cost_f)
        else:
            wait = await buckets.take(prefix + digest(who), rate=rate_f, burst=burst_f, cost=cost_f)
        if wait > 0.0:
            raise RateLimited(wait, limit=limit)
        return await call_next(ctx)

    return rate_limited
