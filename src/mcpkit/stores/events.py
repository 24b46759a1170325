"""The event store: the SSE event log behind resumable Streamable HTTP streams.

2025-11-25 transports § "Resumability and Redelivery": when the server
attaches an ``id`` to its SSE events, a client that lost a stream reconnects
with ``GET`` + ``Last-Event-ID`` and the server replays what it missed *on that
stream only*. The transport records every event it sends (and, while no
connection is attached, every event it could not send) through an
:class:`EventStore`; the store is the only state resumption needs, so a shared
implementation (Redis streams, a database) lets a client resume on any worker.

Event ids are opaque to the transport but must be unique across the whole
session, must let the store find the stream again, and must not contain CR or
LF (they are written into the SSE ``id:`` field): the in-memory store writes
``"<stream id>#<sequence>"``. Stream ids are chosen by the transport
(``"<session id>/<n>"``) so a store never needs to know about sessions.

What a shared implementation (Redis) must keep in mind: the transport holds
no reference into the store (every call passes ids and plain JSON messages),
a replay may run on another process than the one that stored the events, and
the store must bound what it keeps (by bytes, and by expiry) since a client
that never resumes never says so. ``tests/stores/conformance.py`` is the
behaviour every implementation must pass.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, Protocol, runtime_checkable

import orjson

__all__ = [
    "DEFAULT_MAX_BYTES",
    "EventCallback",
    "EventStore",
    "InMemoryEventStore",
    "MemoryEventStore",
]

#: Bytes of serialised events a :class:`MemoryEventStore` keeps by default.
DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024

EventCallback = Callable[[str, dict[str, Any]], Awaitable[None]]
"""``await send(event_id, message)``: one replayed event."""


@runtime_checkable
class EventStore(Protocol):
    """Where SSE events are kept so a broken stream can be resumed.

    Three calls, all async so a network store fits. ``delete_streams`` is
    part of the protocol, but the transport tolerates a store written before
    it was (it then just never deletes: the store's own bounds apply).

    Optional, found with ``getattr``: ``async store_event_bytes(stream_id,
    data: bytes) -> str``, :meth:`store_event` of a message given as its
    orjson bytes, which the transport serialised for the wire anyway (so it
    is serialised once; the Redis store has it). The bytes may be a view of a
    larger buffer: a store that keeps them should keep a copy.
    """

    async def store_event(self, stream_id: str, message: dict[str, Any] | None) -> str:
        """Record one event of ``stream_id``; returns its event id.

        ``message`` is None for a *priming* event (an id with empty data, sent
        first on a stream so the client has a ``Last-Event-ID`` before any
        message arrives); it is never replayed but must be a valid position.
        """
        ...

    async def replay_events_after(self, last_event_id: str, send: EventCallback) -> str | None:
        """Send, in order, every message of the stream of ``last_event_id`` stored after it.

        Returns that stream's id, or None when the id is unknown (malformed,
        or its stream was evicted) and nothing was sent.
        """
        ...

    async def delete_streams(self, stream_ids: Iterable[str]) -> None:
        """Forget these streams: their session ended (deleted, expired or evicted), so
        nobody can resume them. Unknown ids are ignored."""
        ...


class MemoryEventStore:
    """A bounded, process-local :class:`EventStore` (also importable as ``InMemoryEventStore``).

    Events are kept serialised, and at most ``max_bytes`` of them in all
    (default 64 MiB): past that the least recently written streams are
    dropped, and when one stream alone is over the budget, its oldest events.
    Also at most ``max_events_per_stream`` events per stream (the oldest are
    dropped first) and at most ``max_streams`` streams (the least recently
    written stream is dropped first). A resume from an id older than what is
    kept replays what is left: a partial replay beats none, and the final
    response, the event that matters most, is the newest.
    """

    __slots__ = ("_seq", "_streams", "max_bytes", "max_events_per_stream", "max_streams", "nbytes")

    def __init__(
        self,
        *,
        max_events_per_stream: int = 1000,
        max_streams: int = 10_000,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if max_events_per_stream < 1 or max_streams < 1 or max_bytes < 1:
            raise ValueError("max_events_per_stream, max_streams and max_bytes must be positive")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self.max_bytes = max_bytes
        self.nbytes = 0  # serialised bytes of the events kept
        self._streams: OrderedDict[str, deque[tuple[int, bytes | None]]] = OrderedDict()
        self._seq = itertools.count(1)

    def __len__(self) -> int:
        """The number of streams kept."""
        return len(self._streams)

    async def store_event(self, stream_id: str, message: dict[str, Any] | None) -> str:
        seq = next(self._seq)
        # A copy: orjson's result keeps its whole growth buffer (about ten times
        # the text for a 100 kB message), which is fine for a moment, not for keeps.
        data = bytes(memoryview(orjson.dumps(message))) if message is not None else None
        streams = self._streams
        events = streams.get(stream_id)
        if events is None:
            if len(streams) >= self.max_streams:
                self._drop_stream(next(iter(streams)))
            events = streams[stream_id] = deque()
        else:
            streams.move_to_end(stream_id)
        if len(events) >= self.max_events_per_stream:
            self._drop_oldest(events)
        events.append((seq, data))
        if data is not None:
            self.nbytes += len(data)
            while self.nbytes > self.max_bytes:
                oldest = next(iter(streams))
                if oldest != stream_id:
                    self._drop_stream(oldest)
                elif len(events) > 1:
                    self._drop_oldest(events)
                else:
                    break  # one event over the whole budget: kept until the next one
        return f"{stream_id}#{seq}"

    async def replay_events_after(self, last_event_id: str, send: EventCallback) -> str | None:
        stream_id, sep, tail = last_event_id.rpartition("#")
        if not sep or not tail.isdigit():
            return None
        events = self._streams.get(stream_id)
        if events is None:
            return None
        after = int(tail)
        # Snapshot: `send` may await, and new events of a live stream must not
        # be replayed twice (the transport delivers those itself).
        for seq, data in list(events):
            if seq > after and data is not None:
                await send(f"{stream_id}#{seq}", orjson.loads(data))
        return stream_id

    async def delete_streams(self, stream_ids: Iterable[str]) -> None:
        """Forget these streams (their session ended: nobody can resume them)."""
        for stream_id in stream_ids:
            if stream_id in self._streams:
                self._drop_stream(stream_id)

    def _drop_stream(self, stream_id: str) -> None:
        events = self._streams.pop(stream_id)
        self.nbytes -= sum(len(data) for _, data in events if data is not None)

    def _drop_oldest(self, events: deque[tuple[int, bytes | None]]) -> None:
        _, data = events.popleft()
        if data is not None:
            self.nbytes -= len(data)


InMemoryEventStore = MemoryEventStore
"""The name :class:`MemoryEventStore` had before the stores got their own package."""
