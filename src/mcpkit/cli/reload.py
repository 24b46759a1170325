"""Hot reload for ``mcpkit run --reload`` and ``mcpkit dev``: a new server process per code change.

The ``mcpkit`` process binds the listening socket once and watches the source
directories (watchfiles, from the ``devtools`` extra). Each server runs in a child
process that inherits the socket; on a change a new child loads the code while the
old one still serves, and the old one is stopped only once the new one is up. So a
change that does not load (a syntax error, an import that fails, a lifespan that
raises) prints its error and leaves the last good server serving. The port never
closes, and the restart takes the time of loading the code: children fork from a
server process that has mcpkit and uvicorn imported already (``forkserver``, where
the platform has it), never the user's code, which each child imports afresh.

Sessions live in the server process, so a client reconnects after a reload, as it
would after any restart.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from ..transports.asgi import ASGIApp

__all__ = ["serve_reloading", "watch_roots"]

#: Seconds a new server may take to load and start before the change counts as failed.
START_TIMEOUT = 60.0
#: Seconds an old server gets to finish its requests once its replacement serves.
OLD_SERVER_GRACE = 1.0
#: watchfiles yields once no further change came for this many milliseconds: an editor's
#: save (a write, or a temporary file and a rename) is one reload, and quick.
QUIET_MS = 50


def _watchfiles() -> Any:
    from .._extras import require_extra

    with require_extra("devtools", feature="hot reload (mcpkit run --reload, mcpkit dev)"):
        import watchfiles
    return watchfiles


def require_watchfiles() -> None:
    """Raise :class:`~mcpkit.errors.MissingExtra` now when watchfiles is missing."""
    _watchfiles()


def watch_roots(target: str, extra: Iterable[str] = ()) -> list[Path]:
    """The directories to watch: the target file's (or, for a module, the current one)."""
    from .loader import split_target

    where, _ = split_target(target)
    path = Path(where)
    root = path.resolve().parent if path.is_file() else Path.cwd()
    return [root, *(Path(d).resolve() for d in extra)]


def _context() -> Any:  # a multiprocessing context (its Process is not in BaseContext's stub)
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        # Imported once in the fork server; the user's code never is (each child loads it).
        ctx.set_forkserver_preload(
            [
                "mcpkit.cli.reload",
                "mcpkit.cli.loader",
                "mcpkit.server.server",
                "mcpkit.transports.serve",
            ]
        )
        return ctx
    return multiprocessing.get_context("spawn")


def _child(
    make_app: Callable[[], ASGIApp],
    sock: socket.socket,
    host: str,
    options: dict[str, Any],
    link: Connection,
) -> None:
    """One server process: load the code, serve the inherited socket, say how it went."""
    if hasattr(os, "setpgrp"):
        os.setpgrp()  # a Ctrl+C reaches the parent only, which stops the children itself
    drains: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
    threading.Thread(target=_obey_parent, args=(link, drains), daemon=True).start()
    _quiet_worker_warning()
    from ..transports.serve import serve
    from .loader import UserCodeError

    try:
        app = make_app()
    except Exception as exc:
        cause = exc.__cause__
        if isinstance(cause, UserCodeError) and cause.report():
            print(cause.report(), file=sys.stderr)
        print(f"mcpkit: error: {cause if cause is not None else exc}", file=sys.stderr, flush=True)
        link.send("failed")
        return
    try:
        serve(
            app,
            host=host,
            sockets=[sock],
            on_started=lambda: link.send("ready"),
            drain_hook=lambda drain: drains.put(_on_this_loop(drain)),
            **options,
        )
    except Exception as exc:  # a lifespan that fails, a store that cannot be reached
        print(f"mcpkit: error: {exc}", file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):
            link.send("failed")


def _quiet_worker_warning() -> None:
    """The HTTP transport warns a process started by multiprocessing that it may be one of
    several workers keeping sessions apart; a reload child is the only server at a time
    (its predecessor is stopping), so the warning would only mislead."""
    import logging

    def keep(record: logging.LogRecord) -> bool:
        return "one of several workers" not in record.getMessage()

    logging.getLogger("mcpkit.transports.http").addFilter(keep)


def _on_this_loop(drain: Callable[[], None]) -> Callable[[], None]:
    """``drain`` made callable from another thread (it must run on the server's loop)."""
    import asyncio

    loop = asyncio.get_running_loop()

    def call() -> None:
        done = threading.Event()

        def on_loop() -> None:
            try:
                drain()  # closes the listeners at once; the requests in flight go on
            finally:
                done.set()

        loop.call_soon_threadsafe(on_loop)
        done.wait(2.0)  # answered only once this process no longer accepts

    return call


def _obey_parent(link: Connection, drains: queue.SimpleQueue[Callable[[], None]]) -> None:
    """``"drain"``: stop accepting (the replacement serves) and finish; end of file: the
    parent is gone, so stop gracefully too (a child is never left behind alone)."""
    with contextlib.suppress(EOFError, OSError):
        while link.recv() == "drain":
            drains.get()()
            link.send("draining")
    os.kill(os.getpid(), signal.SIGTERM)


class _Server:
    """One child process and the pipe it reports on."""

    def __init__(self, process: BaseProcess, link: Connection) -> None:
        self.process = process
        self.link = link

    def started(self, timeout: float) -> bool:
        """Wait until it serves (True) or failed, died or took too long (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.link.poll(0.05):
                try:
                    return bool(self.link.recv() == "ready")
                except EOFError:
                    return False
            if not self.process.is_alive():
                return False
        return False

    def hand_over(self) -> None:
        """Stop accepting now, the replacement serving already (so that no new connection
        reaches the old code), then finish the open requests and exit."""
        try:
            self.link.send("drain")
            if self.link.poll(2.0):
                self.link.recv()
        except (EOFError, OSError):
            pass  # it is gone already

    def stop(self, grace: float) -> None:
        """SIGTERM (uvicorn's graceful stop), then SIGKILL after ``grace`` plus a margin."""
        if self.process.is_alive() and self.process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGTERM)
        self.process.join(grace + 2.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.link.close()


def _bind(host: str, port: int, backlog: int) -> socket.socket:
    from ..errors import ConfigurationError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=backlog)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigurationError(f"cannot listen on {host}:{port}: {reason}") from None


def serve_reloading(
    make_app: Callable[[], ASGIApp],
    *,
    host: str,
    port: int,
    banner: str,
    watch: list[Path],
    on_serving: Callable[[str], None] | None = None,
    **options: Any,
) -> None:
    """Serve ``make_app()`` (picklable: it runs in each child) and restart it on code changes.

    ``banner`` is printed once the first server is up (``{url}`` becomes the real
    ``http://host:port``); ``on_serving(url)`` is called then (``mcpkit dev`` starts the
    Inspector). Raises ``ConfigurationError`` when the port cannot be bound,
    ``LifespanError`` when the first server does not start. Returns on Ctrl+C or SIGTERM.
    """
    from ..errors import LifespanError

    watchfiles = _watchfiles()
    grace = float(options.get("graceful_timeout", OLD_SERVER_GRACE))
    options.setdefault("graceful_timeout", OLD_SERVER_GRACE)
    sock = _bind(host, port, int(options.get("backlog", 2048)))
    url = f"http://{host if ':' not in host else f'[{host}]'}:{sock.getsockname()[1]}"
    ctx = _context()

    def start() -> _Server:
        parent_end, child_end = ctx.Pipe()
        process = ctx.Process(
            target=_child, args=(make_app, sock, host, options, child_end), daemon=False
        )
        process.start()
        child_end.close()
        return _Server(process, parent_end)

    stop_event = threading.Event()
    restore = _on_sigterm(stop_event.set)
    current = start()
    try:
        if not current.started(START_TIMEOUT):
            current.stop(0)
            raise LifespanError("the server did not start (see the error above)")
        print(banner.replace("{url}", url), file=sys.stderr, flush=True)
        if on_serving is not None:
            on_serving(url)
        names = ", ".join(str(p) for p in watch)
        print(
            f"mcpkit: reloading on changes to .py files under {names}", file=sys.stderr, flush=True
        )
        for changes in watchfiles.watch(
            *watch,
            watch_filter=watchfiles.PythonFilter(),
            step=QUIET_MS,
            stop_event=stop_event,
            raise_interrupt=False,
        ):
            began = time.monotonic()
            print(f"mcpkit: {_changed(changes)} changed; reloading", file=sys.stderr, flush=True)
            fresh = start()
            if fresh.started(START_TIMEOUT):
                old, current = current, fresh
                old.hand_over()
                threading.Thread(target=old.stop, args=(grace,), daemon=True).start()
                took = time.monotonic() - began
                print(f"mcpkit: reloaded in {took:.2f} s", file=sys.stderr, flush=True)
            else:
                fresh.stop(0)
                alive = (
                    "the last good server keeps serving"
                    if current.process.is_alive()
                    else ("no server is running")
                )
                print(
                    f"mcpkit: the change did not load: {alive}; fix it and save again",
                    file=sys.stderr,
                    flush=True,
                )
    except KeyboardInterrupt:
        # Ctrl+C before the watch began (say while ``on_serving`` starts the Inspector):
        # a stop like any other, not a traceback.
        pass
    finally:
        restore()
        current.stop(grace)
        sock.close()


def _changed(changes: Iterable[tuple[Any, str]]) -> str:
    names = sorted({Path(p).name for _, p in changes})
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _on_sigterm(action: Callable[[], None]) -> Callable[[], None]:
    """Turn SIGTERM into ``action`` (in the main thread only); returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: action())

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
