"""The stores on Redis (or Valkey): sessions, events and input rounds shared by processes.

``pip install 'mcpkit[redis]'``, then::

    from mcpkit.stores.redis import RedisStore

    server = MCPServer(name="Shop", version="1.0.0", store=RedisStore("redis://localhost:6379/0"))

One :class:`RedisStore` holds one connection pool of the ``redis`` package's
asyncio client and gives the three stores over it. Every operation is one
round trip to Redis (a pipeline or a small Lua script where one command would
not do); the docstrings say which commands each costs, as Redis counts them in
``INFO commandstats``. The hot path of a stateful ``tools/call`` answered on an
SSE stream of a resumable app is two commands in one round trip (``XADD`` +
``PEXPIRE`` of the stream that carries the response); the priming event costs
none, and the session record is refreshed at most every ``min(60 s, idle_timeout / 4)``.
Needs Redis 6.2 or newer (``XADD NOMKSTREAM``, ``SET PXAT``, exclusive ``XRANGE``
starts); tested with Redis 7.

Key layout, under ``prefix`` (default ``"mcpkit:"``) so that several servers
can share one Redis:

==============================  ==========  ==============================================
key                             type        expires
==============================  ==========  ==============================================
``<prefix>session:<id>``        string      ``ttl`` of each write (the transport's idle
                                            timeout plus a margin)
``<prefix>events:<stream id>``  stream      ``event_ttl`` after its last refresh (at most
                                            every ``event_ttl / 4``); ``event_max_len``
                                            entries (``MAXLEN ~``); deleted with its session
``<prefix>round:<token id>``    string      with the ``requestState`` it records
==============================  ==========  ==============================================

Faults: every Redis error, refused connection or timeout becomes
:class:`~mcpkit.errors.StoreUnavailable`, naming the URL with its password
hidden, within the bounded ``connect_timeout`` / ``timeout`` (no retry loop,
no backoff). A pooled connection that broke while Redis was away is retried
once at once on a fresh connection, so the store recovers by itself on the
first operation after Redis returns.

Cluster: the keys of one operation are not hash-tagged (``delete_streams``
deletes several in one ``DEL``), so this is for a single Redis server (a
Sentinel-managed primary can be given as a client of your own), not Redis Cluster.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Final, NoReturn
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from ..errors import ConfigurationError, StoreUnavailable
from .events import EventCallback
from .sessions import SessionRecord

__all__ = [
    "DEFAULT_EVENT_MAX_LEN",
    "DEFAULT_EVENT_TTL",
    "RedisEventStore",
    "RedisInputRoundStore",
    "RedisSessionStore",
    "RedisStore",
    "redact_url",
]

#: Seconds a stream's events stay resumable after the stream's last refresh.
DEFAULT_EVENT_TTL: Final = 3600.0
#: Events kept per stream (about: Redis trims whole stream nodes, ``MAXLEN ~``).
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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _ms(seconds: float) -> int:
    """A ttl in whole milliseconds, at least 1 (Redis refuses 0)."""
    return max(1, int(seconds * 1000))


class _Redis:
    """The client and how to name it in errors, shared by the three stores."""

    __slots__ = ("client", "where")

    def __init__(self, client: Redis, where: str) -> None:
        self.client = client
        self.where = where

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


class RedisEventStore:
    """An :class:`~mcpkit.stores.EventStore` on Redis Streams: one stream key per SSE stream.

    Event ids are ``"<stream id>#<Redis entry id>"``, so a replay is an
    ``XRANGE`` from just after that entry: every later event once, in order.
    A *priming* event at the start of a stream costs no command: its id is the
    position before any entry (``"<stream id>#0-<n>"``). Each stream keeps
    about ``max_len`` entries (``XADD MAXLEN ~``) and expires ``ttl`` seconds
    after its last refresh; :meth:`delete_streams` drops a session's streams
    when it ends.

    Costs, each one round trip: ``store_event`` XADD NOMKSTREAM (1 command);
    XADD + PEXPIRE (2) for the first event of a stream this process writes,
    and again every ``ttl / 4`` or when the stream was gone; ``replay_events_after``
    XRANGE + EXISTS (2); ``delete_streams`` DEL (1).

    When a stream's ttl was last set is remembered per process (the ``max_tracked``
    most recently written streams); an event of a stream not remembered sets the ttl
    again, so nothing is ever stored without one.
    """

    __slots__ = ("_priming", "_redis", "_refresh_at", "max_len", "max_tracked", "prefix", "ttl")

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
        self.ttl = ttl
        self.max_len = max_len
        self.max_tracked = max_tracked
        # stream id -> when (monotonic) its key's ttl should be set again
        self._refresh_at: OrderedDict[str, float] = OrderedDict()
        self._priming = itertools.count(1)

    async def store_event(self, stream_id: str, message: dict[str, Any] | None) -> str:
        refresh_at = self._refresh_at.get(stream_id)
        if message is None:
            if refresh_at is None:
                # Nothing of this stream written yet: its start is a position already.
                return f"{stream_id}#0-{next(self._priming)}"
            data = b""  # mid-stream: a real entry marks the position (never replayed)
        else:
            data = orjson.dumps(message)
        key = self.prefix + stream_id
        client = self._redis.client
        now = time.monotonic()
        try:
            if refresh_at is not None and refresh_at > now:
                # The key has a ttl we set less than ttl/4 ago; NOMKSTREAM: if it is gone
                # (deleted, expired, Redis restarted) never create it without one.
                entry = await client.xadd(
                    key, {b"m": data}, maxlen=self.max_len, approximate=True, nomkstream=True
                )
                if entry is not None:
                    self._refresh_at.move_to_end(stream_id)
                    return f"{stream_id}#{_text(entry)}"
            pipe = client.pipeline(transaction=False)
            pipe.xadd(key, {b"m": data}, maxlen=self.max_len, approximate=True)
            pipe.pexpire(key, _ms(self.ttl))
            entry, _ = await pipe.execute()
        except _FAILURES as exc:
            self._redis.fail(exc)
        tracked = self._refresh_at
        tracked[stream_id] = now + self.ttl / 4
        tracked.move_to_end(stream_id)
        while len(tracked) > self.max_tracked:
            tracked.popitem(last=False)
        return f"{stream_id}#{_text(entry)}"

    async def replay_events_after(self, last_event_id: str, send: EventCallback) -> str | None:
        stream_id, sep, tail = last_event_id.rpartition("#")
        position = _position(tail) if sep and stream_id else None
        if position is None:
            return None
        key = self.prefix + stream_id
        try:
            pipe = self._redis.client.pipeline(transaction=False)
            pipe.xrange(key, "(" + position, "+")
            pipe.exists(key)
            entries, exists = await pipe.execute()
        except _FAILURES as exc:
            self._redis.fail(exc)
        if not exists and not position.startswith("0-"):
            return None  # deleted, expired or never written: unknown
        # A priming id ("0-n") names a stream whose events may not have been written yet.
        for entry_id, fields in entries:
            data = fields.get(b"m")
            if data:
                await send(f"{stream_id}#{entry_id.decode()}", orjson.loads(data))
        return stream_id

    async def delete_streams(self, stream_ids: Iterable[str]) -> None:
        ids = list(stream_ids)
        for stream_id in ids:
            self._refresh_at.pop(stream_id, None)
        if not ids:
            return
        try:
            await self._redis.client.delete(*(self.prefix + s for s in ids))
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
        How long a resumable stream's events are kept after its last event
        (seconds, default 3600) and about how many per stream (default 1000).
    ``connect_timeout``, ``timeout``
        Seconds to open a connection and to wait for an answer (default 2
        each): the bound on how long an operation may take while Redis is
        unreachable before it raises :class:`~mcpkit.errors.StoreUnavailable`.
    ``max_connections``
        Size of the pool (default 64); an operation waits at most
        ``connect_timeout`` for a free connection.

    Session records expire after the ``ttl`` the transport gives on each
    write (its ``session_idle_timeout`` plus a margin); input-round claims
    with their ``requestState``.
    """

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
    ) -> None:
        if not isinstance(prefix, str):
            raise ConfigurationError(f"RedisStore: prefix must be a string, not {prefix!r}")
        for name, value in (
            ("event_ttl", event_ttl),
            ("connect_timeout", connect_timeout),
            ("timeout", timeout),
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
            kwargs = client.connection_pool.connection_kwargs
            where = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
            self.url = f"redis://{where}/{kwargs.get('db', 0)}"
            self._owned = False
        self.client = client
        self.prefix = prefix
        redis = _Redis(client, self.url)
        self.sessions = RedisSessionStore(redis, prefix)
        self.events = RedisEventStore(redis, prefix, ttl=event_ttl, max_len=event_max_len)
        self.input_rounds = RedisInputRoundStore(redis, prefix)
        self._redis = redis

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r})"

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
        """Close the connection pool (only when this store made it from a URL)."""
        if self._owned:
            await self.client.aclose()
            await self.client.connection_pool.disconnect()
