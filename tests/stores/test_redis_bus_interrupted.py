"""The cluster bus (:class:`mcpkit.stores.redis_bus.RedisBus`) interrupted: ``aclose``
ends its tasks even where a cancellation is lost (Python 3.11's ``asyncio.wait_for``
inside redis-py, CPython gh-86296), and a connect cut short anywhere leaves nothing
behind. Against a real ``redis-server`` (tests/stores/conftest.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any
from uuid import uuid4

from redis.asyncio import Redis

from mcpkit.stores.redis_bus import RedisBus
from tests.redis_server import RedisServer
from tests.stores.test_redis_bus import Inbox, _until


async def _closes(bus: RedisBus, within: float = 3.0) -> None:
    """``bus.aclose()`` returns within ``within`` seconds (bounded by a watchdog task, not
    by cancelling the caller, whose cancellation an aclose could swallow)."""
    started = time.monotonic()
    closing = asyncio.ensure_future(bus.aclose())
    done, _ = await asyncio.wait({closing}, timeout=within + 2)
    if not done:
        closing.cancel()
        raise AssertionError(f"aclose() did not return within {within + 2} s")
    closing.result()
    assert time.monotonic() - started < within, f"aclose() took {time.monotonic() - started} s"


class _LosesOneCancel:
    """Wraps a bus coroutine method so that the first cancellation it gets is dropped and
    the call completes, as Python 3.11's ``asyncio.wait_for`` does inside redis-py when
    the cancellation lands as a send completes (CPython gh-86296)."""

    def __init__(self, method: Callable[[], Any]) -> None:
        self.method = method
        self.lost = 0

    async def __call__(self) -> Any:
        if self.lost:
            return await self.method()
        try:
            await asyncio.sleep(3600)  # where the cancellation lands
        except asyncio.CancelledError:
            self.lost += 1
        return await self.method()


async def test_aclose_ends_a_heartbeat_that_lost_its_cancellation(redis_url: str) -> None:
    bus = RedisBus(redis_url, prefix=f"lost-{uuid4().hex}:", node_ttl=0.3)
    await bus.start(Inbox())
    beat = _LosesOneCancel(bus._beat)
    bus._beat = beat  # type: ignore[method-assign]
    await asyncio.sleep(0.2)  # the next beat (every 0.1 s) waits in the wrapper
    heart = bus._heart
    assert heart is not None
    await _closes(bus)
    assert beat.lost == 1
    assert heart.done(), "the heartbeat runs on after aclose()"


async def test_aclose_ends_a_reconnecting_reader_that_lost_its_cancellation(
    own_redis: RedisServer,
) -> None:
    bus = RedisBus(own_redis.url, prefix="lost:", connect_timeout=0.5, timeout=0.5)
    back = asyncio.Event()
    bus.on_reconnect(back.set)
    await bus.start(Inbox())
    opened = _LosesOneCancel(bus._open)
    bus._open = opened  # type: ignore[method-assign]
    own_redis.stop()  # the reader notices, and reconnects through the wrapper
    await _until("the reader did not try to reconnect", 10, lambda: bus._pubsub is None)
    await asyncio.sleep(0.7)  # past the first 0.5 s pause: in the wrapper
    own_redis.start()
    reader = bus._reader
    assert reader is not None
    await _closes(bus)
    assert opened.lost == 1
    assert reader.done(), "the reader runs on after aclose()"
    assert not back.is_set()  # closed, not reconnected behind aclose's back
    assert bus._pubsub is None and bus._reader is None


async def test_a_connect_cut_short_anywhere_leaves_nothing_behind(own_redis: RedisServer) -> None:
    # Each attempt of the reader is a fresh connection in a pool of its own, closed
    # with it: a connect cancelled at any point (as asyncio.timeout does) leaves no
    # connection open and nothing that could make the next attempt fail.
    bus = RedisBus(own_redis.url, prefix="cut:", connect_timeout=0.5, timeout=0.5)
    raw = Redis.from_url(own_redis.url)
    try:
        baseline = len(await raw.client_list())
        for steps in range(40):
            attempt = asyncio.ensure_future(bus._open())
            for _ in range(steps):
                await asyncio.sleep(0)
            attempt.cancel()
            try:
                pubsub = await attempt
            except asyncio.CancelledError:
                continue
            await bus._close_pubsub(pubsub)
        for _ in range(50):  # Redis counts a closed connection out a moment later
            if len(await raw.client_list()) == baseline:
                break
            await asyncio.sleep(0.05)
        assert len(await raw.client_list()) == baseline
        inbox = Inbox()
        await bus.start(inbox)  # and the bus still connects
        assert await bus.publish(f"n:{bus.node_id}", {"ok": 1}) == 1
        assert await inbox.next() == (f"n:{bus.node_id}", {"ok": 1})
    finally:
        async with asyncio.timeout(5):
            await bus.aclose()
        await raw.aclose()
