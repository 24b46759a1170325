"""mcpkit.loops: uvloop for the loops mcpkit owns, and never a change to the application's policy."""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest
import uvloop

from mcpkit.client.blocking import LoopThread
from mcpkit.loops import cancel_and_wait, new_event_loop, run

pytestmark = pytest.mark.uvloop


def test_new_event_loop_is_uvloop_when_installed() -> None:
    loop = new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_new_event_loop_falls_back_to_asyncio_without_uvloop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    loop = new_event_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
        assert isinstance(loop, asyncio.AbstractEventLoop)
    finally:
        loop.close()


def test_run_runs_the_coroutine_on_uvloop_and_leaves_the_policy_alone() -> None:
    policy = asyncio.get_event_loop_policy()

    async def main() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run(main()).startswith("uvloop")
    assert asyncio.get_event_loop_policy() is policy


def test_run_propagates_the_coroutine_exception() -> None:
    async def main() -> None:
        raise LookupError("boom")

    with pytest.raises(LookupError, match="boom"):
        run(main())


def test_the_blocking_facade_owns_a_uvloop_loop() -> None:
    thread = LoopThread()
    try:
        assert isinstance(thread.loop, uvloop.Loop)
        assert thread.run(lambda: 41 + 1) == 42
    finally:
        thread.stop()
    assert thread.loop.is_closed()


# -- cancel_and_wait ------------------------------------------------------------------------------


class _Stubborn:
    """Sleeps on through its first ``times`` cancellations (as a task whose cancellation
    Python 3.11's wait_for dropped does, CPython gh-86296), then ends at the next."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.ignored = 0

    async def run(self) -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if self.ignored >= self.times:
                    raise
                self.ignored += 1

    async def end(self, task: asyncio.Task[None]) -> None:
        """The test's own cleanup: the next cancellation ends it."""
        self.times = 0
        task.cancel()
        await asyncio.wait({task}, timeout=2.0)
        assert task.cancelled()


async def test_cancel_and_wait_cancels_again_a_task_that_lost_a_cancellation() -> None:
    stubborn = _Stubborn(1)
    task = asyncio.ensure_future(stubborn.run())
    await asyncio.sleep(0)
    assert await cancel_and_wait(task, timeout=5.0, what="test") is True
    assert stubborn.ignored == 1
    assert task.cancelled()


async def test_cancel_and_wait_gives_up_with_a_warning_after_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stubborn = _Stubborn(10**6)
    task = asyncio.ensure_future(stubborn.run())
    task.set_name("stubborn")
    polite = asyncio.ensure_future(asyncio.sleep(3600))
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with caplog.at_level(logging.WARNING, logger="mcpkit.loops"):
        assert await cancel_and_wait(task, polite, timeout=0.35, what="the test's") is False
    took = loop.time() - started
    assert 0.3 <= took < 2.0
    assert polite.cancelled() and not task.done()
    assert stubborn.ignored >= 3  # cancelled again and again meanwhile
    [warning] = [r for r in caplog.records if r.name == "mcpkit.loops"]
    assert warning.levelno == logging.WARNING
    assert "the test's: stubborn did not stop within 0.35 s" in warning.getMessage()
    await stubborn.end(task)


async def test_cancel_and_wait_lets_the_callers_own_cancellation_through() -> None:
    stubborn = _Stubborn(10**6)
    inner = asyncio.ensure_future(stubborn.run())
    await asyncio.sleep(0)
    outer = asyncio.ensure_future(cancel_and_wait(inner, timeout=30.0, what="test"))
    await asyncio.sleep(0.05)  # outer waits for inner, which ignores its cancellations
    assert not outer.done()
    outer.cancel()
    done, _ = await asyncio.wait({outer}, timeout=2.0)
    assert done, "the caller's cancellation was swallowed"
    assert outer.cancelled()
    assert stubborn.ignored  # inner was cancelled before the caller was
    await stubborn.end(inner)


async def test_cancel_and_wait_returns_at_once_for_ended_tasks_and_raises_no_failure() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    failed = asyncio.ensure_future(fails())
    await asyncio.sleep(0)
    assert failed.done()
    assert await cancel_and_wait(failed, timeout=0.0, what="test") is True
    assert await cancel_and_wait(timeout=0.0, what="nothing") is True
    assert isinstance(failed.exception(), ValueError)
