"""The built-in middleware's state on Redis: shared rate-limit buckets and response cache.

``pip install 'mcpkit[redis]'``. Both take the server's
:class:`~mcpkit.stores.redis.RedisStore` (its client, its key prefix), so every
node of a cluster that shares the store shares them::

    store = RedisStore("redis://redis:6379/0")
    server = MCPServer(name="Shop", version="1.0.0", store=store)
    server.add_middleware(rate_limit(rate=5, burst=20, store=store))
    ResponseCache(ttl=60, store=store).install(server)

Keys, under the store's prefix (default ``"mcpkit:"``):

================================  ======  ===========================================
key                               type    expires
================================  ======  ===========================================
``<prefix>rl:<limit>:<key>``      hash    once the bucket would be full again (+1 s)
``<prefix>cache:<group>``         hash    ``ttl`` after the group's last write
================================  ======  ===========================================

Costs, each one round trip: a rate-limited request is one ``EVALSHA`` (the
script reads the bucket, refills it by Redis's own clock, takes the tokens and
writes it back: atomic, so two nodes never spend the same token); a cache
lookup ``HGET``; a cache fill ``HSET`` + ``PEXPIRE`` (pipelined); a change
``DEL`` of the group. Redis errors become :class:`~mcpkit.errors.StoreUnavailable`.
"""

from __future__ import annotations

import time
from typing import Any

from .._extras import require_extra

with require_extra("redis", feature="the built-in middleware on Redis (mcpkit.middleware.redis)"):
    from redis.asyncio import Redis

from .._buckets import ScriptBuckets
from ..errors import StoreUnavailable
from ..stores.redis_connection import FAILURES, ms

__all__ = ["RedisBuckets", "RedisCache"]


def _client_of(store: Any) -> tuple[Redis, str, str]:
    client = store.client
    prefix = store.prefix
    where = getattr(store, "url", "Redis")
    return client, prefix, where


def _fail(where: str, exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"Redis at {where} is unavailable: {type(exc).__name__}: {exc}")


class RedisBuckets(ScriptBuckets):
    """A :class:`~mcpkit.middleware.ratelimit.BucketStore` on Redis: one script per take."""

    __slots__ = ()

    def __init__(self, store: Any) -> None:
        client, prefix, where = _client_of(store)
        super().__init__(client, prefix=prefix + "rl:", where=where, failures=FAILURES)


class RedisCache:
    """A :class:`~mcpkit.middleware.cache.CacheStore` on Redis: one hash per group.

    An entry is its expiry (Unix ms) and the answer, so that entries of one group
    may have different deadlines while the hash itself lives ``ttl`` after its last
    write (Redis before 7.4 has no per-field expiry).
    """

    __slots__ = ("client", "prefix", "where")

    def __init__(self, store: Any) -> None:
        self.client, prefix, self.where = _client_of(store)
        self.prefix = prefix + "cache:"

    async def get(self, group: str, key: str) -> bytes | None:
        try:
            raw = await self.client.hget(self.prefix + group, key)
        except FAILURES as exc:
            raise _fail(self.where, exc) from exc
        if not isinstance(raw, bytes) or len(raw) < 9:
            return None
        deadline = int.from_bytes(raw[:8], "big")
        if deadline <= int(time.time() * 1000):
            return None
        return raw[8:]

    async def put(self, group: str, key: str, value: bytes, ttl: float) -> None:
        deadline = int((time.time() + ttl) * 1000).to_bytes(8, "big")
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.hset(self.prefix + group, key, deadline + value)
            pipe.pexpire(self.prefix + group, ms(ttl))
            await pipe.execute()
        except FAILURES as exc:
            raise _fail(self.where, exc) from exc

    async def drop(self, group: str) -> None:
        try:
            await self.client.delete(self.prefix + group)
        except FAILURES as exc:
            raise _fail(self.where, exc) from exc
