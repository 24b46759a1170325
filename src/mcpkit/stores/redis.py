"""The stores on Redis (or Valkey): sessions, events and input rounds shared by processes.

``pip install 'mcpkit[redis]'``, then::

    from mcpkit.stores.redis import RedisStore

    server = MCPServer(name="Shop", version="1.0.0", store=RedisStore("redis://localhost:6379/0"))

One :class:`RedisStore` holds one connection pool of the ``redis`` package's
asyncio client and gives the three stores over it. Every operation the
transport makes is one round trip to Redis (a pipeline or a small Lua script
where one command would not do); the docstrings say which commands each costs, as Redis counts them in
``INFO commandstats``. The hot path of a stateful ``tools/call`` answered on an
SSE stream of a resumable app is one command (``XADD`` of the response to the
session's event log; the session's first event also sets the log's ttl, and
the priming event costs none); the session record is refreshed at most every
``min(60 s, idle_timeout / 4)``. Needs Redis 6.2 or newer (``XADD NOMKSTREAM``,
``SET PXAT``); tested with Redis 7.

Key layout, under ``prefix`` (default ``"mcpkit:"``) so that several servers
can share one Redis:

=================================  ==========  ===========================================
key                                type        expires
=================================  ==========  ===========================================
``<prefix>session:<session id>``   string      ``ttl`` of each write (the transport's idle
                                               timeout plus a margin)
``<prefix>events:<session id>``    stream      ``event_ttl`` after its last refresh (at
                                               most every ``event_ttl / 4``); about
                                               ``event_max_len`` entries (``MAXLEN ~``),
                                               each naming its SSE stream; deleted with
                                               the session's streams
``<prefix>round:<token id>``       string      with the ``requestState`` it records
=================================  ==========  ===========================================

Faults: every Redis error, refused connection or timeout becomes
:class:`~mcpkit.errors.StoreUnavailable`, naming the URL with its password
hidden, within the bounded ``connect_timeout`` / ``timeout`` (no retry loop,
no backoff). A pooled connection that broke while Redis was away is retried
once at once on a fresh connection, so the store recovers by itself on the
first operation after Redis returns.

For a single Redis server (a Sentinel-managed primary can be given as a client
of your own); Redis Cluster is not supported (no cluster client, no hash tags).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, NamedTuple, NoReturn
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from ..errors import ConfigurationError, StoreUnavailable
from .events import EventCallback
from .sessions import SessionRecord

if TYPE_CHECKING:
    from .redis_bus import RedisBus

__all__ = [
    "DEFAULT_EVENT_MAX_LEN",
    "DEFAULT_EVENT_TTL",
    "RedisEventStore",
    "RedisInputRoundStore",
    "RedisSessionStore",
    "RedisStore",
    "TailRead",
    "redact_url",
]

#: Seconds a session's events stay resumable after its log's last refresh.
DEFAULT_EVENT_TTL: Final = 3600.0
#: Events kept per session log (about: Redis trims whole stream nodes, ``MAXLEN ~``).
DEFAULT_EVENT_MAX_LEN: Final = 1000

_FAILURES: Final = (RedisError, OSError)


def redact_url(url: str) -> str:
    """``url`` with its password (in the authority or a ``password=`` parameter) hidden."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user = parts.username or ""
            host = netloc.rpartition("@")[2]
            netloc = f"{user}:***@{host}"
        query = parts.query
        if "password=" in query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, "***" if k == "password" else v) for k, v in pairs])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<a malformed Redis URL>"


def where_of(client: Redis) -> str:
    """How to name a client's server in errors: ``redis://host:port/db`` (no password)."""
    kwargs = client.connection_pool.connection_kwargs
    where = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
    return f"redis://{where}/{kwargs.get('db', 0)}"


def sibling_pool(
    client: Redis, *, max_connections: int, wait: float | None = None, **overrides: Any
) -> ConnectionPool:
    """A new pool to the same server as ``client``'s, with its address, credentials and
    TLS settings, some of them overridden (e.g. ``socket_timeout``). ``wait``: a
    blocking pool, where taking a connection waits that long for a free one."""
    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, **overrides}
    if wait is not None:
        return BlockingConnectionPool(
            max_connections=max_connections,
            timeout=wait,
            connection_class=pool.connection_class,
            **kwargs,
        )
    return ConnectionPool(
        connection_class=pool.connection_class, max_connections=max_connections, **kwargs
    )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _ms(seconds: float) -> int:
    """A ttl in whole milliseconds, at least 1 (Redis refuses 0)."""
    return max(1, int(seconds * 1000))


class _Redis:
    """The client and how to name it in errors, shared by the three stores; and the
    pool of connections for blocking reads (``XREAD BLOCK``), made on first use so
    that they never hold the shared pool's connections."""

    __slots__ = ("_blocking", "client", "timeout", "where")

    def __init__(self, client: Redis, where: str, timeout: float = 2.0) -> None:
        self.client = client
        self.where = where
        self.timeout = timeout
        self._blocking: Redis | None = None

    def blocking(self) -> Redis:
        if self._blocking is None:
            # No socket timeout: a read blocks as long as its BLOCK argument says; the
            # caller bounds the whole command (asyncio.timeout), and a connection whose
            # read is cancelled is closed by redis-py, never reused half-read.
            pool = sibling_pool(
                self.client,
                max_connections=64,
                wait=self.timeout,
                socket_timeout=None,
                retry=Retry(NoBackoff(), 1),
            )
            self._blocking = Redis(connection_pool=pool)
        return self._blocking

    async def aclose(self) -> None:
        blocking, self._blocking = self._blocking, None
        if blocking is not None:
            await blocking.aclose()
            await blocking.connection_pool.disconnect()

    def fail(self, exc: BaseException) -> NoReturn:
        raise StoreUnavailable(
            f"Redis at {self.where} is unavailable: {type(exc).__name__}: {exc}"
        ) from exc


# -- sessions ----------------------------------------------------------------------------------

# A record is stored as its ``last_seen`` (``repr`` of the float, padded to a fixed width)
# followed by the JSON of the rest: ``touch`` rewrites the prefix in place (SETRANGE), so it
# needs no JSON in Lua, and the float round-trips exactly.
_SEEN_WIDTH: Final = 24  # the longest repr of a float ("-1.2345678901234567e-308")

# Restart the ttl and mark the session seen, only if it still exists (never resurrect one).
_TOUCH_LUA: Final = """
if redis.call('pexpire', KEYS[1], ARGV[1]) == 1 then
  redis.call('setrange', KEYS[1], 0, ARGV[2])
  return 1
end
return 0
"""


def _seen(t: float) -> bytes:
    return repr(float(t)).ljust(_SEEN_WIDTH).encode()


def _dump_record(record: SessionRecord) -> bytes:
    data = record.to_json()
    del data["last_seen"]
    return _seen(record.last_seen) + orjson.dumps(data)


def _load_record(value: bytes) -> SessionRecord:
    data = orjson.loads(value[_SEEN_WIDTH:])
    data["last_seen"] = float(value[:_SEEN_WIDTH])
    return SessionRecord.from_json(data)


class RedisSessionStore:
    """A :class:`~mcpkit.stores.SessionStore` on Redis: one string key per session.

    Costs, each one round trip: ``create`` SET NX PX; ``load`` GET; ``save``
    SET XX PX; ``touch`` EVALSHA of a script running PEXPIRE and SETRANGE (three
    commands as Redis counts them); ``delete`` DEL.
    """

    __slots__ = ("_redis", "_touch", "prefix")

    def __init__(self, redis: _Redis, prefix: str) -> None:
        self._redis = redis
        self.prefix = prefix + "session:"
        self._touch = redis.client.register_script(_TOUCH_LUA)

    async def create(self, record: SessionRecord, ttl: float) -> bool:
        try:
            done = await self._redis.client.set(
                self.prefix + record.session_id, _dump_record(record), nx=True, px=_ms(ttl)
            )
        except _FAILURES as exc:
            self._redis.fail(exc)
        return bool(done)

    async def load(self, session_id: str) -> SessionRecord | None:
        try:
            value = await self._redis.client.get(self.prefix + session_id)
        except _FAILURES as exc:
            self._redis.fail(exc)
        if value is None:
            return None
        return _load_record(value if isinstance(value, bytes) else value.encode())

    async def save(self, record: SessionRecord, ttl: float) -> bool:
        try:
            done = await self._redis.client.set(
                self.prefix + record.session_id, _dump_record(record), xx=True, px=_ms(ttl)
            )
        except _FAILURES as exc:
            self._redis.fail(exc)
        return bool(done)

    async def touch(self, session_id: str, ttl: float) -> bool:
        try:
            done = await self._touch(
                keys=[self.prefix + session_id], args=[_ms(ttl), _seen(time.time())]
            )
        except _FAILURES as exc:
            self._redis.fail(exc)
        return bool(done)

    async def delete(self, session_id: str) -> bool:
        try:
            gone = await self._redis.client.delete(self.prefix + session_id)
        except _FAILURES as exc:
            self._redis.fail(exc)
        return bool(gone)


# -- events ------------------------------------------------------------------------------------

# A stream position: Redis's own "<ms>-<seq>" entry id, both parts 64-bit.
_POSITION: Final = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
_U64: Final = 2**64


def _position(text: str) -> str | None:
    match = _POSITION.fullmatch(text)
    if match is None or int(match[1]) >= _U64 or int(match[2]) >= _U64:
        return None  # Redis would refuse it: a client's Last-Event-ID must not cost a 503
    return text


# Delete the entries of some streams from a session's log; the key goes once it is empty.
_FORGET_LUA: Final = """
local gone = {}
for i = 1, #ARGV do gone[ARGV[i]] = true end
local ids = {}
for _, entry in ipairs(redis.call('xrange', KEYS[1], '-', '+')) do
  local fields = entry[2]
  for j = 1, #fields, 2 do
    if fields[j] == 's' then
      if gone[fields[j + 1]] then ids[#ids + 1] = entry[1] end
      break
    end
  end
end
for i = 1, #ids, 500 do
  redis.call('xdel', KEYS[1], unpack(ids, i, math.min(i + 499, #ids)))
end
if redis.call('xlen', KEYS[1]) == 0 then redis.call('del', KEYS[1]) end
return #ids
"""


# The standalone stream's event, logged and published at once (scale-out.md § 3.2 `emit0`):
# one script, so the order of the publishes is the order of the entry ids, across nodes.
# The log gets a ttl if it had none, so that it never lives without one.
_EMIT0_LUA: Final = """
local id = redis.call('xadd', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 's', '0', 'm', ARGV[2])
if redis.call('pttl', KEYS[1]) == -1 then redis.call('pexpire', KEYS[1], ARGV[3]) end
local n = redis.call('publish', ARGV[4], ARGV[5] .. id .. ARGV[6])
return {id, n}
"""

#: Entries one XREAD of :meth:`RedisEventStore.read_after` asks for.
_TAIL_COUNT: Final = 256


class TailRead(NamedTuple):
    """What :meth:`RedisEventStore.read_after` read.

    ``events``: ``(event id, message)`` pairs of the stream asked for, in order.
    ``position``: an event id (``"<stream id>#<entry id>"``) of the last entry
    read from the session's log, of whichever stream: pass it as the next
    ``event_id`` to go on from there (the given one when nothing was read).
    """

    events: list[tuple[str, dict[str, Any]]]
    position: str


def _entries(reply: Any) -> list[Any]:
    """The entries of an XREAD reply on one key (RESP2: a list of pairs; RESP3: a dict)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [entry for entries in reply.values() for entry in entries[0]]
    return [entry for _, entries in reply for entry in entries]


def _remember(table: OrderedDict[str, Any], key: str, bound: int) -> None:
    """Mark ``key`` as just used in a bounded LRU table (the oldest entries go past ``bound``)."""
    table.move_to_end(key)
    while len(table) > bound:
        table.popitem(last=False)


class RedisEventStore:
    """An :class:`~mcpkit.stores.EventStore` on Redis Streams: one log per session.

    Stream ids are ``"<session id>/<n>"`` (the transport's); all streams of a
    session share one Redis stream, ``<prefix>events:<session id>``, whose
    entries name their stream (field ``s``, the ``<n>``). One log per session
    rather than per SSE stream: every POST answered with SSE is a stream, and a
    Redis stream key costs about 4 KB as soon as it holds an entry, plus its own
    ``PEXPIRE``; the session's log is created once and gets its ttl once.

    Event ids are ``"<stream id>#<Redis entry id>"``, so a replay is one
    ``XRANGE`` from that entry on, keeping the entries of that stream: every
    later event once, in order. A *priming* event at the start of a stream
    costs no command: its id is the position before any entry
    (``"<stream id>#0-<n>"``). A log keeps about ``max_len`` entries
    (``XADD MAXLEN ~``) and expires ``ttl`` seconds after its last refresh;
    :meth:`delete_streams` drops a session's streams when it ends.

    Costs, each one round trip: ``store_event`` XADD NOMKSTREAM (1 command);
    XADD + PEXPIRE (2) for the first event of a session's log this process
    writes, and again every ``ttl / 4`` or when the log was gone;
    ``replay_events_after`` XRANGE (1); ``delete_streams`` of one session's
    streams one EVALSHA (the script runs XRANGE, XDEL, XLEN and DEL: the log's
    key goes when its last stream does); of several sessions, one per log in a
    pipeline, after a SCRIPT EXISTS (two round trips).

    This process remembers when it last set each log's ttl (for the
    ``max_tracked`` most recently written logs) and which streams it wrote
    events to (as many); a log not remembered gets its ttl set again, so
    nothing is ever stored without one.
    """

    __slots__ = (
        "_channels",
        "_emit0",
        "_forget",
        "_priming",
        "_redis",
        "_refresh_at",
        "_written",
        "max_len",
        "max_tracked",
        "prefix",
        "ttl",
    )

    def __init__(
        self,
        redis: _Redis,
        prefix: str,
        *,
        ttl: float = DEFAULT_EVENT_TTL,
        max_len: int = DEFAULT_EVENT_MAX_LEN,
        max_tracked: int = 10_000,
    ) -> None:
        self._redis = redis
        self.prefix = prefix + "events:"
        self._channels = prefix + "c:"
        self.ttl = ttl
        self.max_len = max_len
        self.max_tracked = max_tracked
        # log -> when (monotonic) its key's ttl should be set again
        self._refresh_at: OrderedDict[str, float] = OrderedDict()
        # the streams this process wrote an event to: a priming event mid-stream must be
        # a real position (the transport only primes a stream before its first event)
        self._written: OrderedDict[str, None] = OrderedDict()
        self._priming = itertools.count(1)
        self._forget = redis.client.register_script(_FORGET_LUA)
        self._emit0 = redis.client.register_script(_EMIT0_LUA)

    async def store_event(self, stream_id: str, message: dict[str, Any] | None) -> str:
        if message is None:
            if stream_id not in self._written:
                # Nothing of this stream written yet: its start is a position already.
                return f"{stream_id}#0-{next(self._priming)}"
            data = b""  # mid-stream: a real entry marks the position (never replayed)
        else:
            data = orjson.dumps(message)
        log, _, suffix = stream_id.rpartition("/")
        key = self.prefix + log
        fields: dict[Any, Any] = {b"s": suffix.encode(), b"m": data}
        client = self._redis.client
        now = time.monotonic()
        refresh_at = self._refresh_at.get(log)
        try:
            entry = None
            if refresh_at is not None and refresh_at > now:
                # The key has a ttl we set less than ttl/4 ago; NOMKSTREAM: if it is gone
                # (deleted, expired, Redis restarted) never create it without one.
                entry = await client.xadd(
                    key, fields, maxlen=self.max_len, approximate=True, nomkstream=True
                )
            if entry is None:
                pipe = client.pipeline(transaction=False)
                pipe.xadd(key, fields, maxlen=self.max_len, approximate=True)
                pipe.pexpire(key, _ms(self.ttl))
                entry, _ = await pipe.execute()
                self._refresh_at[log] = now + self.ttl / 4
        except _FAILURES as exc:
            self._redis.fail(exc)
        _remember(self._refresh_at, log, self.max_tracked)
        self._written[stream_id] = None
        _remember(self._written, stream_id, self.max_tracked)
        return f"{stream_id}#{_text(entry)}"

    async def replay_events_after(self, last_event_id: str, send: EventCallback) -> str | None:
        stream_id, sep, tail = last_event_id.rpartition("#")
        position = _position(tail) if sep and stream_id else None
        if position is None:
            return None
        log, _, suffix = stream_id.rpartition("/")
        wanted = suffix.encode()
        try:
            # From the position itself: its own entry proves the stream is known even
            # when nothing came after it.
            entries: list[Any] = await self._redis.client.xrange(  # type: ignore[assignment]
                self.prefix + log, position, "+"
            )
        except _FAILURES as exc:
            self._redis.fail(exc)
        mine = [(_text(i), f) for i, f in entries if f.get(b"s") == wanted]
        if not mine and not position.startswith("0-"):
            return None  # deleted, expired, trimmed away or never written: unknown
        # A priming id ("0-n") names a stream whose events may not have been written yet.
        for entry_id, fields in mine:
            data = fields.get(b"m")
            if data and entry_id != position:
                await send(f"{stream_id}#{entry_id}", orjson.loads(data))
        return stream_id

    async def append_and_publish(self, session_id: str, message: dict[str, Any]) -> tuple[str, int]:
        """Log ``message`` on the session's standalone stream ``"<session id>/0"`` and
        publish it on the channel ``<prefix>c:<session id>``, atomically (one
        EVALSHA running XADD, PTTL, PEXPIRE when the log had no ttl, PUBLISH): the
        publishes of all nodes come in entry-id order. The channel gets the orjson
        of ``{"id": <event id>, "m": message}`` (the bus hands it over as channel
        ``"c:<session id>"``). Returns the event id and how many subscribers got it."""
        stream_id = f"{session_id}/0"
        head = b'{"id":' + orjson.dumps(stream_id + "#")[:-1]  # the id's string, unclosed
        data = orjson.dumps(message)
        try:
            entry, receivers = await self._emit0(
                keys=[self.prefix + session_id],
                args=[
                    self.max_len,
                    data,
                    _ms(self.ttl),
                    self._channels + session_id,
                    head,
                    b'","m":' + data + b"}",
                ],
            )
        except _FAILURES as exc:
            self._redis.fail(exc)
        self._written[stream_id] = None
        _remember(self._written, stream_id, self.max_tracked)
        return f"{stream_id}#{_text(entry)}", int(receivers)

    async def read_after(self, stream_id: str, event_id: str | None, block_ms: int) -> TailRead:
        """The events of ``stream_id`` logged after ``event_id``, waiting up to
        ``block_ms`` for one: for following a stream another node is writing.

        ``event_id`` is an id as :meth:`store_event` returns it (or a
        :attr:`TailRead.position`), None for the start of the log. Returns
        :class:`TailRead` ``(events, position)``: ``events`` empty when none came
        within ``block_ms`` (``block_ms <= 0``: do not wait). Entries of the
        session's other streams and empty ones (a priming event's position) are
        passed over, but move ``position``. A ``ValueError`` for an ``event_id``
        that is not one.

        ``XREAD BLOCK <ms> COUNT 256`` (1 command, again while only other streams'
        entries came), on a connection of a pool of its own (at most 64, made on
        first use), so that waiting readers never hold the shared pool's.
        """
        if event_id is None:
            position = "0-0"
        else:
            _, sep, tail = event_id.rpartition("#")
            found = _position(tail) if sep else None
            if found is None:
                raise ValueError(f"read_after: not an event id: {event_id!r}")
            position = found
        log, _, suffix = stream_id.rpartition("/")
        key = self.prefix + log
        wanted = suffix.encode()
        client = self._redis.blocking()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, block_ms) / 1000
        events: list[tuple[str, dict[str, Any]]] = []
        while True:
            left = int((deadline - loop.time()) * 1000)
            block = left if left > 0 else None  # BLOCK 0 would wait for ever
            try:
                async with asyncio.timeout((block or 0) / 1000 + self._redis.timeout):
                    reply = await client.xread({key: position}, count=_TAIL_COUNT, block=block)
            except (*_FAILURES, TimeoutError) as exc:
                self._redis.fail(exc)
            entries = _entries(reply)
            for entry_id, fields in entries:
                position = _text(entry_id)
                data = fields.get(b"m")
                if data and fields.get(b"s") == wanted:
                    events.append((f"{stream_id}#{position}", orjson.loads(data)))
            if events or not entries:
                return TailRead(events, f"{stream_id}#{position}")

    async def delete_log(self, session_id: str) -> None:
        """Delete a session's whole log, every node's streams of it (DEL, 1 command): a
        cluster ends a session this way, since no node knows all of its streams."""
        try:
            await self._redis.client.delete(self.prefix + session_id)
        except _FAILURES as exc:
            self._redis.fail(exc)

    async def delete_streams(self, stream_ids: Iterable[str]) -> None:
        by_log: dict[str, list[str]] = {}
        for stream_id in stream_ids:
            log, _, suffix = stream_id.rpartition("/")
            by_log.setdefault(log, []).append(suffix)
            self._written.pop(stream_id, None)
        if not by_log:
            return
        try:
            if len(by_log) == 1:  # the transport's case: one session ends
                ((log, suffixes),) = by_log.items()
                await self._forget(keys=[self.prefix + log], args=suffixes)
                return
            # A pipeline of scripts: redis-py checks they are loaded first (SCRIPT EXISTS).
            pipe = self._redis.client.pipeline(transaction=False)
            for log, suffixes in by_log.items():
                await self._forget(keys=[self.prefix + log], args=suffixes, client=pipe)
            await pipe.execute()
        except _FAILURES as exc:
            self._redis.fail(exc)


# -- input rounds ------------------------------------------------------------------------------


class RedisInputRoundStore:
    """An :class:`~mcpkit.stores.InputRoundStore` on Redis: SET NX PXAT, one command.

    The claim expires with the ``requestState`` it records (Redis's clock: keep
    the servers' clocks in step, as the state's own expiry already asks).
    """

    __slots__ = ("_redis", "prefix")

    def __init__(self, redis: _Redis, prefix: str) -> None:
        self._redis = redis
        self.prefix = prefix + "round:"

    async def claim(self, token_id: str, expires_at: float) -> bool:
        try:
            done = await self._redis.client.set(
                self.prefix + token_id, b"1", nx=True, pxat=max(1, int(expires_at * 1000) + 1)
            )
        except _FAILURES as exc:
            self._redis.fail(exc)
        return bool(done)


# -- the bundle --------------------------------------------------------------------------------


class RedisStore:
    """A :class:`~mcpkit.stores.Store` on one Redis: ``MCPServer(store=RedisStore(url))``.

    ``url_or_client`` is a ``redis://`` / ``rediss://`` / ``unix://`` URL (a
    connection pool is made for it, closed by :meth:`aclose`), or a
    ``redis.asyncio.Redis`` client of your own (used as it is: its pool,
    timeouts and retries; not closed here). Options:

    ``prefix``
        Put before every key (default ``"mcpkit:"``): servers with different
        prefixes share a Redis without seeing each other's state.
    ``event_ttl``, ``event_max_len``
        How long a session's events (all its resumable streams, one log) are
        kept after its last event (seconds, default 3600; the ttl is set again
        at most every ``event_ttl / 4``) and about how many (default 1000).
    ``connect_timeout``, ``timeout``
        Seconds to open a connection and to wait for an answer (default 2
        each): the bound on how long an operation may take while Redis is
        unreachable before it raises :class:`~mcpkit.errors.StoreUnavailable`.
    ``max_connections``
        Size of the pool (default 64); an operation waits at most
        ``connect_timeout`` for a free connection.
    ``node_ttl``
        Seconds a node of a cluster counts as alive after its last heartbeat
        (default 15; refreshed every third of it): see :attr:`bus`.

    ``shared`` is True: the transport knows from it that other processes see
    this store's state (a cluster). :attr:`bus` is the cluster's
    :class:`~mcpkit.stores.redis_bus.RedisBus`, made on first use, with a
    pub/sub connection of its own; :meth:`request_state_key` the cluster's key
    for signing 2026-07-28 ``requestState``.

    Session records expire after the ``ttl`` the transport gives on each
    write (its ``session_idle_timeout`` plus a margin); input-round claims
    with their ``requestState``.
    """

    #: Every process given the same Redis (and prefix) sees the same state: ``mcpkit run
    #: --workers N`` accepts a server whose store says so.
    shared: Final = True

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        prefix: str = "mcpkit:",
        event_ttl: float = DEFAULT_EVENT_TTL,
        event_max_len: int = DEFAULT_EVENT_MAX_LEN,
        connect_timeout: float = 2.0,
        timeout: float = 2.0,
        max_connections: int = 64,
        node_ttl: float = 15.0,
    ) -> None:
        if not isinstance(prefix, str):
            raise ConfigurationError(f"RedisStore: prefix must be a string, not {prefix!r}")
        for name, value in (
            ("event_ttl", event_ttl),
            ("connect_timeout", connect_timeout),
            ("timeout", timeout),
            ("node_ttl", node_ttl),
        ):
            if not value > 0:
                raise ConfigurationError(f"RedisStore: {name} must be positive, not {value!r}")
        for name, count in (("event_max_len", event_max_len), ("max_connections", max_connections)):
            if type(count) is not int or count < 1:
                raise ConfigurationError(
                    f"RedisStore: {name} must be a positive integer, not {count!r}"
                )
        if isinstance(url_or_client, str):
            self.url = redact_url(url_or_client)
            try:
                pool = BlockingConnectionPool.from_url(
                    url_or_client,
                    max_connections=max_connections,
                    timeout=connect_timeout,  # waiting for a free connection of the pool
                    socket_connect_timeout=connect_timeout,
                    socket_timeout=timeout,
                    # One immediate retry: a pooled connection Redis dropped while it was
                    # away is replaced by a fresh one; a Redis that is down fails at once.
                    retry=Retry(NoBackoff(), 1),
                )
            except ValueError as exc:
                raise ConfigurationError(f"RedisStore: bad Redis URL {self.url}: {exc}") from exc
            client: Redis = Redis(connection_pool=pool)
            self._owned = True
        else:
            client = url_or_client
            self.url = where_of(client)
            self._owned = False
        self.client = client
        self.prefix = prefix
        self.node_ttl = node_ttl
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._bus: RedisBus | None = None
        redis = _Redis(client, self.url, timeout)
        self.sessions = RedisSessionStore(redis, prefix)
        self.events = RedisEventStore(redis, prefix, ttl=event_ttl, max_len=event_max_len)
        self.input_rounds = RedisInputRoundStore(redis, prefix)
        self._redis = redis

    #: Other processes see this store's state (``getattr(store, "shared", False)``).
    shared: Final = True

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r})"

    @property
    def bus(self) -> RedisBus:
        """The cluster bus over this Redis (same prefix and server, its own pub/sub
        connection), made on first use and closed by :meth:`aclose`; not started."""
        if self._bus is None:
            from .redis_bus import RedisBus  # it imports this module

            self._bus = RedisBus(
                self.client,
                prefix=self.prefix,
                node_ttl=self.node_ttl,
                connect_timeout=self.connect_timeout,
                timeout=self.timeout,
                where=self.url,
            )
        return self._bus

    async def request_state_key(self) -> bytes:
        """The cluster's HMAC key for 2026-07-28 ``requestState`` (scale-out.md § 8):
        ``<prefix>rsk``, 32 random bytes set by the first node to ask and kept for
        good (``SET NX`` then ``GET``, one pipelined round trip)."""
        key = self.prefix + "rsk"
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.set(key, secrets.token_bytes(32), nx=True)
            pipe.get(key)
            _, value = await pipe.execute()
        except _FAILURES as exc:
            self._redis.fail(exc)
        if not isinstance(value, bytes) or len(value) != 32:
            raise StoreUnavailable(f"Redis at {self.url}: {key} does not hold a 32-byte key")
        return value

    async def connect(self) -> None:
        """Check that Redis answers (PING), else raise ``StoreUnavailable`` naming the URL.

        The HTTP apps call it at startup (ASGI lifespan), so a server whose Redis
        is unreachable does not start.
        """
        try:
            await self.client.ping()
        except _FAILURES as exc:
            raise StoreUnavailable(
                f"cannot reach Redis at {self.url}: {type(exc).__name__}: {exc}"
            ) from exc

    async def aclose(self) -> None:
        """Close the bus, the blocking reads' pool and the connection pool (the last
        only when this store made it from a URL)."""
        bus, self._bus = self._bus, None
        if bus is not None:
            await bus.aclose()
        await self._redis.aclose()
        if self._owned:
            await self.client.aclose()
            await self.client.connection_pool.disconnect()
