"""The worker pool that runs sync user functions off the event loop, on both loops."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from mcpkit.server.context import run_sync
from mcpkit.server.worker_pool import InPlaceWait, WorkerPool, call_in_thread

WAIT = 10.0  # every wait is bounded

Run = Callable[[Coroutine[Any, Any, Any]], Any]


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Iterator[Run]:
    """Run a coroutine to completion on a fresh loop of the given kind, within WAIT."""
    if request.param == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    else:
        factory = asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        yield lambda coro: runner.run(asyncio.wait_for(coro, WAIT))


def waits(flag: bool) -> InPlaceWait | None:
    return InPlaceWait() if flag else None


@pytest.mark.parametrize("wait", [True, False])
def test_runs_in_another_thread_in_a_copy_of_the_callers_context(run: Run, wait: bool) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    def where(suffix: str) -> tuple[int, str]:
        return threading.get_ident(), var.get() + suffix

    async def main() -> tuple[int, tuple[int, str]]:
        var.set("caller")
        return threading.get_ident(), await run_sync(where, {"suffix": "!"}, None, wait=waits(wait))

    loop_thread, (worker_thread, seen) = run(main())
    assert worker_thread != loop_thread
    assert seen == "caller!"


class Boom(Exception):
    pass


@pytest.mark.parametrize("wait", [True, False])
def test_an_exception_reaches_the_caller_unchanged(run: Run, wait: bool) -> None:
    def fail() -> None:
        raise Boom("it broke")

    with pytest.raises(Boom, match="it broke"):
        run(call_in_thread(fail, wait=waits(wait)))


@pytest.mark.parametrize("wait", [True, False])
def test_stop_iteration_becomes_a_runtime_error(run: Run, wait: bool) -> None:
    def stop() -> None:
        raise StopIteration

    with pytest.raises(RuntimeError):
        run(call_in_thread(stop, wait=waits(wait)))


def test_a_function_longer_than_the_in_place_wait_is_awaited_and_the_loop_goes_on(
    run: Run,
) -> None:
    ticks: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def main() -> str:
        stop = asyncio.Event()
        task = asyncio.ensure_future(ticker(stop))
        await asyncio.sleep(0)
        wait = InPlaceWait()
        try:
            # Every call here outlasts the in-place wait: the loop must keep ticking.
            for _ in range(2):
                assert await call_in_thread(lambda: time.sleep(1.0) or "slept", wait=wait)
        finally:
            stop.set()
            await task
        return "done"

    assert run(main()) == "done"
    # ~200 ticks in 2 s. Had the loop waited for a call, one gap would be >= 1 s.
    assert len(ticks) >= 10
    assert max(b - a for a, b in itertools.pairwise(ticks)) < 0.6


def test_in_place_wait_backs_off_after_each_miss_and_resets_after_a_hit() -> None:
    wait = InPlaceWait()
    assert wait.wanted()
    pattern = []
    for _ in range(3):
        wait.missed()
        skipped = 0
        while not wait.wanted():
            skipped += 1
        pattern.append(skipped)
    assert pattern == [1, 2, 4]
    wait.finished_in_time()
    wait.missed()
    assert not wait.wanted()
    assert wait.wanted()


def test_blocking_calls_run_side_by_side(run: Run) -> None:
    # Four calls that can only finish together: they must each have a thread.
    barrier = threading.Barrier(4, timeout=WAIT)

    async def main() -> list[int]:
        calls = [call_in_thread(barrier.wait, wait=InPlaceWait()) for _ in range(4)]
        return list(await asyncio.gather(*calls))

    assert sorted(run(main())) == [0, 1, 2, 3]


def test_a_call_cancelled_before_it_starts_never_runs(run: Run) -> None:
    pool = WorkerPool(max_workers=1)
    release = threading.Event()
    ran: list[str] = []

    async def main() -> None:
        import mcpkit.server.worker_pool as wp

        previous, wp._pool = wp._pool, pool
        try:
            first = asyncio.ensure_future(call_in_thread(lambda: release.wait(WAIT)))
            await asyncio.sleep(0.05)  # the only worker is now busy with `first`
            second = asyncio.ensure_future(call_in_thread(lambda: ran.append("second")))
            await asyncio.sleep(0.05)
            second.cancel()
            release.set()
            assert await first is True
            with pytest.raises(asyncio.CancelledError):
                await second
            # A later call runs: the worker skipped the cancelled one and went on.
            assert await call_in_thread(lambda: "after") == "after"
        finally:
            wp._pool = previous

    run(main())
    assert ran == []


def test_a_call_cancelled_while_running_ends_quietly(run: Run) -> None:
    started = threading.Event()
    finished = threading.Event()
    errors: list[dict[str, Any]] = []

    def slow() -> str:
        started.set()
        time.sleep(0.2)
        finished.set()
        return "late"

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        task = asyncio.ensure_future(call_in_thread(slow, wait=InPlaceWait()))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        while not finished.is_set():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # the dropped result reaches the loop and is discarded

    run(main())
    assert errors == []


@pytest.mark.parametrize("max_workers", [1, 3])
def test_many_calls_through_few_workers_all_come_back(run: Run, max_workers: int) -> None:
    # More calls than workers, quick and slower ones mixed, some waited for in place:
    # every call must come back with its own value (none stranded in the backlog).
    import mcpkit.server.worker_pool as wp

    def work(i: int) -> int:
        if i % 7 == 0:
            time.sleep(0.002)
        return i * i

    async def main() -> list[int]:
        previous, wp._pool = wp._pool, WorkerPool(max_workers=max_workers)
        wait = InPlaceWait()
        try:
            calls = [
                call_in_thread(lambda i=i: work(i), wait=wait if i % 2 else None)
                for i in range(300)
            ]
            results = list(await asyncio.gather(*calls))
            results.append(await call_in_thread(lambda: -1, wait=wait))
            return results
        finally:
            wp._pool = previous

    assert run(main()) == [i * i for i in range(300)] + [-1]


def test_max_workers_must_be_a_positive_int() -> None:
    for bad in (0, -1, 1.5, "4", True):
        with pytest.raises(ValueError, match="max_workers"):
            WorkerPool(max_workers=bad)  # type: ignore[arg-type]


def test_a_burst_of_calls_is_run_by_the_awake_worker_not_a_thread_each(run: Run) -> None:
    # Issue 18: each call of a burst used to wake (or start) a thread of its own, and
    # the threads took turns at the GIL; now the awake worker takes the backlog.
    import mcpkit.server.worker_pool as wp

    pool = WorkerPool(max_workers=8)

    async def main() -> list[int]:
        previous, wp._pool = wp._pool, pool
        try:
            return list(
                await asyncio.gather(*(call_in_thread(threading.get_ident) for _ in range(50)))
            )
        finally:
            wp._pool = previous

    threads = run(main())
    assert len(threads) == 50
    # One thread; two if the machine was too busy to start the first within STALL.
    assert len(set(threads)) <= 2 and len(pool._workers) <= 2


class CountingLoop(asyncio.SelectorEventLoop):
    """asyncio's loop, counting the wake-ups other threads ask of it."""

    wakeups = 0

    def call_soon_threadsafe(self, *args: Any, **kwargs: Any) -> Any:
        CountingLoop.wakeups += 1
        return super().call_soon_threadsafe(*args, **kwargs)


def test_results_that_finish_together_wake_the_loop_once() -> None:
    import mcpkit.server.worker_pool as wp

    pool = WorkerPool(max_workers=1)
    gate = threading.Event()

    async def main() -> list[int]:
        previous, wp._pool = wp._pool, pool
        try:
            first = asyncio.ensure_future(call_in_thread(lambda: gate.wait(WAIT) and -1))
            await asyncio.sleep(0.05)  # the only worker is in `first`: the rest queue up
            rest = asyncio.gather(*(call_in_thread(lambda i=i: i) for i in range(20)))
            await asyncio.sleep(0.05)
            CountingLoop.wakeups = 0
            gate.set()
            return [await first, *await rest]
        finally:
            wp._pool = previous

    with asyncio.Runner(loop_factory=CountingLoop) as runner:
        assert runner.run(asyncio.wait_for(main(), WAIT)) == [-1, *range(20)]
    # 21 results, finished back to back by one worker: a wake-up or two, not 21.
    assert CountingLoop.wakeups <= 3


def test_a_call_queued_behind_a_blocking_one_still_runs(run: Run) -> None:
    # The awake worker is stuck: after STALL another worker takes the backlog.
    import mcpkit.server.worker_pool as wp

    pool = WorkerPool(max_workers=4)
    gate = threading.Event()

    async def main() -> None:
        previous, wp._pool = wp._pool, pool
        try:
            blocked = asyncio.ensure_future(call_in_thread(lambda: gate.wait(WAIT)))
            await asyncio.sleep(0.05)
            started = time.monotonic()
            assert await call_in_thread(lambda: "quick") == "quick"
            assert time.monotonic() - started < 2.0
            assert not blocked.done()
            gate.set()
            assert await blocked is True
        finally:
            gate.set()
            wp._pool = previous

    run(main())


def test_a_burst_with_a_blocking_call_neither_stalls_the_loop_nor_the_quick_calls(run: Run) -> None:
    # The burst runs on the awake worker; when that worker blocks, the loop keeps
    # serving (nothing runs on it) and another worker takes the quick calls.
    import mcpkit.server.worker_pool as wp

    pool = WorkerPool(max_workers=4)
    gate = threading.Event()
    loop_thread = threading.get_ident()

    def call(i: int) -> int:
        assert threading.get_ident() != loop_thread
        if i == 0:
            gate.wait(WAIT)
        return i

    async def main() -> tuple[int, list[int]]:
        previous, wp._pool = wp._pool, pool
        ticks = 0
        try:
            burst = [asyncio.ensure_future(call_in_thread(lambda i=i: call(i))) for i in range(10)]
            quick = asyncio.gather(*burst[1:])
            while not quick.done():
                ticks += 1
                await asyncio.sleep(0.001)
            assert not burst[0].done()  # the blocking call is still blocked
            gate.set()
            return ticks, [await burst[0], *await quick]
        finally:
            gate.set()
            wp._pool = previous

    ticks, results = run(main())
    assert results == list(range(10))
    assert ticks >= 2  # the loop ran while the worker was blocked
