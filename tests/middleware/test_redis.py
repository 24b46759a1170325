"""The built-in middleware's state on Redis: buckets spent atomically, cache entries' expiry."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import redis.asyncio

from mcpkit.middleware import rate_limit
from mcpkit.middleware.redis import RedisBuckets, RedisCache
from mcpkit.stores.redis import RedisStore
from mcpkit.testing import connect
from tests.middleware.conftest import ALICE, STATELESS, demo
from tests.redis_server import RedisServer

SLOW = 0.001


async def test_redis_buckets_spend_each_token_once_under_concurrency(
    redis_stores: Callable[[], RedisStore],
) -> None:
    a, b = RedisBuckets(redis_stores()), RedisBuckets(redis_stores())
    take = {"rate": SLOW, "burst": 10.0, "cost": 1.0}
    waits = await asyncio.gather(*(node.take("k", **take) for node in (a, b) * 15))
    assert sum(1 for w in waits if w == 0.0) == 10
    assert all(w > 100 for w in waits if w != 0.0)


async def test_redis_buckets_refill_by_the_clock(redis_stores: Callable[[], RedisStore]) -> None:
    buckets = RedisBuckets(redis_stores())
    take = {"rate": 20.0, "burst": 1.0, "cost": 1.0}
    assert await buckets.take("k", **take) == 0.0
    wait = await buckets.take("k", **take)
    assert 0 < wait <= 0.05
    await asyncio.sleep(wait + 0.02)
    assert await buckets.take("k", **take) == 0.0


async def test_on_redis_a_counted_request_costs_one_script_call(tmp_path: Path) -> None:
    own = RedisServer(tmp_path)  # of this test alone: its statistics count this test only
    own.start()
    store = RedisStore(own.url, prefix="rl-cost:")
    admin = redis.asyncio.Redis.from_url(own.url)
    try:
        server = demo(store=store, middleware=[rate_limit(rate=SLOW, burst=10, store=store)])
        async with connect(server, auth_info=ALICE, **STATELESS) as client:
            await client.call_tool("echo", {"text": "warm"})  # loads the script once
            await admin.config_resetstat()
            for _ in range(3):
                await client.call_tool("echo", {"text": "x"})
        stats = await admin.info("commandstats")
        assert stats["cmdstat_evalsha"]["calls"] == 3
        # Redis counts the script's own commands too; no other command came from a client.
        inside = {"time", "hmget", "hset", "pexpire"}
        assert {name.removeprefix("cmdstat_") for name in stats} <= {
            "evalsha",
            "info",
            "config|resetstat",
            *inside,
        }
    finally:
        await admin.aclose()
        await store.aclose()
        own.stop()


async def test_cache_entries_expire_by_their_own_deadline(
    redis_stores: Callable[[], RedisStore],
) -> None:
    cache = RedisCache(redis_stores())
    await cache.put("tools", "short", b"1", 0.05)
    await cache.put("tools", "long", b"2", 60)
    assert await cache.get("tools", "short") == b"1"
    await asyncio.sleep(0.15)
    assert await cache.get("tools", "short") is None
    assert await cache.get("tools", "long") == b"2"  # the group's hash lives on
    await cache.drop("tools")
    assert await cache.get("tools", "long") is None
