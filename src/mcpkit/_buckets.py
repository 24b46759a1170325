"""Token buckets by key, in memory or on Redis: what mcpkit's rate limits draw on.

One leaf module so that both the request middleware (:mod:`mcpkit.middleware.ratelimit`)
and the authorization server's registration limits (:mod:`mcpkit.auth.server.limits`),
which sit in layers that may not import each other, count with the same code. Each key
has a bucket of ``burst`` tokens refilled at ``rate`` a second; taking ``cost`` tokens
answers 0.0, or the seconds until they would be there (nothing is taken then).

:class:`MemoryBuckets` keeps them in this process; :class:`ScriptBuckets` keeps them in
Redis, where one Lua script reads, refills, takes and writes a bucket atomically, so
every node of a cluster draws on the same budget. This module imports no Redis client:
:class:`ScriptBuckets` is given one (a ``redis.asyncio.Redis``) with the errors to catch.
"""

from __future__ import annotations

import time
from typing import Any, Final, Protocol, runtime_checkable

from .errors import ConfigurationError, StoreUnavailable

__all__ = ["DEFAULT_MAX_BUCKETS", "TAKE_LUA", "BucketStore", "MemoryBuckets", "ScriptBuckets"]

#: Buckets a MemoryBuckets keeps, unless told otherwise.
DEFAULT_MAX_BUCKETS: Final = 100_000


@runtime_checkable
class BucketStore(Protocol):
    """Token buckets by key, refilled at ``rate`` a second up to ``burst``."""

    async def take(self, key: str, *, rate: float, burst: float, cost: float) -> float:
        """Take ``cost`` tokens from ``key``'s bucket; 0.0 when they were there, else
        the seconds until they will be (nothing is taken then)."""
        ...


class MemoryBuckets:
    """The in-memory :class:`BucketStore`: one process, at most ``max_keys`` buckets.

    A bucket left untouched long enough to be full again is as good as absent, so
    the least recently used goes first when the table is full (its key starts over
    with a full bucket, which errs on the side of serving).
    """

    __slots__ = ("_buckets", "clock", "max_keys")

    def __init__(self, *, max_keys: int = DEFAULT_MAX_BUCKETS) -> None:
        if type(max_keys) is not int or max_keys < 1:
            raise ConfigurationError(
                f"MemoryBuckets: max_keys must be a positive integer, not {max_keys!r}"
            )
        self.max_keys = max_keys
        #: The monotonic clock the buckets refill by (replaceable in tests).
        self.clock = time.monotonic
        self._buckets: dict[str, tuple[float, float]] = {}

    async def take(self, key: str, *, rate: float, burst: float, cost: float) -> float:
        return self.take_now(key, rate, burst, cost)

    def take_now(self, key: str, rate: float, burst: float, cost: float) -> float:
        """:meth:`take` without a coroutine: what the middleware calls on this store."""
        now = self.clock()
        buckets = self._buckets
        found = buckets.pop(key, None)  # re-inserted below: the dict's order is recency
        if found is None:
            tokens = burst
        else:
            tokens = found[0] + (now - found[1]) * rate  # the clock is monotonic
            if tokens > burst:
                tokens = burst
        wait = 0.0
        if tokens >= cost:
            tokens -= cost
        else:
            wait = (cost - tokens) / rate
        buckets[key] = (tokens, now)
        if len(buckets) > self.max_keys:
            del buckets[next(iter(buckets))]
        return wait


# KEYS[1] the bucket; ARGV rate, burst, cost. Returns the wait in seconds as a string
# ("0" when the tokens were taken): Lua numbers come back to the client as integers.
# Redis's clock (TIME), not the nodes': buckets stay fair across nodes whose clocks drift.
TAKE_LUA: Final = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local v = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(v[1])
local at = tonumber(v[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= cost then
  tokens = tokens - cost
else
  wait = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return tostring(wait)
"""


class ScriptBuckets:
    """A :class:`BucketStore` on a Redis client: one ``EVALSHA`` per take, under ``prefix``.

    A bucket's key expires once it would be full again (+1 s). ``failures``: the
    client's errors, raised again as :class:`~mcpkit.errors.StoreUnavailable` naming
    ``where`` (the server, its password hidden).
    """

    __slots__ = ("_script", "failures", "prefix", "where")

    def __init__(
        self,
        client: Any,
        *,
        prefix: str,
        where: str,
        failures: tuple[type[BaseException], ...],
    ) -> None:
        self.prefix = prefix
        self.where = where
        self.failures = failures
        self._script = client.register_script(TAKE_LUA)

    async def take(self, key: str, *, rate: float, burst: float, cost: float) -> float:
        try:
            wait = await self._script(
                keys=[self.prefix + key], args=[repr(rate), repr(burst), repr(cost)]
            )
        except self.failures as exc:
            raise StoreUnavailable(
                f"Redis at {self.where} is unavailable: {type(exc).__name__}: {exc}"
            ) from exc
        return float(wait)
