"""Worker threads for sync user functions, and a cheap hand-off to them from the event loop.

A sync tool, resource, prompt or step runs off the event loop so that one that
blocks (``time.sleep``, a database driver, ``requests``) never stalls the other
requests. ``loop.run_in_executor`` did that at ~40 us of CPU per call, four
times the cost of the rest of a stdio ``tools/call``: a ``concurrent.futures``
future wrapped in an asyncio one, their callbacks, the executor's lock and
semaphore, and a wake-up of the loop through its self-pipe for every result.

Here a call is one small object put on a ``queue.SimpleQueue`` that a pool of
daemon threads reads (a thread is added, up to ``max_workers``, when none is
idle; threads stay for the life of the process, like a thread pool's). The
result comes back one of two ways:

* **waited for in place**: the loop thread blocks on the call's lock (GIL
  released) for at most :data:`WAIT_IN_PLACE` seconds. A function that
  returns in that time costs two thread switches and no event-loop wake-up.
  This is only tried when a worker was idle, and per function it backs off:
  after a call that did not finish in time, the next 1, 2, 4 ... 1024 calls
  skip the wait (:class:`InPlaceWait`), so a function that blocks costs the
  loop at most that short wait, now and then, never the length of its call;
* **awaited**: otherwise the loop goes on serving while the call runs, and
  the worker wakes it with ``call_soon_threadsafe`` when the call ends.

Threads are daemons: a sync call still running when the server is told to
stop (stdin EOF, SIGTERM) does not keep the process alive; its result is
dropped. The pool is replaced in a child process after ``fork``.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

__all__ = ["WAIT_IN_PLACE", "InPlaceWait", "WorkerPool", "call_in_thread", "default_pool"]

T = TypeVar("T")

#: Longest the event loop blocks waiting in place for a sync call (seconds). Long
#: enough for a thread switch on a busy machine, short enough to go unnoticed.
WAIT_IN_PLACE: Final = 0.001
_MAX_SKIP: Final = 1024

# Settles the race between a worker finishing a call and the loop giving up waiting
# in place for it (one of the two must deliver the result, and only one).
_handoff = threading.Lock()


class InPlaceWait:
    """Whether the loop should wait in place for the next call of one function.

    Starts willing; each call that does not finish within :data:`WAIT_IN_PLACE`
    doubles the number of calls that then skip the wait (up to 1024), and a call
    that finishes in time resets it. Not thread-safe: used on the loop only.
    """

    __slots__ = ("_backoff", "_skip")

    def __init__(self) -> None:
        self._skip = 0
        self._backoff = 0

    def wanted(self) -> bool:
        if self._skip:
            self._skip -= 1
            return False
        return True

    def finished_in_time(self) -> None:
        self._backoff = 0

    def missed(self) -> None:
        self._backoff = min(self._backoff * 2 or 1, _MAX_SKIP)
        self._skip = self._backoff


class _Call(Generic[T]):
    """One sync call on its way to a worker and back."""

    __slots__ = ("done", "fn", "future", "loop", "ok", "value")

    def __init__(self, fn: Callable[[], T], loop: asyncio.AbstractEventLoop) -> None:
        self.fn: Callable[[], T] | None = fn
        self.loop = loop
        self.done = threading.Lock()
        self.done.acquire()  # released by the worker when the loop waits in place
        self.future: asyncio.Future[T] | None = None  # set when the loop stops waiting in place
        self.ok = False
        self.value: Any = None


class WorkerPool:
    """Daemon threads reading calls from one queue (see the module docstring)."""

    def __init__(self, max_workers: int | None = None) -> None:
        if max_workers is not None and (type(max_workers) is not int or max_workers < 1):
            raise ValueError(f"max_workers must be a positive int, not {max_workers!r}")
        self.max_workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._queue: queue.SimpleQueue[_Call[Any]] = queue.SimpleQueue()
        # One token per worker blocked on (or about to block on) the queue. list.append
        # and list.pop are atomic, so no lock on the hot path.
        self._idle: list[None] = []
        self._threads: list[threading.Thread] = []
        self._grow_lock = threading.Lock()

    def _submit(self, call: _Call[Any]) -> bool:
        """Queue ``call``; whether an idle worker will take it at once."""
        self._queue.put(call)
        try:
            self._idle.pop()
        except IndexError:
            self._grow()
            return False
        return True

    def _grow(self) -> None:
        with self._grow_lock:
            if len(self._threads) < self.max_workers:
                thread = threading.Thread(
                    target=self._work, name=f"mcpkit-sync-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def _work(self) -> None:
        get = self._queue.get
        idle = self._idle
        while True:
            call = get()
            future = call.future
            skip = future is not None and future.cancelled()  # cancelled while queued
            fn = call.fn
            call.fn = None
            if not skip and fn is not None:
                try:
                    call.value = fn()
                    call.ok = True
                except BaseException as exc:  # delivered to the caller, as an executor does
                    call.value = exc
            del fn
            # Idle again before the result goes out: the loop may hand over its next call
            # the moment it has this one.
            idle.append(None)
            with _handoff:
                future = call.future
                if future is None:
                    call.done.release()
            if future is not None and not skip:
                try:
                    call.loop.call_soon_threadsafe(_settle, call)
                except RuntimeError:  # the loop is closed: nobody is left to read the result
                    pass
            del call, future


def _settle(call: _Call[Any]) -> None:
    future = call.future
    if future is None or future.done():
        return
    if call.ok:
        future.set_result(call.value)
    else:
        _set_exception(future, call.value)
    call.value = None


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if isinstance(exc, StopIteration):  # a future refuses it; a coroutine would turn it into:
        error = RuntimeError("a sync function raised StopIteration")
        error.__cause__ = exc
        exc = error
    future.set_exception(exc)


_pool: WorkerPool | None = None


def default_pool() -> WorkerPool:
    """The process-wide pool that sync user functions run on."""
    global _pool
    if _pool is None:
        _pool = WorkerPool()
    return _pool


def _forget_pool() -> None:
    # After fork the child has none of the parent's threads: start a fresh pool on demand.
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


async def call_in_thread(fn: Callable[[], T], *, wait: InPlaceWait | None = None) -> T:
    """``fn()`` in a worker thread; its value, or its exception raised here.

    With ``wait``, the loop first waits in place for the result (module
    docstring). Cancelling the awaiting task before the call started skips the
    call; once started it runs to the end and its result is dropped.
    """
    loop = asyncio.get_running_loop()
    pool = _pool or default_pool()
    call: _Call[T] = _Call(fn, loop)
    handed = pool._submit(call)
    if wait is not None and handed and wait.wanted():
        if call.done.acquire(timeout=WAIT_IN_PLACE):
            wait.finished_in_time()
            return _result(call)
        wait.missed()
    future: asyncio.Future[T] = loop.create_future()
    with _handoff:
        finished = call.done.acquire(blocking=False)
        if not finished:
            call.future = future
    if finished:
        return _result(call)
    return await future


def _result(call: _Call[T]) -> T:
    value, call.value = call.value, None
    if call.ok:
        return value  # type: ignore[no-any-return]
    try:
        raise value
    finally:
        del value
