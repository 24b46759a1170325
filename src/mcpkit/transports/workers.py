"""Serve one app from several worker processes sharing the listening sockets.

The parent binds the sockets once (as :func:`~.serve.serve` does, so a port
in use or ``port=0`` behave the same), then starts ``workers`` processes with
the ``spawn`` start method: each is a fresh interpreter that builds its own app
by calling ``make_app`` (a picklable callable, such as a module-level function
or a ``functools.partial`` of one), so no event loop, thread or connection
pool is ever inherited through ``fork``. Each worker serves the inherited
sockets with :func:`~.serve.serve`; the kernel spreads the accepted
connections among them.

The parent prints the ``banner`` once every worker is up. It forwards SIGINT
and SIGTERM to the workers as SIGTERM (each stops gracefully, as
:func:`~.serve.serve` does), waits ``graceful_timeout`` plus a margin, then
kills what is left.

**A worker that dies** (a tool that crashed the interpreter, the OOM killer)
is logged at ERROR with its exit status or signal and started again after a
back-off that doubles with each death of that slot in a row
(:data:`RESTART_DELAY` up to :data:`MAX_RESTART_DELAY`; a worker that served
:data:`STABLE_AFTER` seconds starts the count again). The other workers go on
serving meanwhile: one bad request type costs a worker, not the service. When
every worker is down the parent keeps restarting them at the capped pace
(connections wait in the listen backlog) and says so at each death: it does
not exit, since a crash storm driven by requests passes, and the process
supervisor above would only start the same thing again.

**A worker that cannot start** is different: a failure of the first start
(an import error in the app, a failing lifespan, ``StoreUnavailable`` for an
unreachable Redis) stops everything, and :func:`serve_workers` raises that
worker's exception, rather than loop on something that cannot work. A later
restart that fails is a death like any other (Redis may come back).

**Recycling** (``max_requests``, ``max_memory``: see :mod:`.recycling`): a
worker past its limit stops accepting, finishes what it serves and exits; the
parent starts its replacement as soon as it starts draining, without back-off.

Workers share nothing but the sockets: sessions, resumable streams and
input-round records must live in a shared store (``RedisStore``), or the app
must be stateless.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import Any, Final

from ..errors import ConfigurationError, LifespanError
from .asgi import ASGIApp
from .recycling import Recycling, RecyclingApp
from .serve import ANSWER_TIME, _bind, _check_port, _url, serve

__all__ = ["MAX_RESTART_DELAY", "RESTART_DELAY", "STABLE_AFTER", "restart_delay", "serve_workers"]

log = logging.getLogger("mcpkit.transports.workers")

#: Seconds between a worker's first death (in a row) and its restart; doubled each time.
RESTART_DELAY: Final = 0.5
#: The back-off's cap: a slot whose worker keeps dying is restarted this often at most.
MAX_RESTART_DELAY: Final = 30.0
#: Seconds a worker must serve for its next death to count as the first again.
STABLE_AFTER: Final = 10.0
#: Seconds added to ``graceful_timeout`` before a worker that does not stop is killed.
STOP_MARGIN: Final = 5.0

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def restart_delay(deaths: int) -> float:
    """Seconds before restarting a worker that died ``deaths`` times in a row (1, 2, ...)."""
    return float(min(RESTART_DELAY * 2 ** min(deaths - 1, 32), MAX_RESTART_DELAY))


def _worker_main(
    make_app: Callable[[], ASGIApp],
    sockets: list[socket.socket],
    host: str,
    options: dict[str, Any],
    recycling: Recycling | None,
    report: Connection,
) -> None:
    """A worker process: build the app, serve the inherited sockets, tell the parent."""
    if hasattr(os, "setpgrp"):
        # Its own process group: a Ctrl+C in the terminal reaches the parent only, which
        # forwards one SIGTERM (two signals would make uvicorn skip the graceful stop).
        os.setpgrp()
    _exit_with_parent()
    try:
        app = make_app()
        hook = None
        if recycling is not None:
            app = recycler = RecyclingApp(app, recycling, report)
            hook = recycler.started
        serve(
            app,
            host=host,
            sockets=sockets,
            on_started=lambda: report.send(("ready", None)),
            drain_hook=hook,
            **options,
        )
    except Exception as exc:
        _send_failure(report, exc)
        sys.exit(1)


def _send_failure(report: Connection, exc: Exception) -> None:
    error: Exception = exc
    try:
        pickle.loads(pickle.dumps(exc))  # the parent must be able to load it too
    except Exception:  # an exception that does not round-trip: its text will do
        error = LifespanError(f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):
        report.send(("failed", error))


def _exit_with_parent() -> None:
    """Stop (gracefully) if the parent dies: a worker is never left behind alone."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="mcpkit-parent-watch", daemon=True).start()


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit status {code}"


class _Worker:
    """One worker process and the pipe it reports on."""

    def __init__(self, slot: int, process: Any, report: Connection) -> None:
        self.slot = slot
        self.process = process
        self.report: Connection | None = report
        self.ready_at: float | None = None  # when it said it serves
        self.retired_at: float | None = None  # when it started draining (recycled)

    @property
    def pid(self) -> int:
        return int(self.process.pid)


class _Supervisor:
    def __init__(
        self,
        make_app: Callable[[], ASGIApp],
        sockets: list[socket.socket],
        host: str,
        options: dict[str, Any],
        count: int,
        recycling: Recycling | None,
    ) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.make_app = make_app
        self.sockets = sockets
        self.host = host
        self.options = options
        self.recycling = recycling
        self.count = count
        self.slots: list[_Worker | None] = [None] * count
        self.deaths = [0] * count  # deaths in a row, per slot: the back-off's exponent
        self.restart_at: list[float | None] = [None] * count
        self.retiring: list[_Worker] = []  # recycled, draining: no longer in a slot
        self.stopping = False
        self.wake_read, self.wake_write = socket.socketpair()
        self.wake_read.setblocking(False)
        self.wake_write.setblocking(False)
        graceful = float(options.get("graceful_timeout", 5.0))
        self.stop_timeout = graceful + ANSWER_TIME + STOP_MARGIN
        # A retiring worker drains (up to graceful), then stops as on SIGTERM.
        self.retire_timeout = graceful + self.stop_timeout

    def start(self, slot: int) -> None:
        receive, send = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=_worker_main,
            args=(self.make_app, self.sockets, self.host, self.options, self.recycling, send),
            name=f"mcpkit-worker-{slot}",
        )
        process.start()
        send.close()  # the child holds the writing end
        self.slots[slot] = _Worker(slot, process, receive)
        self.restart_at[slot] = None

    def live(self) -> list[_Worker]:
        return [w for w in self.slots if w is not None] + self.retiring

    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        def handle(sig: int, frame: FrameType | None) -> None:
            self.stopping = True
            with contextlib.suppress(OSError):
                self.wake_write.send(b"\0")

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, handle) for sig in _SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def wait_started(self) -> None:
        """Until every worker is up; raises the first failure (after stopping all)."""
        while not self.stopping and not all(
            w is not None and w.ready_at is not None for w in self.slots
        ):
            self.restart_due()
            for worker, message in self.poll(self.next_due()):
                if message is None and worker in self.retiring:
                    self.retired(worker)  # recycled already (requests came in early)
                    continue
                if message is None and worker.ready_at is not None:
                    self.died(worker)  # it had started: a death, not a failed start
                    continue
                if message is None or message[0] == "failed":
                    error = message[1] if message is not None else None
                    if not isinstance(error, Exception):
                        how = _exit_text(worker.process.exitcode)
                        error = ConfigurationError(
                            f"worker {worker.slot} exited while starting ({how})"
                        )
                    raise error
                self.note(worker, message)

    def poll(self, timeout: float | None) -> list[tuple[_Worker, Any]]:
        """Messages from the workers, then ``None`` for each worker that exited."""
        live = self.live()
        waited: list[Any] = [w.report for w in live if w.report is not None]
        waited += [w.process.sentinel for w in live]
        ready = wait([*waited, self.wake_read], timeout)
        with contextlib.suppress(OSError):
            while self.wake_read.recv(64):
                pass
        got: list[tuple[_Worker, Any]] = []
        for worker in live:
            if worker.report is not None and worker.report in ready:
                got += self.receive(worker)
            if worker.process.sentinel in ready:  # it exited (its last words first)
                while worker.report is not None and worker.report.poll():
                    got += self.receive(worker)
                worker.process.join()  # reaps it at once: it is gone
                if worker.report is not None:
                    worker.report.close()
                    worker.report = None
                got.append((worker, None))
        return got

    def receive(self, worker: _Worker) -> list[tuple[_Worker, Any]]:
        assert worker.report is not None
        try:
            return [(worker, worker.report.recv())]
        except (EOFError, OSError):  # closed: the sentinel says when it exits
            worker.report.close()
            worker.report = None
            return []

    def note(self, worker: _Worker, message: Any) -> None:
        """A worker's message: ready, failed to start (after the first start), recycled."""
        kind = message[0]
        if kind == "ready":
            worker.ready_at = time.monotonic()
        elif kind == "failed":  # e.g. Redis went away: it exits, and is restarted
            log.error("worker %d (pid %d) failed to start: %s", worker.slot, worker.pid, message[1])
        elif kind == "recycle" and self.slots[worker.slot] is worker:
            log.warning(
                "worker %d (pid %d) %s: recycling it (it finishes its requests); "
                "starting its replacement",
                worker.slot,
                worker.pid,
                message[1],
            )
            worker.retired_at = time.monotonic()
            self.retiring.append(worker)
            self.slots[worker.slot] = None
            if not self.stopping:
                self.start(worker.slot)

    def supervise(self) -> None:
        """Until a stop signal: restart workers that die, replace recycled ones."""
        while not self.stopping:
            for worker, message in self.poll(self.next_due()):
                if message is not None:
                    self.note(worker, message)
                elif worker in self.retiring:
                    self.retired(worker)
                elif not self.stopping and self.slots[worker.slot] is worker:
                    self.died(worker)
            self.restart_due()

    def next_due(self) -> float | None:
        """Seconds until the next restart or recycling deadline (None: nothing due)."""
        due = [t for t in self.restart_at if t is not None]
        due += [w.retired_at + self.retire_timeout for w in self.retiring if w.retired_at]
        return max(0.0, min(due) - time.monotonic()) if due else None

    def restart_due(self) -> None:
        """Start the slots whose back-off is over; kill recycled workers past their time."""
        now = time.monotonic()
        for slot, when in enumerate(self.restart_at):
            if not self.stopping and when is not None and when <= now:
                self.start(slot)
        for worker in self.retiring:
            assert worker.retired_at is not None
            if now - worker.retired_at > self.retire_timeout and worker.process.is_alive():
                log.warning("recycled worker pid %d did not stop in time: killing it", worker.pid)
                worker.process.kill()

    def retired(self, worker: _Worker) -> None:
        self.retiring.remove(worker)
        code = worker.process.exitcode
        if code == 0:
            log.info("recycled worker pid %d stopped", worker.pid)
        else:
            log.warning("recycled worker pid %d stopped (%s)", worker.pid, _exit_text(code))

    def died(self, worker: _Worker) -> None:
        """Restart the slot after its back-off; say loudly what happened."""
        now = time.monotonic()
        slot = worker.slot
        self.slots[slot] = None
        if worker.ready_at is not None and now - worker.ready_at >= STABLE_AFTER:
            self.deaths[slot] = 0  # it had been serving for a while: a new series
        self.deaths[slot] += 1
        deaths = self.deaths[slot]
        delay = restart_delay(deaths)
        serving = sum(1 for w in self.slots if w is not None and w.ready_at is not None)
        log.error(
            "worker %d (pid %d) died unexpectedly (%s); %s in a row for this worker: "
            "restarting it in %.1f s; %d of %d workers serving",
            slot,
            worker.pid,
            _exit_text(worker.process.exitcode),
            "1 death" if deaths == 1 else f"{deaths} deaths",
            delay,
            serving,
            self.count,
        )
        if serving == 0:
            log.error(
                "no worker is serving: connections wait in the listen backlog until one "
                "is back (restarts go on, at most every %.0f s per worker)",
                MAX_RESTART_DELAY,
            )
        self.restart_at[slot] = now + delay

    def stop(self) -> None:
        """SIGTERM to every worker, then kill those still running after the grace."""
        alive = [w.process for w in self.live() if w.process.is_alive()]
        for process in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for process in alive:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in alive:
            if process.is_alive():
                log.warning("worker pid %s did not stop in time: killing it", process.pid)
                process.kill()
                process.join()
        for worker in self.live():
            if worker.report is not None:
                worker.report.close()
                worker.report = None
        self.wake_read.close()
        self.wake_write.close()


def serve_workers(
    make_app: Callable[[], ASGIApp],
    workers: int,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    banner: str | None = None,
    max_requests: int | None = None,
    max_requests_jitter: int = 0,
    max_memory: float | None = None,
    **options: Any,
) -> None:
    """Serve the app ``make_app()`` builds from ``workers`` processes until SIGINT/SIGTERM.

    ``make_app`` runs in each worker (a fresh interpreter: it must be picklable,
    and the app it returns is that worker's own). ``banner`` is printed to
    stderr once every worker is up, ``{url}`` in it naming the real port when
    ``port`` is 0; ``options`` go to :func:`~.serve.serve` in each worker
    (``max_connections`` and the other limits are per worker).

    Recycling (:mod:`.recycling`): a worker is replaced after ``max_requests``
    HTTP requests (plus a random ``0 .. max_requests_jitter`` per worker), or
    once its resident memory passes ``max_memory`` megabytes (checked every
    second); it finishes its requests first, so none fails.

    Raises :class:`~mcpkit.errors.ConfigurationError` for bad arguments or a port
    that cannot be bound; a worker's own exception when it fails to start
    (``StoreUnavailable``, ``LifespanError``). Workers that die later are
    restarted with a back-off (see the module docstring), never a reason to stop.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigurationError(f"workers must be a positive integer, got {workers!r}")
    if "uds" in options or "fd" in options:
        raise ConfigurationError("serve_workers listens on host:port only (no uds or fd)")
    recycling = Recycling(
        max_requests=max_requests, jitter=max_requests_jitter, max_memory=max_memory
    )
    port = _check_port(port)
    try:
        pickle.dumps(make_app)  # what spawn does in start(): say it before anything starts
    except Exception as exc:
        raise ConfigurationError(
            "make_app goes to each worker process, so it must be picklable (a module-level "
            f"function, or a functools.partial of one), not {make_app!r}: {exc}"
        ) from None
    sockets = _bind(host, port, int(options.get("backlog", 2048)))
    supervisor = _Supervisor(
        make_app,
        sockets,
        host,
        dict(options),
        workers,
        recycling if recycling.active else None,
    )
    try:
        with supervisor.signals():
            for slot in range(workers):
                supervisor.start(slot)
            supervisor.wait_started()
            if banner is not None and not supervisor.stopping:
                print(banner.replace("{url}", _url(sockets, host)), file=sys.stderr, flush=True)
            supervisor.supervise()
    finally:
        supervisor.stop()
        for sock in sockets:
            sock.close()
