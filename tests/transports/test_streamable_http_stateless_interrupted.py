"""A stateless request's disconnect watcher (:class:`DisconnectWatch`) stops, bounded, even
where its cancellation is lost (Python 3.11's ``asyncio.wait_for``, CPython gh-86296), and
stopping it never swallows the request's own cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit.transports.streamable_http_stateless import DisconnectWatch


class _LosesOneCancel:
    """An ASGI ``receive`` that drops the first cancellation it gets and waits on, as a
    server's ``receive`` built on Python 3.11's ``asyncio.wait_for`` can."""

    def __init__(self) -> None:
        self.lost = 0

    async def __call__(self) -> dict[str, Any]:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if self.lost:
                    raise
                self.lost += 1


async def _started(receive: Any) -> DisconnectWatch:
    watch = DisconnectWatch(receive, session=None, rid=1)  # type: ignore[arg-type]
    watch.start()
    await asyncio.sleep(0.01)  # the watcher waits in receive()
    return watch


async def test_stop_ends_a_watcher_that_lost_its_cancellation() -> None:
    receive = _LosesOneCancel()
    watch = await _started(receive)
    stopping = asyncio.ensure_future(watch.stop())
    done, _ = await asyncio.wait({stopping}, timeout=3.0)
    if not done:
        stopping.cancel()
        raise AssertionError("DisconnectWatch.stop() waits forever on a lost cancellation")
    assert stopping.result() is False  # the client had not gone
    assert receive.lost == 1


async def test_stopping_the_watcher_does_not_swallow_the_requests_cancellation() -> None:
    stuck = asyncio.Event()

    async def receive() -> dict[str, Any]:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stuck.set()
            await asyncio.sleep(3600)  # ignores every cancellation but the last one
        return {"type": "http.request"}

    watch = await _started(receive)

    async def request() -> str:
        await watch.stop()
        return "went on"

    task = asyncio.ensure_future(request())
    await asyncio.wait_for(stuck.wait(), 2.0)
    task.cancel()  # the request is cancelled while it waits for its watcher
    done, _ = await asyncio.wait({task}, timeout=2.0)
    assert done, "the request's cancellation was swallowed"
    assert task.cancelled()
