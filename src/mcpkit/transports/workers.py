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
kills what is left. A worker that dies unexpectedly is started again after
:data:`RESTART_DELAY` seconds; more than :data:`MAX_RESTARTS` restarts within
:data:`RESTART_WINDOW` seconds means something is wrong with every worker, so
everything stops and :class:`~mcpkit.errors.ConfigurationError` says so.

A worker failing to start (its app's lifespan raised, e.g. ``StoreUnavailable``
for an unreachable Redis) stops the whole start: :func:`serve_workers` raises
that worker's exception.

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
from collections import deque
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import Any, Final

from ..errors import ConfigurationError, LifespanError
from .asgi import ASGIApp
from .serve import _bind, _check_port, _url, _uvicorn, serve

__all__ = ["MAX_RESTARTS", "RESTART_DELAY", "RESTART_WINDOW", "serve_workers"]

log = logging.getLogger("mcpkit.transports.workers")

#: Seconds between a worker's unexpected death and its restart.
RESTART_DELAY: Final = 1.0
#: Restarts allowed within :data:`RESTART_WINDOW` seconds before everything stops.
MAX_RESTARTS: Final = 5
RESTART_WINDOW: Final = 60.0
#: Seconds added to ``graceful_timeout`` before a worker that does not stop is killed.
STOP_MARGIN: Final = 5.0

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _worker_main(
    make_app: Callable[[], ASGIApp],
    sockets: list[socket.socket],
    host: str,
    options: dict[str, Any],
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
        serve(
            app,
            host=host,
            sockets=sockets,
            on_started=lambda: report.send(("ready", None)),
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
        return f"killed by signal {-code}"
    return f"status {code}"


class _Worker:
    """One worker slot: its process and the pipe it reports on."""

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.process: Any = None
        self.report: Connection | None = None
        self.ready = False
        self.alive = False
        self.restart_at: float | None = None


class _Supervisor:
    def __init__(
        self,
        make_app: Callable[[], ASGIApp],
        sockets: list[socket.socket],
        host: str,
        options: dict[str, Any],
        count: int,
    ) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.make_app = make_app
        self.sockets = sockets
        self.host = host
        self.options = options
        self.workers = [_Worker(slot) for slot in range(count)]
        self.restarts: deque[float] = deque()
        self.stopping = False
        self.wake_read, self.wake_write = socket.socketpair()
        self.wake_read.setblocking(False)
        self.wake_write.setblocking(False)
        graceful = options.get("graceful_timeout", 5.0)
        self.stop_timeout = float(graceful) + STOP_MARGIN

    def start(self, worker: _Worker) -> None:
        receive, send = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=_worker_main,
            args=(self.make_app, self.sockets, self.host, self.options, send),
            name=f"mcpkit-worker-{worker.slot}",
        )
        process.start()
        send.close()  # the child holds the writing end
        worker.process, worker.report = process, receive
        worker.ready, worker.alive, worker.restart_at = False, True, None

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
        while not self.stopping and not all(w.ready for w in self.workers):
            for worker, message in self.poll(None):
                if message is None or message[0] == "failed":
                    error = message[1] if message is not None else None
                    if not isinstance(error, Exception):
                        how = _exit_text(worker.process.exitcode)
                        error = ConfigurationError(
                            f"worker {worker.slot} exited while starting ({how})"
                        )
                    raise error
                worker.ready = True

    def poll(self, timeout: float | None) -> list[tuple[_Worker, Any]]:
        """Messages from the workers, then ``None`` for each worker that exited."""
        live = [w for w in self.workers if w.alive]
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
                worker.alive = False
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

    def supervise(self) -> None:
        """Until a stop signal: restart workers that die; raises when they die too often."""
        while not self.stopping:
            now = time.monotonic()
            due = [w.restart_at for w in self.workers if w.restart_at is not None]
            timeout = max(0.0, min(due) - now) if due else None
            for worker, message in self.poll(timeout):
                if message is not None:
                    if message[0] == "failed":  # e.g. Redis went away: it will be restarted
                        log.warning("worker %d failed to start: %s", worker.slot, message[1])
                    worker.ready = worker.ready or message[0] == "ready"
                    continue
                if self.stopping:
                    break
                self.died(worker)
            now = time.monotonic()
            for worker in self.workers:
                if not self.stopping and worker.restart_at is not None and worker.restart_at <= now:
                    self.start(worker)

    def died(self, worker: _Worker) -> None:
        now = time.monotonic()
        while self.restarts and self.restarts[0] <= now - RESTART_WINDOW:
            self.restarts.popleft()
        how = _exit_text(worker.process.exitcode)
        if len(self.restarts) >= MAX_RESTARTS:
            raise ConfigurationError(
                f"worker {worker.slot} exited ({how}) after {MAX_RESTARTS} restarts "
                f"within {RESTART_WINDOW:.0f} s: stopping all workers"
            )
        self.restarts.append(now)
        log.warning(
            "worker %d (pid %s) exited unexpectedly (%s); restarting it in %.0f s",
            worker.slot,
            worker.process.pid,
            how,
            RESTART_DELAY,
        )
        worker.restart_at = now + RESTART_DELAY

    def stop(self) -> None:
        """SIGTERM to every worker, then kill those still running after the grace."""
        alive = [w.process for w in self.workers if w.process is not None and w.process.is_alive()]
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
        for worker in self.workers:
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
    **options: Any,
) -> None:
    """Serve the app ``make_app()`` builds from ``workers`` processes until SIGINT/SIGTERM.

    ``make_app`` runs in each worker (a fresh interpreter: it must be picklable,
    and the app it returns is that worker's own). ``banner`` is printed to
    stderr once every worker is up, ``{url}`` in it naming the real port when
    ``port`` is 0; ``options`` go to :func:`~.serve.serve` in each worker
    (``max_connections`` and the other limits are per worker).

    Raises :class:`~mcpkit.errors.ConfigurationError` for bad arguments, a port
    that cannot be bound, or workers that keep dying; a worker's own exception
    when it fails to start (``StoreUnavailable``, ``LifespanError``).
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigurationError(f"workers must be a positive integer, got {workers!r}")
    if "uds" in options or "fd" in options:
        raise ConfigurationError("serve_workers listens on host:port only (no uds or fd)")
    port = _check_port(port)
    try:
        pickle.dumps(make_app)  # what spawn does in start(): say it before anything starts
    except Exception as exc:
        raise ConfigurationError(
            "make_app goes to each worker process, so it must be picklable (a module-level "
            f"function, or a functools.partial of one), not {make_app!r}: {exc}"
        ) from None
    _uvicorn()  # a missing extra is said before anything starts
    sockets = _bind(host, port, int(options.get("backlog", 2048)))
    supervisor = _Supervisor(make_app, sockets, host, dict(options), workers)
    try:
        with supervisor.signals():
            for worker in supervisor.workers:
                supervisor.start(worker)
            supervisor.wait_started()
            if banner is not None and not supervisor.stopping:
                print(banner.replace("{url}", _url(sockets, host)), file=sys.stderr, flush=True)
            supervisor.supervise()
    finally:
        supervisor.stop()
        for sock in sockets:
            sock.close()
