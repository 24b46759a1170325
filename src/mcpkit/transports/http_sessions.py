"""Sessions and SSE streams of the Streamable HTTP transport.

* :class:`HTTPSession` is what the transport keeps per stateful session (a
  few slots next to the :class:`ServerSession`; it is also the session's
  ``standalone`` sender, so no closure is allocated per session).
* :class:`SessionTable` holds them in least-recently-used order: idle expiry
  by a sweep that stops at the first live session, and a cap that evicts the
  least recently used *idle* session.
* :class:`RequestStream` is the SSE stream answering one POST, written inline
  on the hot path; with an event store a later GET may take it over.
* :func:`pump` writes a queue-fed stream (the standalone GET stream, or a
  resumed one) with keep-alive pings until it ends or the client leaves.

Stream ids are ``"<session id>/<n>"``: ``/0`` is the standalone stream, POST
streams count from 1. An event store only ever sees stream ids, and the
transport checks that a ``Last-Event-ID`` names a stream of the asking
session (2025-11-25 transports: never replay another stream's messages).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from ..errors import INVALID_REQUEST, ConnectionClosed
from .asgi import PING, SSE_HEADERS, Receive, Send, send_error, sse_event, watch_disconnect
from .event_store import EventStore

if TYPE_CHECKING:
    from ..server.session import ServerSession

__all__ = [
    "CLOSE",
    "DEFAULT_MAX_QUEUED_BYTES",
    "FINAL",
    "HTTPSession",
    "RequestStream",
    "SessionTable",
    "StreamQueue",
    "StreamSettings",
    "pump",
]

log = logging.getLogger("mcpkit.transports.http")

clock = time.monotonic  # module-level so tests can drive idle expiry without sleeping

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
        data = bytes(memoryview(orjson.dumps(message)))
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


class HTTPSession:
    """Transport state of one stateful session; calling it sends on the standalone stream."""

    __slots__ = (
        "busy",
        "get_queue",
        "last_seen",
        "listened",
        "nstreams",
        "session",
        "settings",
        "sid",
        "streams",
    )

    def __init__(self, settings: StreamSettings, sid: str, session: ServerSession) -> None:
        self.settings = settings
        self.sid = sid
        self.session = session
        self.last_seen = clock()
        self.busy = 0  # in-flight POSTs and open streams: a busy session never expires
        self.get_queue: StreamQueue | None = None
        self.listened = False  # opened a GET stream once: keep its messages while it is away
        self.nstreams = 0
        self.streams: dict[str, RequestStream] | None = None  # live resumable POST streams

    @property
    def standalone_id(self) -> str:
        return self.sid + "/0"

    def new_stream_id(self) -> str:
        self.nstreams += 1
        return f"{self.sid}/{self.nstreams}"

    def owns(self, stream_id: str) -> bool:
        # The suffix never holds "/", so this holds whatever the session id contains.
        return stream_id.rpartition("/")[0] == self.sid

    async def __call__(self, message: dict[str, Any]) -> None:
        """``session.standalone``: unrelated notifications and requests (the GET stream)."""
        store = self.settings.event_store
        event_id = None
        if store is not None and self.listened:
            event_id = await store.store_event(self.standalone_id, message)
        queue = self.get_queue
        if queue is None:
            if event_id is None:
                if "id" in message and "method" in message:
                    # A request nobody can receive would only time out later: fail now.
                    raise ConnectionClosed(
                        f"cannot send {message['method']} to the client: with JSON responses "
                        "the server reaches the client only through its GET stream, which is "
                        "not open"
                    )
                log.debug("no GET stream for the session; dropped %s", message.get("method"))
            return
        queue.put_message(event_id, message, False)

    def forget_events(self) -> None:
        """The session ended: nobody can resume its streams, so the event store may
        forget them (when it can: ``delete_streams`` is optional)."""
        delete = getattr(self.settings.event_store, "delete_streams", None)
        if delete is None:
            return
        ids = [f"{self.sid}/{n}" for n in range(self.nstreams + 1)]
        task = asyncio.ensure_future(delete(ids))
        _background.add(task)
        task.add_done_callback(_forgotten)

    def end_streams(self, item: str) -> None:
        """Put ``item`` (FINAL or CLOSE) on every queue-fed stream of the session."""
        if self.get_queue is not None:
            self.get_queue.put_nowait(item)
            self.get_queue = None
        if self.streams:
            for stream in self.streams.values():
                if stream.resumer is not None:
                    stream.resumer.put_nowait(item)
                    stream.resumer = None


class SessionTable:
    """The live sessions of one app, least recently used first."""

    __slots__ = ("_next_sweep", "_sessions", "_sweep_every", "idle_timeout", "max_sessions")

    def __init__(self, *, idle_timeout: float, max_sessions: int) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, HTTPSession] = OrderedDict()
        # Sweeping from the request path (no timer per session, no background task):
        # at most every half timeout, and each sweep stops at the first live session.
        self._sweep_every = min(30.0, idle_timeout / 2)
        self._next_sweep = clock() + self._sweep_every

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, sid: object) -> bool:
        return sid in self._sessions

    def __getitem__(self, sid: str) -> HTTPSession:
        return self._sessions[sid]

    def values(self) -> Iterator[HTTPSession]:
        return iter(list(self._sessions.values()))

    def get(self, sid: str) -> HTTPSession | None:
        return self._sessions.get(sid)

    def add(self, entry: HTTPSession) -> None:
        self._sessions[entry.sid] = entry

    def touch(self, entry: HTTPSession) -> None:
        """Mark a session as just used (after a request or a stream ends), keeping LRU order."""
        entry.last_seen = clock()
        if entry.sid in self._sessions:
            self._sessions.move_to_end(entry.sid)

    def lookup(self, sid: str) -> HTTPSession | None:
        """The live session ``sid``, marked as just used (None when unknown or expired)."""
        entry = self._sessions.get(sid)
        if entry is None:
            return None
        now = clock()
        if not entry.busy and now - entry.last_seen > self.idle_timeout:
            self.end(entry)
            return None
        entry.last_seen = now
        self._sessions.move_to_end(sid)
        if now >= self._next_sweep:
            self.sweep(now)
        return entry

    def sweep(self, now: float) -> None:
        """End the sessions idle for longer than the timeout."""
        self._next_sweep = now + self._sweep_every
        cutoff = now - self.idle_timeout
        expired: list[HTTPSession] = []
        busy: list[HTTPSession] = []
        for entry in self._sessions.values():
            if entry.last_seen > cutoff:
                break
            (busy if entry.busy else expired).append(entry)
        for entry in busy:  # still in use: counts as recently used
            entry.last_seen = now
            self._sessions.move_to_end(entry.sid)
        for entry in expired:
            log.debug("session expired after %.0f s idle", self.idle_timeout)
            self.end(entry)

    def make_room(self) -> bool:
        """Room for one more session: sweep, then evict the least recently used idle one."""
        if len(self._sessions) < self.max_sessions:
            return True
        self.sweep(clock())
        if len(self._sessions) < self.max_sessions:
            return True
        for entry in self._sessions.values():
            if not entry.busy:
                log.info(
                    "session cap (%d) reached: evicting the least recently used idle session",
                    self.max_sessions,
                )
                self.end(entry)
                return True
        return False

    def end(self, entry: HTTPSession) -> None:
        """End a session: it answers 404 from now on; its streams end."""
        self._sessions.pop(entry.sid, None)
        entry.session.close()
        entry.end_streams(FINAL)
        entry.forget_events()

    def end_streams(self) -> None:
        """Close every queue-fed stream's connection (with ``retry``) so a server can stop."""
        for entry in self._sessions.values():
            entry.end_streams(CLOSE)

    def close_all(self) -> None:
        for entry in list(self._sessions.values()):
            self.end(entry)


class RequestStream:
    """The SSE stream answering one POST; calling it sends a related message on it.

    The POST's own connection is written inline (no queue on the hot path).
    With an event store every event is recorded first, and a GET with
    ``Last-Event-ID`` may take the stream over: from then on its messages go
    to that connection's queue (``resumer``).
    """

    __slots__ = ("done", "entry", "primed", "resumer", "send", "settings", "stream_id", "timer")

    def __init__(
        self, settings: StreamSettings, entry: HTTPSession | None, send: Send, stream_id: str | None
    ) -> None:
        self.settings = settings
        self.entry = entry
        self.send: Send | None = send  # the POST's connection, until it ends
        self.stream_id = stream_id  # None: not recorded, not resumable
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
        event_id = None
        if self.stream_id is not None:
            store = self.settings.event_store
            assert store is not None
            event_id = await store.store_event(self.stream_id, message)
        resumer = self.resumer
        if resumer is not None:
            resumer.put_message(event_id, message, final)  # the response always fits
            if final:
                resumer.put_nowait(FINAL)
        elif self.send is not None:
            await self.write(sse_event(orjson.dumps(message), event_id), not final)
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


_background: set[asyncio.Future[Any]] = set()


def _forgotten(task: asyncio.Future[Any]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("the event store could not delete a session's streams: %r", task.exception())


async def pump(
    settings: StreamSettings,
    send: Send,
    receive: Receive,
    queue: StreamQueue,
    replay: list[tuple[str, dict[str, Any]]],
    seen: set[str],
) -> None:
    """Write a queue-fed SSE stream until it ends, the client leaves or the server stops.

    ``replay`` is written first; queued events whose id is in ``seen`` were
    part of it and are skipped.
    """
    await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
    watcher = asyncio.ensure_future(watch_disconnect(receive, queue, GONE))
    tail = b""
    try:
        for event_id, message in replay:
            chunk = sse_event(orjson.dumps(message), event_id)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        interval = settings.keepalive_interval
        while True:
            try:
                async with asyncio.timeout(interval):
                    item = await queue.get()
            except TimeoutError:
                await send({"type": "http.response.body", "body": PING, "more_body": True})
                continue
            if type(item) is tuple:
                event_id, data = item
                queue.nbytes -= len(data)
                if event_id is not None and event_id in seen:
                    continue
                chunk = sse_event(data, event_id)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                continue
            if item == CLOSE:
                tail = settings.retry_field
            break
    except OSError:  # the client went away mid-write
        pass
    finally:
        watcher.cancel()
    try:
        await send({"type": "http.response.body", "body": tail, "more_body": False})
    except Exception:
        pass


async def open_stream(
    settings: StreamSettings,
    entry: HTTPSession,
    last_event_id: str | None,
    receive: Receive,
    send: Send,
) -> None:
    """Serve a GET: resume the stream ``last_event_id`` belongs to, else the standalone one."""
    if last_event_id is not None and settings.event_store is not None:
        if await _resume(settings, entry, last_event_id, receive, send):
            return
    if entry.get_queue is not None:
        await _conflict(send)
        return
    queue = StreamQueue(settings.max_queued_bytes)
    entry.get_queue = queue
    entry.listened = True
    try:
        await pump(settings, send, receive, queue, [], set())
    finally:
        if entry.get_queue is queue:
            entry.get_queue = None


async def _conflict(send: Send) -> None:
    # One standalone stream per session: messages are sent on one stream only (transports §
    # multiple connections), so a second listener would silently get nothing.
    await send_error(
        send, 409, INVALID_REQUEST, "Conflict: this session already has a GET stream open"
    )


async def _resume(
    settings: StreamSettings, entry: HTTPSession, last_event_id: str, receive: Receive, send: Send
) -> bool:
    """GET + Last-Event-ID: replay the stream after that id, then continue it live.

    Returns False when the id names no stream of this session (the caller
    then opens a plain standalone stream).
    """
    store = settings.event_store
    assert store is not None
    replay: list[tuple[str, dict[str, Any]]] = []

    async def collect(event_id: str, message: dict[str, Any]) -> None:
        replay.append((event_id, message))

    # Replay into a buffer first: only once the store names the stream can we check that
    # it belongs to this session (transports § resumability: never replay another stream).
    stream_id = await store.replay_events_after(last_event_id, collect)
    if stream_id is None or not entry.owns(stream_id):
        return False
    queue = StreamQueue(settings.max_queued_bytes)
    live: RequestStream | None = None
    attached = True
    if stream_id == entry.standalone_id:
        # A resume proves the client lost its stream, even if the server has not noticed
        # yet (a half-open connection): the new connection takes over, no 409.
        if entry.get_queue is not None:
            entry.get_queue.put_nowait(CLOSE)
        entry.get_queue = queue
    else:
        live = entry.streams.get(stream_id) if entry.streams else None
        if live is None or live.done:
            live = None
            attached = False
            queue.put_nowait(FINAL)
        else:
            previous = live.resumer
            live.resumer = queue  # from now on the request's messages come here
            if previous is not None:
                previous.put_nowait(CLOSE)
            # One connection per stream: if the POST's own connection is somehow still
            # open, end it.
            await live.write(settings.retry_field, False)
    if attached:
        # Events stored between the replay and the takeover: replay again, deduplicated.
        await store.replay_events_after(replay[-1][0] if replay else last_event_id, collect)
    seen = {event_id for event_id, _ in replay}
    try:
        await pump(settings, send, receive, queue, replay, seen)
    finally:
        if live is not None and live.resumer is queue:
            live.resumer = None
        if entry.get_queue is queue:
            entry.get_queue = None
    return True
