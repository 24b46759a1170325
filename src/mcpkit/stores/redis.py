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
``<prefix>state:<scope>:<name>``   string      the value's ttl (``ctx.state``,
                                               :mod:`mcpkit.server.state`)
``<prefix>node:<node id>``         string      ``node_ttl`` after the node's last heartbeat
                                               (:mod:`mcpkit.stores.redis_bus`)
``<prefix>vis:<principal>``        string      never: a principal's visibility rules
``<prefix>rsk``                    string      never: the cluster's ``requestState`` key
                                               (:meth:`RedisStore.request_state_key`)
=================================  ==========  ===========================================

and the cluster bus's pub/sub channels ``<prefix>n:<node id>``, ``<prefix>bc``
and ``<prefix>c:<session id>`` (:mod:`mcpkit.stores.redis_bus`).

Modules: this one (sessions, input rounds, the bundle), :mod:`.redis_events`
(the event store), :mod:`.redis_bus` (the cluster bus), :mod:`.redis_connection`
(the client they share); only these import ``redis``. The hot path's command,
the ``XADD`` of an event, goes through :mod:`.redis_lane` instead: one
auto-pipelined connection of the store's own, opened with the same URL (redis-py
costs the server several times the CPU per command; scale-out.md § 11.4).

Faults: every Redis error, refused connection or timeout becomes
:class:`~mcpkit.errors.StoreUnavailable`, naming the URL with its password
hidden, within the bounded ``connect_timeout`` / ``timeout`` (no retry loop,
no backoff; the lane's connection alike: when it drops, its pending commands
fail and the next one reconnects). A pooled connection that broke while Redis was away is retried
once at once on a fresh connection, so the store recovers by itself on the
first operation after Redis returns.

For a single Redis server (a Sentinel-managed primary can be given as a client
of your own); Redis Cluster is not supported (no cluster client, no hash tags).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from typing import Any, Final

import orjson

from .._extras import require_extra

with require_extra("redis", feature="the Redis store (mcpkit.stores.redis)"):
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

from ..errors import ConfigurationError, StoreUnavailable
from .redis_bus import RedisBus
from .redis_connection import FAILURES, RedisConnection, ms, redact_url, where_of, wrong_type
from .redis_events import DEFAULT_EVENT_MAX_LEN, DEFAULT_EVENT_TTL, RedisEventStore, TailRead
from .sessions import SessionRecord

__all__ = [
    "DEFAULT_EVENT_MAX_LEN",
    "DEFAULT_EVENT_TTL",
    "RedisEventStore",
    "RedisInputRoundStore",
    "RedisSessionStore",
    "RedisStateStore",
    "RedisStore",
    "TailRead",
    "redact_url",
]

logger = logging.getLogger("mcpkit.stores.redis")

# -- sessions ----------------------------------------------------------------------------------

#: Session ids whose unreadable record was reported (one warning each).
_WARNED_MAX: Final = 1024

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
    """The record of a stored value; ``ValueError`` when it cannot be read."""
    data = orjson.loads(value[_SEEN_WIDTH:])  # orjson.JSONDecodeError is a ValueError
    if isinstance(data, dict):
        data["last_seen"] = float(value[:_SEEN_WIDTH])
    return SessionRecord.from_json(data)


class RedisSessionStore:
    """A :class:`~mcpkit.stores.SessionStore` on Redis: one string key per session.

    Costs, each one round trip: ``create`` SET NX PX; ``load`` GET; ``save``
    SET XX PX; ``touch`` EVALSHA of a script running PEXPIRE and SETRANGE (three
    commands as Redis counts them); ``delete`` DEL; ``swap_holder`` GET and SET PX
    (MULTI).

    A record that cannot be read (not JSON, cut short, fields of the wrong type, a key
    of another Redis type) is a session that is gone: ``load`` returns None, and
    logs one warning per session id (the last 1024 remembered), not one per request.
    The key is left as it is (a record written by a newer version of mcpkit might
    look corrupt to an older node during a rolling upgrade); it expires by itself.
    """

    __slots__ = ("_holder", "_redis", "_touch", "_warned", "prefix")

    def __init__(self, redis: RedisConnection, prefix: str) -> None:
        self._redis = redis
        self.prefix = prefix + "session:"
        self._holder = prefix + "gh:"
        self._touch = redis.client.register_script(_TOUCH_LUA)
        self._warned: OrderedDict[str, None] = OrderedDict()

    def _unreadable(self, session_id: str, why: str) -> None:
        if session_id in self._warned:
            self._warned.move_to_end(session_id)
            return
        self._warned[session_id] = None
        while len(self._warned) > _WARNED_MAX:
            self._warned.popitem(last=False)
        logger.warning(
            "session %s: its record %s%s in Redis at %s cannot be read (%s); "
            "answering as for a session that ended",
            session_id,
            self.prefix,
            session_id,
            self._redis.where,
            why,
        )

    async def create(self, record: SessionRecord, ttl: float) -> bool:
        try:
            done = await self._redis.client.set(
                self.prefix + record.session_id, _dump_record(record), nx=True, px=ms(ttl)
            )
        except FAILURES as exc:
            self._redis.fail(exc)
        return bool(done)

    async def load(self, session_id: str) -> SessionRecord | None:
        try:
            value = await self._redis.client.get(self.prefix + session_id)
        except FAILURES as exc:
            if wrong_type(exc):
                self._unreadable(session_id, "the key is not a string")
                return None
            self._redis.fail(exc)
        if value is None:
            return None
        try:
            record = _load_record(value if isinstance(value, bytes) else value.encode())
        except ValueError as exc:
            self._unreadable(session_id, str(exc))
            return None
        if record.session_id != session_id:
            self._unreadable(session_id, f"it names session {record.session_id!r}")
            return None
        return record

    async def save(self, record: SessionRecord, ttl: float) -> bool:
        try:
            done = await self._redis.client.set(
                self.prefix + record.session_id, _dump_record(record), xx=True, px=ms(ttl)
            )
        except FAILURES as exc:
            self._redis.fail(exc)
        return bool(done)

    async def touch(self, session_id: str, ttl: float) -> bool:
        try:
            done = await self._touch(
                keys=[self.prefix + session_id], args=[ms(ttl), _seen(time.time())]
            )
        except FAILURES as exc:
            if wrong_type(exc):  # as load: unreadable is gone (the caller drops its copy)
                self._unreadable(session_id, "the key is not a string")
                return False
            self._redis.fail(exc)
        return bool(done)

    async def delete(self, session_id: str) -> bool:
        try:
            gone = await self._redis.client.delete(self.prefix + session_id)
        except FAILURES as exc:
            self._redis.fail(exc)
        return bool(gone)

    async def swap_holder(self, session_id: str, node_id: str, ttl: float) -> str | None:
        """Record that node ``node_id`` holds the session's GET stream now (for ``ttl``
        seconds, the session record's: the key then expires by itself, also after the
        session ended); the node that held it before, if any (scale-out.md § 6.3, ``gh``)."""
        try:
            pipe = self._redis.client.pipeline(transaction=True)
            pipe.get(self._holder + session_id)
            pipe.set(self._holder + session_id, node_id, px=ms(ttl))
            previous, done = await pipe.execute(raise_on_error=False)
        except FAILURES as exc:
            self._redis.fail(exc)
        if isinstance(done, BaseException):
            self._redis.fail(done)
        # A key of another type (GET refused; SET replaced it anyway): no holder known.
        if isinstance(previous, bytes):
            return previous.decode()
        return previous if isinstance(previous, str) else None


# -- input rounds ------------------------------------------------------------------------------


class RedisInputRoundStore:
    """An :class:`~mcpkit.stores.InputRoundStore` on Redis: SET NX PXAT, one command.

    The claim expires with the ``requestState`` it records (Redis's clock: keep
    the servers' clocks in step, as the state's own expiry already asks).

    No bound per principal (unlike :class:`~mcpkit.stores.MemoryInputRoundStore`):
    nothing here drops a claim before it expires, so one client's flood can neither
    evict another's claims nor fill a shared table that locks others out; and a
    claim exists only for a genuine state this server issued after serving a round,
    so a client's claims are bounded by the rounds it was served in one state
    lifetime, which the operator's request limits already bound. Memory is the
    Redis server's (``maxmemory``; a ``volatile-*`` eviction policy would drop
    claims early: use ``noeviction`` for the keys under this prefix).
    """

    __slots__ = ("_redis", "prefix")

    def __init__(self, redis: RedisConnection, prefix: str) -> None:
        self._redis = redis
        self.prefix = prefix + "round:"

    async def claim(self, token_id: str, expires_at: float) -> bool:
        try:
            done = await self._redis.client.set(
                self.prefix + token_id, b"1", nx=True, pxat=max(1, int(expires_at * 1000) + 1)
            )
        except FAILURES as exc:
            self._redis.fail(exc)
        return bool(done)

    async def release(self, token_id: str) -> None:
        """Forget the claim of ``token_id`` (a round the server's shutdown stopped)."""
        try:
            await self._redis.client.delete(self.prefix + token_id)
        except FAILURES as exc:
            self._redis.fail(exc)


# -- ctx.state ---------------------------------------------------------------------------------


class RedisStateStore:
    """A :class:`~mcpkit.stores.StateStore` on Redis: one string key per value.

    Costs, each one round trip of one command: ``get`` GET; ``set`` SET (with PX when
    the value has a ttl); ``delete`` DEL.
    """

    __slots__ = ("_redis", "prefix")

    def __init__(self, redis: RedisConnection, prefix: str) -> None:
        self._redis = redis
        self.prefix = prefix + "state:"

    async def get(self, key: str) -> bytes | None:
        try:
            value = await self._redis.client.get(self.prefix + key)
        except FAILURES as exc:
            if wrong_type(exc):  # not a value mcpkit wrote: as if unset
                return None
            self._redis.fail(exc)
        return value.encode() if isinstance(value, str) else value

    async def set(self, key: str, value: bytes, ttl: float | None) -> None:
        try:
            await self._redis.client.set(
                self.prefix + key, value, px=None if ttl is None else ms(ttl)
            )
        except FAILURES as exc:
            self._redis.fail(exc)

    async def delete(self, key: str) -> bool:
        try:
            gone = await self._redis.client.delete(self.prefix + key)
        except FAILURES as exc:
            self._redis.fail(exc)
        return bool(gone)


# -- visibility --------------------------------------------------------------------------------


class RedisVisibilityStore:
    """A :class:`~mcpkit.stores.visibility.VisibilityStore` on Redis: one JSON string per
    principal, ``<prefix>vis:<principal>``, kept until the principal's rules are reset."""

    __slots__ = ("_redis", "prefix")

    def __init__(self, redis: RedisConnection, prefix: str) -> None:
        self._redis = redis
        self.prefix = prefix + "vis:"

    async def get(self, principal: str) -> dict[str, Any] | None:
        try:
            value = await self._redis.client.get(self.prefix + principal)
        except FAILURES as exc:
            self._redis.fail(exc)
        if value is None:
            return None
        try:
            rules = orjson.loads(value)
        except orjson.JSONDecodeError:
            logger.warning("unreadable visibility rules at %s%s; ignored", self.prefix, principal)
            return None
        return rules if isinstance(rules, dict) else None

    async def put(self, principal: str, rules: dict[str, Any] | None) -> None:
        try:
            if rules is None:
                await self._redis.client.delete(self.prefix + principal)
            else:
                await self._redis.client.set(self.prefix + principal, orjson.dumps(rules))
        except FAILURES as exc:
            self._redis.fail(exc)


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

    :attr:`state` holds ``ctx.state`` (:class:`RedisStateStore`). Session records
    expire after the ``ttl`` the transport gives on each
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
        redis = RedisConnection(client, self.url, timeout, connect_timeout)
        self.sessions = RedisSessionStore(redis, prefix)
        self.events = RedisEventStore(redis, prefix, ttl=event_ttl, max_len=event_max_len)
        self.input_rounds = RedisInputRoundStore(redis, prefix)
        self.state = RedisStateStore(redis, prefix)
        #: Per-principal visibility rules (2026-07-28 ``ctx.enable_components``).
        self.visibility = RedisVisibilityStore(redis, prefix)
        self._redis = redis

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r})"

    @property
    def bus(self) -> RedisBus:
        """The cluster bus over this Redis (same prefix and server, its own pub/sub
        connection), made on first use and closed by :meth:`aclose`; not started."""
        if self._bus is None:
            self._bus = RedisBus(
                self.client,
                prefix=self.prefix,
                node_ttl=self.node_ttl,
                connect_timeout=self.connect_timeout,
                timeout=self.timeout,
                where=self.url,
            )
        return self._bus

    async def request_state_key(self, candidate: bytes | None = None) -> bytes:
        """The cluster's HMAC key for 2026-07-28 ``requestState`` (scale-out.md § 8):
        ``<prefix>rsk``, 32 bytes set by the first node to ask and kept for good
        (``SET NX`` then ``GET``, one pipelined round trip). ``candidate``: the key
        to set if none is (a node that already signs with one offers it again after
        Redis lost its data, so that the running nodes keep theirs); else random."""
        key = self.prefix + "rsk"
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.set(key, candidate or secrets.token_bytes(32), nx=True)
            pipe.get(key)
            _, value = await pipe.execute(raise_on_error=False)
        except FAILURES as exc:
            self._redis.fail(exc)
        if isinstance(value, BaseException) and not wrong_type(value):
            self._redis.fail(value)
        # Unreadable (another type, another length): no node may pick a key of its own
        # instead (the others would not open what it signs): the operator must fix it.
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
        except FAILURES as exc:
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
