"""Worker threads for sync user functions, and a cheap hand-off to them from the event loop.

A sync tool, resource, prompt or step runs off the event loop so that one that
blocks (``time.sleep``, a database driver, ``requests``) never stalls the other
requests. ``loop.run_in_executor`` did that at ~40 us of CPU per call on the
development VM, more than twice the rest of a stdio ``tools/call``: a
``concurrent.futures`` future wrapped in an asyncio one and their callbacks,
the executor's lock and semaphore, a wake-up of the loop for every result,
and ~5.5 thread switches per call, because each thread was woken while the
other still held the GIL, found it taken and slept again.

Here an idle worker sleeps in ``os.read`` on its own pipe and is handed a call
with a one-byte ``os.write``; both drop the GIL before the system call, so
the woken thread finds it free (:class:`WorkerPool`). The result comes back
one of two ways:

* **waited for in place**: the loop thread blocks on the call's lock (GIL
  released) for at most :data:`WAIT_IN_PLACE` seconds. A function that
  returns in that time costs two thread switches and no event-loop wake-up.
  This is only tried when a worker was idle, and per function it backs off:
  after a call that did not finish in time, the next 1, 2, 4 ... 1024 calls
  skip the wait (:class:`InPlaceWait`), so a function that blocks costs the
  loop at most that short wait, now and then, never the length of its call;
* **awaited**: otherwise the loop goes on serving while the call runs, and
  the worker posts the result to the loop's inbox (:class:`_Inbox`), which
  wakes the loop with one ``call_soon_threadsafe`` for all the results that
  finish before the loop gets round to them.

Bursts (many requests at once, e.g. HTTP with many connections): a call that
finds a worker awake joins the backlog without waking anyone, and that worker
runs the backlog before it sleeps; one wake-up of one thread serves the burst,
instead of a thread per call taking turns at the GIL. Should every awake
worker be stuck in a blocking call, a check on the loop :data:`STALL` seconds
later starts another worker for the backlog (:meth:`WorkerPool._check`).

Where the rest of a sync call's cost goes (issue 18; ``perf record`` of a stdio
server under sequential calls): over half of the server's CPU sits in the
kernel's scheduler (``finish_task_switch``, the wake-up path), not in Python.
Each call hands the GIL to another thread and back, and CPython 3.11's GIL
always wakes a sleeping thread to take it: two wake-ups per call, ~5 us on the
development VM (a bare two-thread pipe ping-pong costs 4.9 us of CPU per round
trip), against ~10 us for a whole ``async def`` call. No hand-off design takes
a sequential call under that; only not hopping (``run_in_thread=False``) does.

Threads are added when no worker is idle and none is awake, up to
``max_workers``, and stay for the life of the process, as a thread pool's do. They are daemons: a sync
call still running when the server is told to stop (stdin EOF, SIGTERM) does
not keep the process alive; its result is dropped. A child process started
with ``fork`` gets a fresh pool.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

__all__ = ["WAIT_IN_PLACE", "InPlaceWait", "WorkerPool", "call_in_thread", "default_pool"]

T = TypeVar("T")

#: Longest the event loop blocks waiting in place for a sync call (seconds). Long
#: enough for a thread switch on a busy machine, short enough to go unnoticed.
WAIT_IN_PLACE: Final = 0.001
_MAX_SKIP: Final = 1024
#: How long queued calls may wait, with no call starting, before another worker is
#: started for them (seconds): longer than the interpreter's GIL switch interval (5 ms),
#: so a worker that only waits for the GIL is not mistaken for one that blocks.
STALL: Final = 0.006

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


class _Inbox:
    """Results finished for one event loop, handed over by one wake-up of that loop.

    A worker appends a result and schedules :meth:`drain` only when none is
    scheduled yet, so results that finish while the loop is busy or asleep
    cost one ``call_soon_threadsafe`` (one self-pipe write, one wake-up) between
    them. ``drain`` clears the flag before it reads, so a result appended after
    that schedules the next drain.
    """

    __slots__ = ("done", "loop", "scheduled", "watching")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weak: the inbox is the value of a weak-keyed dict of loops (see _inbox).
        self.loop = weakref.ref(loop)
        self.done: collections.deque[_Call[Any]] = collections.deque()
        self.scheduled = False
        self.watching = False  # a WorkerPool._check is scheduled on this loop

    def post(self, call: _Call[Any]) -> None:  # on a worker
        self.done.append(call)
        if not self.scheduled:
            self.scheduled = True
            loop = self.loop()
            try:
                if loop is not None:
                    loop.call_soon_threadsafe(self.drain)
            except RuntimeError:  # the loop is closed: nobody is left to read the result
                pass

    def drain(self) -> None:  # on the loop
        self.scheduled = False
        done = self.done
        while done:
            _settle(done.popleft())


_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox] = weakref.WeakKeyDictionary()


_last_inbox: _Inbox | None = None  # the last one looked up: most processes have one loop


def _inbox(loop: asyncio.AbstractEventLoop) -> _Inbox:
    global _last_inbox
    inbox = _last_inbox
    if inbox is not None and inbox.loop() is loop:
        return inbox
    inbox = _inboxes.get(loop)
    if inbox is None:
        inbox = _inboxes[loop] = _Inbox(loop)
    _last_inbox = inbox
    return inbox


class _Call(Generic[T]):
    """One sync call on its way to a worker and back."""

    __slots__ = ("done", "fn", "future", "inbox", "ok", "value")

    def __init__(self, fn: Callable[[], T], inbox: _Inbox) -> None:
        self.fn: Callable[[], T] | None = fn
        self.inbox = inbox
        self.done = threading.Lock()
        self.done.acquire()  # released by the worker when the loop waits in place
        self.future: asyncio.Future[T] | None = None  # set when the loop stops waiting in place
        self.ok = False
        self.value: Any = None


class _Worker:
    """One worker thread's mailbox: the call handed to it, and the pipe that wakes it."""

    __slots__ = ("handed", "wake_r", "wake_w")

    def __init__(self) -> None:
        self.handed: _Call[Any] | None = None
        self.wake_r, self.wake_w = os.pipe()


class WorkerPool:
    """Daemon threads that run sync calls (see the module docstring).

    An idle worker sleeps in ``os.read`` on its own pipe, and is handed a call by
    a one-byte ``os.write``. Both release the GIL *before* the system call, so the
    woken thread finds the GIL free instead of waking, finding it taken and
    sleeping again; with a queue or a lock (which wake the other thread while the
    GIL is still held) a round trip took ~5.5 thread switches, here it takes 2.
    Calls that find no idle worker wait in a backlog, which every worker drains
    before going idle. ``list.append``, ``list.pop``, ``list.remove`` and the
    deque's operations are atomic, so the hot path takes no lock.
    """

    def __init__(self, max_workers: int | None = None) -> None:
        if max_workers is not None and (type(max_workers) is not int or max_workers < 1):
            raise ValueError(f"max_workers must be a positive int, not {max_workers!r}")
        self.max_workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._backlog: collections.deque[_Call[Any]] = collections.deque()
        self._idle: list[_Worker] = []  # workers asleep on (or going to) their pipe
        self._workers: list[_Worker] = []
        self._grow_lock = threading.Lock()
        self._started = 0  # calls started, ever: progress, as seen by _check

    def _submit(self, call: _Call[Any], loop: asyncio.AbstractEventLoop) -> bool:
        """Start ``call``; whether an idle worker took it at once.

        While a worker is awake, calls join the backlog without waking anyone:
        that worker takes them one after the other before it sleeps, so a burst
        of calls costs one wake-up of one thread instead of one each (and no
        convoy of threads taking turns at the GIL). Should the awake workers all
        block, :meth:`_check` starts another worker for the backlog.
        """
        idle = self._idle
        if len(idle) < len(self._workers):  # a worker is awake
            self._backlog.append(call)
            if len(idle) == len(self._workers):  # ...or was: it went idle just now
                self._spare()
            else:
                self._watch(loop, call.inbox)
            return False
        try:
            worker = idle.pop()
        except IndexError:  # no worker yet
            self._backlog.append(call)
            self._grow()
            return False
        worker.handed = call
        os.write(worker.wake_w, b"\0")
        return True

    def _spare(self) -> None:
        """Wake an idle worker, or start a new one, to take calls from the backlog."""
        try:
            worker = self._idle.pop()
        except IndexError:
            self._grow()
        else:
            os.write(worker.wake_w, b"\0")

    def _watch(self, loop: asyncio.AbstractEventLoop, inbox: _Inbox) -> None:
        # Per loop: a loop closed before its check ran takes its flag with it.
        if not inbox.watching:
            inbox.watching = True
            try:
                loop.call_later(STALL, self._check, loop, inbox, self._started)
            except RuntimeError:  # a closed loop
                inbox.watching = False

    def _check(self, loop: asyncio.AbstractEventLoop, inbox: _Inbox, started: int) -> None:
        """Calls still queued after :data:`STALL`: if none started meanwhile, add a worker."""
        inbox.watching = False
        if self._backlog:
            if self._started == started:  # every awake worker is stuck in a call
                self._spare()
            self._watch(loop, inbox)

    def _grow(self) -> None:
        with self._grow_lock:
            if len(self._workers) < self.max_workers:
                worker = _Worker()
                self._workers.append(worker)
                threading.Thread(
                    target=self._work,
                    args=(worker,),
                    name=f"mcpkit-sync-{len(self._workers) - 1}",
                    daemon=True,
                ).start()

    def _work(self, worker: _Worker) -> None:
        backlog = self._backlog
        idle = self._idle
        try:
            call = backlog.popleft()
        except IndexError:
            idle.append(worker)
            call = self._wait(worker)
        while True:
            future = call.future
            skip = future is not None and future.cancelled()  # cancelled while queued
            fn, call.fn = call.fn, None
            self._started += 1
            if not skip and fn is not None:
                try:
                    call.value = fn()
                    call.ok = True
                except BaseException as exc:  # delivered to the caller, as an executor does
                    call.value = exc
            del fn
            # Idle again before the result goes out: the loop may hand over its next
            # call the moment it has this one.
            following: _Call[Any] | None = None
            if backlog:
                with contextlib.suppress(IndexError):  # another worker may be quicker
                    following = backlog.popleft()
            if following is None:
                idle.append(worker)
            with _handoff:
                future = call.future
                if future is None:
                    call.done.release()
            if future is not None and not skip:
                call.inbox.post(call)
            del future
            call = following if following is not None else self._wait(worker)
            del following

    def _wait(self, worker: _Worker) -> _Call[Any]:
        """The next call for ``worker``, which is in the idle list."""
        backlog = self._backlog
        idle = self._idle
        while True:
            if backlog:  # queued by a submitter that found no idle worker
                try:
                    idle.remove(worker)
                except ValueError:
                    pass  # a submitter took this worker just now: its wake-up is coming
                else:
                    try:
                        return backlog.popleft()
                    except IndexError:  # another worker was quicker
                        idle.append(worker)
                        continue
            os.read(worker.wake_r, 1)
            call = worker.handed
            if call is not None:
                worker.handed = None
                return call
            try:  # woken to take the backlog
                return backlog.popleft()
            except IndexError:
                idle.append(worker)

    def _close_pipes(self) -> None:
        for worker in self._workers:
            for fd in (worker.wake_r, worker.wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)


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
    global _pool, _last_inbox
    if _pool is not None:
        _pool._close_pipes()
    _pool = None
    _inboxes.clear()
    _last_inbox = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


async def call_in_thread(
    fn: Callable[[], T],
    *,
    wait: InPlaceWait | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
) -> T:
    """``fn()`` in a worker thread; its value, or its exception raised here.

    With ``wait``, the loop first waits in place for the result (module
    docstring). Cancelling the awaiting task before the call started skips the
    call; once started it runs to the end and its result is dropped. ``loop`` is
    the running loop, when the caller has it at hand.
    """
    if loop is None:
        loop = asyncio.get_running_loop()
    pool = _pool or default_pool()
    call: _Call[T] = _Call(fn, _inbox(loop))
    handed = pool._submit(call, loop)
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
