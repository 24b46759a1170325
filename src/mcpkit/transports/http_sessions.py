"""Sessions of the Streamable HTTP transport and the table of the live ones.

* :class:`HTTPSession` is what the transport keeps per stateful session (a few
  slots next to the :class:`ServerSession`; also its ``standalone`` sender).
* :class:`SessionTable` holds them in least-recently-used order (idle expiry by
  a sweep that stops at the first live session; a cap evicting the least recently
  used *idle* one) and keeps each one's :class:`~mcpkit.stores.SessionRecord` in a
  :class:`~mcpkit.stores.SessionStore`: written at ``initialize``, refreshed at
  most every ``idle_timeout / 4`` (never per request) or when the log level
  changes, deleted when the session ends. Streams and tasks stay in the process.
* A session's streams (:class:`~.http_request_streams.RequestStream` for a POST,
  queue-fed ones written by :mod:`.http_streams`) are in :mod:`.http_request_streams`.

Stream ids are ``"<session id>/<suffix>"``: ``/0`` is the standalone stream, POST
streams count from 1 (in a cluster their suffix also names the node and the
request: :mod:`.cluster_ids`). The transport checks that a ``Last-Event-ID``
names a stream of the asking session (2025-11-25 transports: never replay
another stream's messages).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Final

from ..errors import ConnectionClosed
from ..server.context import LOG_LEVELS
from ..stores import SessionRecord, SessionStore
from .cluster_ids import stream_suffix
from .http_request_streams import (
    CLOSE,
    FINAL,
    RequestStream,
    StreamQueue,
    StreamSettings,
    record_event,
)

if TYPE_CHECKING:
    from ..server.session import ServerSession

__all__ = ["HTTPSession", "SessionTable", "session_record"]

log = logging.getLogger("mcpkit.transports.http")

clock = time.monotonic  # module-level so tests can drive idle expiry without sleeping


class HTTPSession:
    """Transport state of one stateful session; calling it sends on the standalone stream."""

    __slots__ = (
        "busy",
        "created_at",
        "get_queue",
        "last_seen",
        "listened",
        "node",
        "nstreams",
        "order",
        "principal",
        "session",
        "settings",
        "sid",
        "stored_at",
        "stored_level",
        "streams",
        "verified",
    )

    def __init__(
        self,
        settings: StreamSettings,
        sid: str,
        session: ServerSession,
        principal: str | None = None,
    ) -> None:
        self.settings = settings
        self.sid = sid
        self.session = session
        self.principal = principal  # who initialised it, as its session record says
        self.created_at = time.time()
        self.last_seen = clock()
        self.stored_at = self.last_seen  # when its record was last written to the store
        self.stored_level = session.log_level  # the log level that record holds
        self.busy = 0  # in-flight POSTs and open streams: a busy session never expires
        self.get_queue: StreamQueue | None = None
        self.listened = False  # opened a GET stream once: keep its messages while it is away
        self.nstreams = 0
        self.order: asyncio.Lock | None = None  # made when events are first recorded
        self.streams: dict[str, RequestStream] | None = None  # live resumable POST streams
        self.node: str | None = None  # in a cluster: this node's id (names its streams)
        self.verified = True  # False: the cluster bus was away, re-read the record first

    @property
    def standalone_id(self) -> str:
        return self.sid + "/0"

    def new_stream_id(self, rid: Any = None) -> str:
        self.nstreams += 1
        if self.node is not None:  # unique across nodes, and names its node and request
            return f"{self.sid}/{stream_suffix(self.node, self.nstreams, rid)}"
        return f"{self.sid}/{self.nstreams}"

    def owns(self, stream_id: str) -> bool:
        # The suffix never holds "/", so this holds whatever the session id contains.
        return stream_id.rpartition("/")[0] == self.sid

    async def __call__(self, message: dict[str, Any]) -> None:
        """``session.standalone``: unrelated notifications and requests (the GET stream)."""
        cluster = self.settings.cluster
        if cluster is not None:
            await cluster.standalone(self, message)
            return
        store = self.settings.event_store
        if store is not None and self.listened:
            order = self.order
            if order is None:
                order = self.order = asyncio.Lock()
            async with order:  # events queued in the order of their ids (RequestStream.emit)
                self._queue(await record_event(store, self.standalone_id, message), message)
            return
        self._queue(None, message)

    def _queue(self, event_id: str | None, message: dict[str, Any]) -> None:
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
        forget them (stores written before ``delete_streams`` joined the protocol lack it)."""
        delete = getattr(self.settings.event_store, "delete_streams", None)
        if delete is None:
            return
        ids = [f"{self.sid}/{n}" for n in range(self.nstreams + 1)]
        _in_background(delete(ids), "the event store could not delete a session's streams")

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


def session_record(entry: HTTPSession) -> SessionRecord:
    """The durable half of a live session, as a session store keeps it."""
    session = entry.session
    return SessionRecord(
        session_id=entry.sid,
        protocol_version=session.revision.name,
        client_info=session.client_info,
        client_capabilities=session.client_capabilities,
        log_level=_LEVEL_NAMES.get(session.log_level),
        principal=entry.principal,
        created_at=entry.created_at,
        subscriptions=sorted(session.subscriptions),
        subscriber_scopes=(
            None if session.subscriber_scopes is None else sorted(session.subscriber_scopes)
        ),
        visibility=None if session.visibility is None else session.visibility.to_json(),
    )


_LEVEL_NAMES: Final = {rank: name for name, rank in LOG_LEVELS.items()}


class SessionTable:
    """The live sessions of one app, least recently used first, and their records in
    ``store`` (None: records are not kept, as in tests that build a table alone)."""

    __slots__ = (
        "_next_sweep",
        "_sessions",
        "_sweep_every",
        "idle_timeout",
        "max_sessions",
        "record_ttl",
        "shared",
        "store",
        "store_every",
    )

    def __init__(
        self, *, idle_timeout: float, max_sessions: int, store: SessionStore | None = None
    ) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.store = store
        # A shared store: other processes may serve the same sessions, so this table is a
        # cache of them; expiry and eviction here drop the cache entry, not the session.
        self.shared = False  # set by the app when it is a node of a cluster
        self._sessions: OrderedDict[str, HTTPSession] = OrderedDict()
        # Sweeping from the request path (no timer per session, no background task):
        # at most every half timeout, and each sweep stops at the first live session.
        self._sweep_every = min(30.0, idle_timeout / 2)
        self._next_sweep = clock() + self._sweep_every
        # A record is refreshed at most this often, so it lives a little longer than the
        # idle timeout: it never expires in the store before its session here.
        self.store_every = min(60.0, idle_timeout / 4)
        self.record_ttl = idle_timeout + self.store_every

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, sid: object) -> bool:
        return sid in self._sessions

    def __getitem__(self, sid: str) -> HTTPSession:
        return self._sessions[sid]

    def values(self) -> Iterator[HTTPSession]:
        """The live sessions, least recently used first (a copy: ending one is safe)."""
        return iter(list(self._sessions.values()))

    def get(self, sid: str) -> HTTPSession | None:
        """The live session ``sid`` as it is (not marked as used; see :meth:`lookup`)."""
        return self._sessions.get(sid)

    def add(self, entry: HTTPSession) -> None:
        """Hold ``entry`` (after :meth:`make_room`), most recently used."""
        self._sessions[entry.sid] = entry

    async def create(self, entry: HTTPSession) -> bool:
        """Record a new session in the store; False when the store knows its id already."""
        if self.store is None:
            return True
        return await self.store.create(session_record(entry), self.record_ttl)

    def touch(self, entry: HTTPSession) -> None:
        """Mark a session as just used (after a request or a stream ends), keeping LRU order."""
        now = entry.last_seen = clock()
        if entry.sid in self._sessions:
            self._sessions.move_to_end(entry.sid)
            if self.store is not None and (
                now - entry.stored_at >= self.store_every
                or entry.session.log_level != entry.stored_level
            ):
                self._refresh(entry, now)

    def _refresh(self, entry: HTTPSession, now: float) -> None:
        """Write the session's record again (its log level changed) or restart its ttl."""
        store = self.store
        assert store is not None
        entry.stored_at = now
        if entry.session.log_level != entry.stored_level:
            entry.stored_level = entry.session.log_level
            write = store.save(session_record(entry), self.record_ttl)
        else:
            write = store.touch(entry.sid, self.record_ttl)
        _in_background(
            self._still_there(entry, write) if self.shared else write,
            "the session store could not update a session",
        )

    async def _still_there(self, entry: HTTPSession, write: Coroutine[Any, Any, bool]) -> None:
        """In a cluster: a record gone from the store (ended by another node, expired) ends
        this node's copy, even if the message saying so was lost."""
        if not await write and self._sessions.get(entry.sid) is entry:
            self.end(entry, forget=False)

    def lookup(self, sid: str) -> HTTPSession | None:
        """The live session ``sid``, marked as just used (None when unknown or expired)."""
        entry = self._sessions.get(sid)
        if entry is None:
            return None
        now = clock()
        if not entry.busy and now - entry.last_seen > self.idle_timeout:
            self.end(entry, forget=not self.shared)
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
            if self.store is not None and now - entry.stored_at >= self.store_every:
                self._refresh(entry, now)
        for entry in expired:
            log.debug("session expired after %.0f s idle", self.idle_timeout)
            self.end(entry, forget=not self.shared)

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
                self.end(entry, forget=not self.shared)
                return True
        return False

    def end(self, entry: HTTPSession, *, forget: bool = True) -> None:
        """End a session: it answers 404 from now on; its streams end.

        ``forget``: also delete its record and its streams' events from the stores.
        Not when the server stops: with shared stores, other workers serve on.
        """
        self._sessions.pop(entry.sid, None)
        entry.session.close()
        entry.end_streams(FINAL)
        if forget:
            entry.forget_events()
            if self.store is not None:
                _in_background(
                    self.store.delete(entry.sid), "the session store could not delete a session"
                )

    def end_streams(self) -> None:
        """Close every queue-fed stream's connection (with ``retry``) so a server can stop."""
        for entry in self._sessions.values():
            entry.end_streams(CLOSE)

    def close_all(self) -> None:
        """End every live session of this process (the server stops); their records and
        events stay in the stores, which expire them."""
        for entry in list(self._sessions.values()):
            self.end(entry, forget=False)


# Store writes in flight (the loop holds tasks weakly).
_background: set[asyncio.Future[Any]] = set()


def _in_background(write: Coroutine[Any, Any, Any], failure: str) -> None:
    """Run a store write without holding up the request; log it if it fails."""

    def done(task: asyncio.Future[Any]) -> None:
        _background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("%s: %r", failure, task.exception())

    task = asyncio.ensure_future(write)
    _background.add(task)
    task.add_done_callback(done)
