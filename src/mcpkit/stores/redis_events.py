"""The event store on Redis Streams: :class:`RedisEventStore` (``RedisStore(...).events``).

See :mod:`mcpkit.stores.redis` for the key layout and the faults; this module
imports no ``redis`` itself: it works through the store's
:class:`~mcpkit.stores.redis_connection.RedisConnection`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Final, NamedTuple

import orjson

from .events import EventCallback
from .redis_connection import FAILURES, RedisConnection, ms, text, wrong_type

__all__ = ["DEFAULT_EVENT_MAX_LEN", "DEFAULT_EVENT_TTL", "RedisEventStore", "TailRead"]

logger = logging.getLogger("mcpkit.stores.redis_events")

#: Seconds a session's events stay resumable after its log's last refresh.
DEFAULT_EVENT_TTL: Final = 3600.0
#: Events kept per session log (about: Redis trims whole stream nodes, ``MAXLEN ~``).
DEFAULT_EVENT_MAX_LEN: Final = 1000

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


def _parse(data: bytes) -> dict[str, Any] | None:
    """An entry's message, None when it is not a JSON object (corrupted in Redis)."""
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return message if isinstance(message, dict) else None


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
    pipeline, after a SCRIPT EXISTS (two round trips). ``store_event``'s
    commands go through the store's lane (:mod:`.redis_lane`: one connection,
    written once per loop turn for every event of that turn), the rest through
    redis-py.

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
        "_warned",
        "_written",
        "max_len",
        "max_tracked",
        "prefix",
        "ttl",
    )

    def __init__(
        self,
        redis: RedisConnection,
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
        self._warned: OrderedDict[str, None] = OrderedDict()  # logs reported unreadable
        self._forget = redis.client.register_script(_FORGET_LUA)
        self._emit0 = redis.client.register_script(_EMIT0_LUA)

    def _message(self, key: str, entry_id: str, data: bytes) -> dict[str, Any] | None:
        """An entry's message; an unreadable one (corrupted in Redis) is passed over, with
        one warning per log (for the ``max_tracked`` most recent): a replay or a follow
        goes on with the events that can be read rather than failing the stream."""
        message = _parse(data)
        if message is None:
            self._unreadable(key, f"entry {entry_id} is not a JSON object")
        return message

    def _unreadable(self, key: str, why: str) -> None:
        if key not in self._warned:
            logger.warning(
                "passing over unreadable events of %s in Redis at %s (%s)",
                key,
                self._redis.where,
                why,
            )
        self._warned[key] = None
        _remember(self._warned, key, self.max_tracked)

    async def store_event(self, stream_id: str, message: dict[str, Any] | None) -> str:
        if message is None:
            if stream_id not in self._written:
                # Nothing of this stream written yet: its start is a position already.
                return f"{stream_id}#0-{next(self._priming)}"
            return await self.store_event_bytes(stream_id, b"")  # mid-stream: a real entry
        return await self.store_event_bytes(stream_id, orjson.dumps(message))

    async def store_event_bytes(self, stream_id: str, data: bytes) -> str:
        """:meth:`store_event` of a message the caller serialised already (its orjson,
        as :meth:`replay_events_after` hands it back parsed): the transport writes the
        same bytes to the wire, so a message is serialised once. ``b""``: a position
        that is never replayed (a priming event mid-stream)."""
        log, _, suffix = stream_id.rpartition("/")
        key = self.prefix + log
        now = time.monotonic()
        refresh_at = self._refresh_at.get(log)
        fresh = refresh_at is not None and refresh_at > now
        lane = self._redis.lane
        if lane is not None:
            # The hot path: its own pipelined connection (design scale-out.md § 11.4).
            s = suffix.encode()
            entry = None
            if fresh:
                # The key has a ttl we set less than ttl/4 ago; NOMKSTREAM: if it is gone
                # (deleted, expired, Redis restarted) never create it without one.
                entry = await lane.call(
                    b"XADD",
                    key,
                    b"NOMKSTREAM",
                    b"MAXLEN",
                    b"~",
                    self.max_len,
                    b"*",
                    b"s",
                    s,
                    b"m",
                    data,
                )
            if entry is None:
                entry, _ = await lane.call_many(
                    (b"XADD", key, b"MAXLEN", b"~", self.max_len, b"*", b"s", s, b"m", data),
                    (b"PEXPIRE", key, ms(self.ttl)),
                )
                self._refresh_at[log] = now + self.ttl / 4
        else:
            entry, refreshed = await self._xadd_redis_py(key, suffix, data, fresh)
            if refreshed:
                self._refresh_at[log] = now + self.ttl / 4
        _remember(self._refresh_at, log, self.max_tracked)
        self._written[stream_id] = None
        _remember(self._written, stream_id, self.max_tracked)
        return f"{stream_id}#{text(entry)}"

    async def _xadd_redis_py(
        self, key: str, suffix: str, data: bytes, fresh: bool
    ) -> tuple[Any, bool]:
        """The XADD of :meth:`store_event_bytes` through redis-py (a client the lane
        cannot open): NOMKSTREAM while ``fresh``, else (or when the key was gone)
        XADD + PEXPIRE in one pipeline. Returns the entry id and whether the ttl was set."""
        fields: dict[Any, Any] = {b"s": suffix.encode(), b"m": data}
        client = self._redis.client
        try:
            entry = None
            if fresh:
                entry = await client.xadd(
                    key, fields, maxlen=self.max_len, approximate=True, nomkstream=True
                )
            if entry is None:
                pipe = client.pipeline(transaction=False)
                pipe.xadd(key, fields, maxlen=self.max_len, approximate=True)
                pipe.pexpire(key, ms(self.ttl))
                entry, _ = await pipe.execute()
                return entry, True
        except FAILURES as exc:
            self._redis.fail(exc)
        return entry, False

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
        except FAILURES as exc:
            if wrong_type(exc):  # not a log we wrote: nothing of it can be replayed
                self._unreadable(self.prefix + log, "the key is not a stream")
                return None
            self._redis.fail(exc)
        mine = [(text(i), f) for i, f in entries if f.get(b"s") == wanted]
        if not mine and not position.startswith("0-"):
            return None  # deleted, expired, trimmed away or never written: unknown
        # A priming id ("0-n") names a stream whose events may not have been written yet.
        for entry_id, fields in mine:
            data = fields.get(b"m")
            if data and entry_id != position:
                message = self._message(self.prefix + log, entry_id, data)
                if message is not None:
                    await send(f"{stream_id}#{entry_id}", message)
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
                    ms(self.ttl),
                    self._channels + session_id,
                    head,
                    b'","m":' + data + b"}",
                ],
            )
        except FAILURES as exc:
            self._redis.fail(exc)
        self._written[stream_id] = None
        _remember(self._written, stream_id, self.max_tracked)
        return f"{stream_id}#{text(entry)}", int(receivers)

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
            except (*FAILURES, TimeoutError) as exc:
                self._redis.fail(exc)
            entries = _entries(reply)
            for entry_id, fields in entries:
                position = text(entry_id)
                data = fields.get(b"m")
                if data and fields.get(b"s") == wanted:
                    message = self._message(key, position, data)
                    if message is not None:
                        events.append((f"{stream_id}#{position}", message))
            if events or not entries:
                return TailRead(events, f"{stream_id}#{position}")

    async def delete_log(self, session_id: str) -> None:
        """Delete a session's whole log, every node's streams of it (DEL, 1 command): a
        cluster ends a session this way, since no node knows all of its streams."""
        try:
            await self._redis.client.delete(self.prefix + session_id)
        except FAILURES as exc:
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
        except FAILURES as exc:
            self._redis.fail(exc)
