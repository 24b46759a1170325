"""The body deadline of a POST: one timer for all the requests of a loop reading a body.

``read_json_post`` (Streamable HTTP and the legacy SSE transport) and ``read_body`` give
a body ``timeout`` seconds. The deadlines are kept by one clock per loop and timeout
(``http_intake._BodyClock``) rather than an ``asyncio.timeout`` per request; these tests
hold it to what ``asyncio.timeout`` did: each read gets its own deadline, a read that
ends in time is untouched, a cancellation from elsewhere stays a cancellation, and the
clock works again on the next loop. A real server's 408 is in test_connection_limits.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest

from mcpkit.errors import BodyTimeout
from mcpkit.transports.http_intake import REFUSED, read_body, read_json_post

HEADERS = {b"content-type": b"application/json"}


def never() -> Any:
    """A receive whose body never arrives."""

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return receive


def after(delay: float, body: bytes) -> Any:
    """A receive whose whole body arrives after ``delay`` seconds."""

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(delay)
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


class Sent:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int | None:
        return self.messages[0]["status"] if self.messages else None


async def timed_read(receive: Any, timeout: float) -> tuple[Any, Sent, float]:
    sent = Sent()
    start = time.monotonic()
    result = await read_json_post(receive, sent, HEADERS, max_body_size=1000, body_timeout=timeout)
    return result, sent, time.monotonic() - start


async def test_each_read_gets_its_own_deadline() -> None:
    # Three bodies that never arrive, started 0.15 s apart, and one that arrives in time:
    # each stalled read ends at its own deadline, not at the first one's.
    tasks = []
    for _ in range(3):
        tasks.append(asyncio.create_task(timed_read(never(), 0.5)))
        await asyncio.sleep(0.15)
    fine = asyncio.create_task(timed_read(after(0.1, b'{"ok": 1}'), 0.5))
    results = await asyncio.gather(*tasks, fine)
    for result, sent, took in results[:3]:
        assert result is REFUSED
        assert sent.status == 408
        assert b"did not arrive within 0.5 s" in sent.messages[1]["body"]
        assert 0.45 <= took < 3.0, took
    result, sent, took = results[3]
    assert result == {"ok": 1} and sent.messages == []


async def test_a_read_that_ends_in_time_is_not_cancelled_later() -> None:
    result, sent, _ = await timed_read(after(0.0, orjson.dumps({"n": 1})), 0.2)
    assert result == {"n": 1}
    # The task goes on past the deadline the read had: nothing cancels it.
    await asyncio.sleep(0.4)
    assert sent.messages == []


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    task = asyncio.create_task(timed_read(never(), 5.0))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelled_from_elsewhere_at_the_deadline_is_still_cancelled() -> None:
    # The clock and someone else both cancel the read, in the same turn of the loop: the
    # task stays cancelled (asyncio.timeout's rule); it does not answer 408 and carry on.
    async def receive() -> dict[str, Any]:
        task = asyncio.current_task()
        assert task is not None
        waiting: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # Added before the task awaits it, so it runs first: the second cancel lands
        # after the clock's and before the task wakes.
        waiting.add_done_callback(lambda _f: task.cancel())
        await waiting
        raise AssertionError("unreachable")

    reader = asyncio.create_task(timed_read(receive, 0.2))
    with pytest.raises(asyncio.CancelledError):
        await reader


async def test_read_body_raises_body_timeout() -> None:
    start = time.monotonic()
    with pytest.raises(BodyTimeout):
        await read_body(never(), 1000, 0.2)
    assert time.monotonic() - start >= 0.18
    assert await read_body(after(0.0, b"abc"), 1000, 0.2) == b"abc"


@pytest.mark.parametrize("run", range(3))
def test_the_clock_works_on_every_loop(run: int) -> None:
    # A clock is per loop: a timer left on a closed loop must not stop the next from timing.
    async def stalled() -> tuple[Any, Sent, float]:
        return await timed_read(never(), 0.1)

    result, sent, _ = asyncio.run(stalled())
    assert result is REFUSED and sent.status == 408
