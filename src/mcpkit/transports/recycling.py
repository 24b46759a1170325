"""Worker recycling: a worker past its request count or memory limit is replaced.

A leaking tool grows its worker without bound, and a worker that has served
many requests may hold fragmented memory; :func:`~.workers.serve_workers`
replaces such a worker without failing a request (the habit gunicorn's
``--max-requests`` and uvicorn's ``--limit-max-requests`` set):

1. :class:`RecyclingApp` wraps the worker's app. It counts the HTTP requests
   and, at ``max_requests`` (plus a random ``0 .. jitter``, so workers started
   together do not all leave at once), *retires* the worker: it tells the
   parent, which starts the replacement at once, and drains the server (it
   stops accepting: the other workers and the replacement take the new
   connections).
2. From then on every response carries ``Connection: close`` (RFC 9112 § 9.6),
   so a client on a keep-alive connection opens a new one for its next request
   instead of finding the connection closed under it.
3. Requests in flight finish, within the graceful timeout; once no connection
   is left (or that timeout passed) the worker stops as on SIGTERM, so a call
   still running after a second graceful timeout gets the JSON-RPC
   shutting-down error (see :mod:`.serve`).

The memory limit is checked every :data:`MEMORY_CHECK_INTERVAL` seconds by a
thread reading the resident set size (``/proc/self/statm``; elsewhere the
peak RSS from :mod:`resource`), so a tool blocking the event loop does not
stop the check; the retirement itself runs on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Final

from ..errors import ConfigurationError
from .asgi import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MEMORY_CHECK_INTERVAL", "Recycling", "RecyclingApp", "resident_bytes"]

#: Seconds between two checks of a worker's resident memory.
MEMORY_CHECK_INTERVAL: Final = 1.0
_MB: Final = 1024 * 1024
_CLOSE: Final = (b"connection", b"close")


def resident_bytes() -> int | None:
    """This process's resident set size in bytes (peak RSS without /proc), or None."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


class Recycling:
    """When a worker is replaced: checked once, in the parent, then sent to each worker."""

    __slots__ = ("jitter", "max_memory", "max_requests")

    def __init__(
        self, *, max_requests: int | None, jitter: int = 0, max_memory: float | None
    ) -> None:
        for name, value in (("max_requests", max_requests), ("max_requests_jitter", jitter)):
            if value is None and name == "max_requests":
                continue
            least = 1 if name == "max_requests" else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigurationError(
                    f"{name} must be an integer >= {least}{' or None' if least else ''}, "
                    f"got {value!r}"
                )
        if jitter and max_requests is None:
            raise ConfigurationError("max_requests_jitter needs max_requests")
        if max_memory is not None:
            number = isinstance(max_memory, int | float) and not isinstance(max_memory, bool)
            if not number or max_memory <= 0:
                raise ConfigurationError(
                    f"max_memory must be a positive number of megabytes or None, got {max_memory!r}"
                )
            if resident_bytes() is None:
                raise ConfigurationError(
                    "max_memory needs /proc or the resource module to read a worker's memory"
                )
        self.max_requests = max_requests
        self.jitter = jitter
        self.max_memory = max_memory

    @property
    def active(self) -> bool:
        return self.max_requests is not None or self.max_memory is not None

    def __repr__(self) -> str:
        return (
            f"Recycling(max_requests={self.max_requests}, jitter={self.jitter}, "
            f"max_memory={self.max_memory})"
        )


class RecyclingApp:
    """A worker's app: counts requests and watches memory, and retires the worker."""

    def __init__(self, app: ASGIApp, recycling: Recycling, report: Connection) -> None:
        self.app = app
        self.report = report
        limit = recycling.max_requests
        if limit is not None and recycling.jitter:
            limit += random.randint(0, recycling.jitter)
        self.limit = limit
        self.served = 0
        self.max_memory = recycling.max_memory
        self.retiring = False
        self._drain: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()

    @property
    def guard(self) -> Any:
        """The wrapped app's Host/Origin guard: serve() checks it before listening."""
        return getattr(self.app, "guard", None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.served += 1
        if self.limit is not None and self.served >= self.limit and not self.retiring:
            self.retire(f"served {self.served} requests (max_requests {self.limit})")
        if not self.retiring:
            await self.app(scope, receive, send)
            return

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", ()) if h[0].lower() != b"connection"]
                message = {**message, "headers": [*headers, _CLOSE]}
            await send(message)

        await self.app(scope, receive, closing)

    def started(self, drain: Callable[[], None]) -> None:
        """The server is up (``serve(drain_hook=...)``): start watching the memory."""
        self._drain = drain
        self._loop = asyncio.get_running_loop()
        if self.max_memory is not None:
            threading.Thread(target=self._watch, name="mcpkit-memory-watch", daemon=True).start()

    def _watch(self) -> None:
        assert self.max_memory is not None
        limit = self.max_memory * _MB
        while not self._stop.wait(MEMORY_CHECK_INTERVAL):
            rss = resident_bytes()
            if rss is not None and rss > limit:
                reason = f"uses {rss / _MB:.0f} MB (max_memory {self.max_memory:g} MB)"
                loop = self._loop
                if loop is not None and not loop.is_closed():
                    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                        loop.call_soon_threadsafe(self.retire, reason)
                return

    def retire(self, reason: str) -> None:
        """Tell the parent (it starts the replacement now), then drain (on the loop)."""
        if self.retiring:
            return
        self.retiring = True
        self._stop.set()
        with contextlib.suppress(OSError):
            self.report.send(("recycle", reason))
        if self._drain is not None:
            self._drain()
