"""The SSE stream answering a POST, and what every Streamable HTTP stream shares.

* :class:`RequestStream` is the SSE stream answering one POST, written inline
  on the hot path; with an event store a later GET may take it over.
* :class:`StreamQueue` feeds the other streams (the standalone GET stream, a
  resumed one), which :mod:`.http_streams` writes; ``FINAL``, ``CLOSE`` and
  ``GONE`` are its control items.
* :func:`record_event` records an event in the event store, delivering the
  message without an id when a shared store is away.
* :class:`StreamSettings` is what streams need to know of their app.

The sessions these streams belong to, and their table, are in :mod:`.http_sessions`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..errors import StoreUnavailable
from ..protocol import jsonrpc
from ..stores import EventStore
from .asgi import PING, Send, sse_event

if TYPE_CHECKING:
    from .cluster import ClusterNode

__all__ = [
    "CLOSE",
    "DEFAULT_MAX_QUEUED_BYTES",
    "FINAL",
    "GONE",
    "RequestStream",
    "StreamOwner",
    "StreamQueue",
    "StreamSettings",
    "record_event",
]

log = logging.getLogger("mcpkit.transports.http")

DEFAULT_MAX_QUEUED_BYTES: Final = 4 * 1024 * 1024  # waiting for a slow GET/resumed stream

# Control items of a stream queue (the other items are `(event_id, message)` tuples).
FINAL: Final = "final"  # the stream is complete: end the response
CLOSE: Final = "close"  # end the connection, not the stream: send `retry`, the client comes back
GONE: Final = "gone"  # the client disconnected


class StreamSettings(Protocol):
    """What streams need to know of their app."""

    event_store: EventStore | None
    keepalive_interval: float | None
    retry_field: bytes  # b"retry: <ms>\n\n", or b"" when no retry interval is set
    max_queued_bytes: int  # per queue-fed stream
    cluster: ClusterNode | None  # this process as a node of a cluster (a shared store)


DROP_WARNING_EVERY = 1000  # a stream that drops messages is logged on its 1st, 1000th, ... drop


class StreamQueue(asyncio.Queue[Any]):
    """What waits for a queue-fed stream: ``(event_id, serialised message)`` tuples and
    control items (FINAL, CLOSE, GONE). Messages are bounded in bytes (``nbytes``,
    ``limit``); control items always fit."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.nbytes = 0
        self.dropped = 0  # messages dropped so far

    def put_message(self, event_id: str | None, message: dict[str, Any], force: bool) -> bool:
        """Queue a message; False (dropped) when over the limit, unless ``force``."""
        # A copy: orjson's result keeps its whole growth buffer (see .event_store).
        data = bytes(memoryview(jsonrpc.dumps(message)))
        if not force and self.nbytes + len(data) > self.limit:
            self.dropped += 1
            # The client decides how many are dropped: warn on the first and then on
            # every thousandth, so that one who never reads cannot flood the log.
            if self.dropped == 1 or self.dropped % DROP_WARNING_EVERY == 0:
                log.warning(
                    "a stream's client does not read: %d bytes wait for it; dropped %s "
                    "(%d messages dropped for this stream so far)",
                    self.nbytes,
                    message.get("method", "a response"),
                    self.dropped,
                )
            return False
        self.nbytes += len(data)
        self.put_nowait((event_id, data))
        return True


async def record_event(
    store: EventStore,
    stream_id: str,
    message: dict[str, Any] | None,
    store_bytes: Callable[[str, bytes], Awaitable[str]] | None = None,
    data: bytes = b"",
) -> str | None:
    """Record an event; None when a shared store is unavailable (Redis away, or a log
    key it cannot use). The message is still delivered live, only without an id (not
    resumable): losing the event store must not lose the answer to a request in flight.
    Warned once a stream, not once an event. ``store_bytes``: the store's optional
    ``store_event_bytes``, given the message's orjson ``data`` serialised already.
    """
    try:
        if store_bytes is not None:
            return await store_bytes(stream_id, data)
        return await store.store_event(stream_id, message)
    except StoreUnavailable as exc:
        if stream_id not in _UNRECORDED:
            _UNRECORDED[stream_id] = None
            if len(_UNRECORDED) > 1024:  # bounded: the streams warned about last
                _UNRECORDED.popitem(last=False)
            log.warning("events of stream %s are not recorded (not resumable): %s", stream_id, exc)
        return None


_UNRECORDED: Final[OrderedDict[str, None]] = OrderedDict()


class StreamOwner(Protocol):
    """What a POST stream knows of its session (an :class:`~.http_sessions.HTTPSession`):
    where its live resumable streams are kept, so that an ended stream leaves them."""

    streams: dict[str, RequestStream] | None


class RequestStream:
    """The SSE stream answering one POST; calling it sends a related message on it.

    The POST's own connection is written inline (no queue on the hot path).
    With an event store every event is recorded first, and a GET with
    ``Last-Event-ID`` may take the stream over: from then on its messages go
    to that connection's queue (``resumer``).
    """

    __slots__ = (
        "done",
        "entry",
        "order",
        "primed",
        "resumer",
        "send",
        "settings",
        "stream_id",
        "timer",
    )

    def __init__(
        self, settings: StreamSettings, entry: StreamOwner | None, send: Send, stream_id: str | None
    ) -> None:
        self.settings = settings
        self.entry = entry
        self.send: Send | None = send  # the POST's connection, until it ends
        self.stream_id = stream_id  # None: not recorded, not resumable
        self.order = asyncio.Lock() if stream_id is not None else None  # see emit
        self.resumer: StreamQueue | None = None
        self.primed = False
        self.done = False
        self.timer: asyncio.TimerHandle | None = None

    async def __call__(self, message: dict[str, Any]) -> None:
        await self.emit(message, False)

    async def write(self, chunk: bytes, more: bool) -> None:
        """Write to the POST's connection while it is open (errors mean: the client left)."""
        send = self.send
        if send is None:
            return
        if not more:
            self.send = None
        try:
            await send({"type": "http.response.body", "body": chunk, "more_body": more})
        except Exception:  # uvicorn ignores writes to a gone client; other servers raise
            self.send = None
            return
        if more and self.timer is not None:
            self.arm()

    async def emit(self, message: dict[str, Any], final: bool) -> None:
        order = self.order
        if order is None:
            await self._deliver(None, message, final)
            return
        # A network store awaits: the stream keeps its turn from recording an event to
        # sending it, so events go out in the order of their ids (a resume from the last
        # id received must not skip one sent before it).
        async with order:
            store = self.settings.event_store
            assert store is not None and self.stream_id is not None
            store_bytes = getattr(store, "store_event_bytes", None)
            if store_bytes is None:
                event_id = await record_event(store, self.stream_id, message)
                await self._deliver(event_id, message, final)
                return
            # A store that takes the serialised message: the wire's bytes are logged as
            # they are, so the message is serialised once (scale-out.md § 11.4).
            data = jsonrpc.dumps(message)
            event_id = await record_event(store, self.stream_id, message, store_bytes, data)
            await self._deliver(event_id, message, final, data)

    async def _deliver(
        self, event_id: str | None, message: dict[str, Any], final: bool, data: bytes | None = None
    ) -> None:
        resumer = self.resumer
        if resumer is not None:
            resumer.put_message(event_id, message, final)  # the response always fits
            if final:
                resumer.put_nowait(FINAL)
        elif self.send is not None:
            if data is None:
                data = jsonrpc.dumps(message)
            await self.write(sse_event(data, event_id), not final)
        if final:
            self._finish()

    async def end(self) -> None:
        """No response will come (the request was cancelled): end the stream."""
        if self.resumer is not None:
            self.resumer.put_nowait(FINAL)
        await self.write(b"", False)
        self._finish()

    def _finish(self) -> None:
        self.done = True
        self.send = None
        self.disarm()
        entry = self.entry
        if entry is not None and entry.streams is not None and self.stream_id is not None:
            entry.streams.pop(self.stream_id, None)

    async def close_stream(self) -> None:
        """Server-initiated disconnect (SEP-1699): close the connection, keep the stream.

        Only a primed, resumable stream can be closed: otherwise the client
        could not come back for the rest, and this is a no-op.
        """
        if not self.primed or self.done:
            log.debug("close_sse_stream ignored: the stream is not resumable")
            return
        resumer = self.resumer
        if resumer is not None:
            self.resumer = None
            resumer.put_nowait(CLOSE)
        await self.write(self.settings.retry_field, False)
        self.disarm()

    # Keep-alive: one timer per open stream, pushed back by every write.
    def arm(self) -> None:
        interval = self.settings.keepalive_interval
        if interval is None:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(interval, self._ping)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _ping(self) -> None:
        self.timer = None
        if self.send is not None and self.resumer is None:
            task = asyncio.ensure_future(self._send_ping())
            _background.add(task)
            task.add_done_callback(_background.discard)

    async def _send_ping(self) -> None:
        await self.write(PING, True)
        if self.send is not None and self.timer is None:
            self.arm()


# Keep-alive pings in flight (the loop holds tasks weakly).
_background: set[asyncio.Future[Any]] = set()
