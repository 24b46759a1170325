"""Task records on Redis: :class:`RedisTaskStore`, shared by every node of a cluster.

``pip install 'mcpkit[redis]'``. With the server's :class:`~mcpkit.stores.redis.RedisStore`::

    tasks = RedisTaskStore.from_store(store)  # same client, prefix and server name

or with a ``redis.asyncio.Redis`` client of your own: ``RedisTaskStore(client,
prefix="mcpkit:")``. The task store never owns the client: whoever made it closes it.
It is a constructor of its own, not a method of ``RedisStore``, because the core's
stores never name an extension (docs/architecture.md, "Where new capabilities go");
``from_store`` reads only ``RedisStore``'s public ``client``, ``prefix`` and ``url``.

Key layout, under ``prefix``:

===================================  ======  ===============================================
key                                  type    expires
===================================  ======  ===============================================
``<prefix>task:<task id>``           string  at ``createdAt + ttlMs`` (``SET PXAT``); never
                                             for ``ttlMs: null``. The record's JSON
                                             (:meth:`~.records.TaskRecord.to_json`)
``<prefix>task-owner:<owner>``       zset    with its longest-lived task; members are task
                                             ids scored by creation millisecond, pruned of
                                             expired ones when the owner creates or lists
``<prefix>task-node:<node id>``      set     never; the node's unfinished tasks (made its
                                             at creation or by ``claim``), emptied
                                             as they finish, of expired ones by the
                                             node's :meth:`heartbeat`, and by
                                             :meth:`sweep` once the node is dead
``<prefix>task-nodes``               set     never; the nodes that have such a set
``<prefix>task-alive:<node id>``     string  the ``ttl`` of the node's last heartbeat
``<prefix>task-answers:<task id>``   hash    with the record; deleted by the task's next
                                             move to ``working`` or a final status. The
                                             ``tasks/update`` input responses sent while
                                             it is ``input_required``: key -> JSON
===================================  ======  ===============================================

Events (:meth:`RedisTaskStore.watch`) travel on Redis pub/sub, through a
:class:`~mcpkit.stores.redis_bus.RedisBus` of the store's own (prefix
``<prefix>tasks:``, so its node key and channels never mix with the cluster bus's),
started on the first watch: the transition script itself publishes the new record on
``<prefix>tasks:t:<task id>`` (one round trip, and every writer publishes: a node, a
sweep, a queue worker), and :meth:`~RedisTaskStore.answer` publishes input responses
there. A node subscribes a task's channel while something of it watches the task.

Pub/sub drops what is sent while a subscription reconnects, so ``answer`` also keeps
the responses in the task's answers hash (same script), and a watching node reads back
each watched task's hash and record (pipelined) once its subscription is back and every
``recheck_s`` seconds (default 2): watchers hear the answers and the final record they
missed (docs/design/tasks.md §3.1; input keys are never reused, :mod:`.inputs`).

Atomicity: ``create`` is one Lua script (exists check, owner cap, record, indexes).
``transition`` reads the record (GET), checks the move against the lifecycle table in
Python (:meth:`~.records.TaskRecord.moved`, the one copy of the rules) and writes it
with a compare-and-set script that applies only if the stored value is still the one
read; when another writer won in between, it reads again and checks again, so the
loser of a race out of ``working`` sees the winner's terminal status and gets
:class:`~.states.IllegalTransition`. Every Redis failure is
:class:`~mcpkit.errors.StoreUnavailable` naming the server (password hidden).

For one Redis server, as ``RedisStore`` (the scripts touch keys they are not given:
no Redis Cluster).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Mapping
from dataclasses import replace
from types import EllipsisType
from typing import Any, Final, NoReturn

import orjson

from ..._extras import require_extra

with require_extra("redis", feature="the Redis task store (mcpkit.extensions.tasks.redis)"):
    from redis.asyncio import Redis

from ...errors import ConfigurationError, StoreUnavailable
from ...loops import cancel_and_wait
from ...stores.redis import RedisStore
from ...stores.redis_bus import RedisBus
from ...stores.redis_connection import FAILURES, ms, where_of
from .records import TaskRecord
from .states import IllegalTransition, TaskStatus
from .store import (
    DEFAULT_MAX_PER_OWNER,
    NODE_LOST,
    TaskEvent,
    TaskExists,
    TaskLimitExceeded,
    Unwatch,
    Watcher,
    Watchers,
    check_caps,
    decode_cursor,
    encode_cursor,
)

__all__ = ["DEFAULT_RECHECK_S", "RedisTaskStore"]

logger = logging.getLogger("mcpkit.extensions.tasks.redis")

#: Seconds between two read-backs of the watched tasks (the fallback when a pub/sub
#: message was missed and no reconnection was seen).
DEFAULT_RECHECK_S: Final = 2.0

# KEYS: record, owner zset ("" for none), node set ("" for none), nodes set.
# ARGV: record JSON, expiry (Unix ms, 0: never), creation ms, task id, owner cap,
#       node id, the record key prefix (to prune the owner's expired members).
_CREATE_LUA: Final = """
if redis.call('exists', KEYS[1]) == 1 then return -1 end
local expires = tonumber(ARGV[2])
if KEYS[2] ~= '' then
  local had = redis.call('exists', KEYS[2])
  for _, id in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
    if redis.call('exists', ARGV[7] .. id) == 0 then redis.call('zrem', KEYS[2], id) end
  end
  if redis.call('zcard', KEYS[2]) >= tonumber(ARGV[5]) then return -2 end
  redis.call('zadd', KEYS[2], ARGV[3], ARGV[4])
  if expires == 0 then
    redis.call('persist', KEYS[2])
  elseif had == 0 or redis.call('pttl', KEYS[2]) >= 0 then
    redis.call('pexpireat', KEYS[2], expires, 'GT')
    if redis.call('pttl', KEYS[2]) == -1 then redis.call('pexpireat', KEYS[2], expires) end
  end
end
if expires == 0 then
  redis.call('set', KEYS[1], ARGV[1])
else
  redis.call('set', KEYS[1], ARGV[1], 'PXAT', expires)
end
if KEYS[3] ~= '' then
  redis.call('sadd', KEYS[3], ARGV[4])
  redis.call('sadd', KEYS[4], ARGV[6])
end
return 1
"""

# KEYS: record, node set ("" for none), answers hash. ARGV: the value read, the new
# value, task id, "1" when the new status is terminal, the task's event channel, "1"
# when no input is outstanding any more (working or final). Writes only if nobody wrote
# in between, and then publishes the new record to the task's watchers.
_SWAP_LUA: Final = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[2], 'KEEPTTL')
if ARGV[4] == '1' and KEYS[2] ~= '' then redis.call('srem', KEYS[2], ARGV[3]) end
if ARGV[6] == '1' then redis.call('del', KEYS[3]) end
redis.call('publish', ARGV[5], '{"record":' .. ARGV[2] .. '}')
return 1
"""


# KEYS: record, answers hash. ARGV: the task's event channel, the message, then key,
# value pairs. Keeps the answers while the task waits for input (so they live no longer
# than the record, and the next move to working or a final status drops them), then
# publishes them; the number of receivers.
_ANSWER_LUA: Final = """
local value = redis.call('get', KEYS[1])
if value and #ARGV > 2 and cjson.decode(value)['status'] == 'input_required' then
  redis.call('hset', KEYS[2], unpack(ARGV, 3))
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
end
return redis.call('publish', ARGV[1], ARGV[2])
"""

# KEYS: record, the old node's set ("" for none), the new node's set, nodes set.
# ARGV: the value read, the new value, task id, new node id. Moves the task between
# the nodes' sets if nobody wrote the record in between.
_CLAIM_LUA: Final = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[2], 'KEEPTTL')
if KEYS[2] ~= '' then redis.call('srem', KEYS[2], ARGV[3]) end
redis.call('sadd', KEYS[3], ARGV[3])
redis.call('sadd', KEYS[4], ARGV[4])
return 1
"""


# KEYS: the node's alive key, its task set. ARGV: ttl ms, the record key prefix.
# Also forgets the node's tasks that expired while it ran them (their moves found
# nothing to move), so a long-lived node's set holds only live tasks.
_BEAT_LUA: Final = """
redis.call('set', KEYS[1], '1', 'PX', ARGV[1])
for _, id in ipairs(redis.call('smembers', KEYS[2])) do
  if redis.call('exists', ARGV[2] .. id) == 0 then redis.call('srem', KEYS[2], id) end
end
return 1
"""


def _dump(record: TaskRecord) -> bytes:
    return orjson.dumps(record.to_json())


class RedisTaskStore:
    """A :class:`~.store.TaskStore` on Redis (the key layout is in the module doc).

    Costs: ``create`` one script; ``get`` one GET; ``transition`` a GET and a script
    (again per lost race); ``list_by_owner`` ZRANGE then MGET; ``heartbeat`` one
    script (SET PX, and an EXISTS per task the node runs); ``sweep`` SMEMBERS, EXISTS
    per node (pipelined), then a transition per task of a dead node; ``answer`` one
    script; while watching, a GET and HGETALL per task (pipelined) every ``recheck_s``.
    ``max_per_owner`` (default 100) bounds each owner's live tasks; Redis's own memory
    bounds the rest.
    """

    #: Every process given the same Redis and prefix sees the same tasks.
    shared: Final = True

    def __init__(
        self,
        client: Redis,
        *,
        prefix: str = "mcpkit:",
        max_per_owner: int = DEFAULT_MAX_PER_OWNER,
        where: str | None = None,
        recheck_s: float = DEFAULT_RECHECK_S,
    ) -> None:
        check_caps(max_per_owner)
        if isinstance(recheck_s, bool) or not isinstance(recheck_s, int | float) or recheck_s <= 0:
            raise ConfigurationError(f"recheck_s must be a positive number, not {recheck_s!r}")
        self.recheck_s = float(recheck_s)
        self.client = client
        self.prefix = prefix
        self.max_per_owner = max_per_owner
        self.where = where_of(client) if where is None else where
        self._task = prefix + "task:"
        self._owner = prefix + "task-owner:"
        self._node = prefix + "task-node:"
        self._nodes = prefix + "task-nodes"
        self._alive = prefix + "task-alive:"
        self._answers = prefix + "task-answers:"
        self._create = client.register_script(_CREATE_LUA)
        self._swap = client.register_script(_SWAP_LUA)
        self._beat = client.register_script(_BEAT_LUA)
        self._claim = client.register_script(_CLAIM_LUA)
        self._answer = client.register_script(_ANSWER_LUA)
        self._events = prefix + "tasks:"
        self._watchers = Watchers()
        self._bus: RedisBus | None = None
        self._bus_lock = asyncio.Lock()
        # Per watched task, what its watchers heard: a read-back passes on only the rest.
        self._heard_answers: dict[str, dict[str, Any]] = {}
        self._heard_end: set[str] = set()
        self._rechecks: set[asyncio.Task[None]] = set()
        self._recheck_loop: asyncio.Task[None] | None = None

    @classmethod
    def from_store(
        cls, store: RedisStore, *, max_per_owner: int = DEFAULT_MAX_PER_OWNER
    ) -> RedisTaskStore:
        """The task store beside ``store``: its client, key prefix and server name."""
        return cls(store.client, prefix=store.prefix, max_per_owner=max_per_owner, where=store.url)

    def __repr__(self) -> str:
        return f"RedisTaskStore({self.where!r}, prefix={self.prefix!r})"

    def _fail(self, exc: BaseException) -> NoReturn:
        raise StoreUnavailable(
            f"Redis at {self.where} is unavailable: {type(exc).__name__}: {exc}"
        ) from exc

    def _load(self, task_id: str, value: object) -> TaskRecord | None:
        if not isinstance(value, bytes | str):
            return None
        try:
            record = TaskRecord.from_json(orjson.loads(value))
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            logger.warning("task %s: its record in Redis cannot be read (%s)", task_id, exc)
            return None
        return record if record.task_id == task_id else None

    async def create(self, record: TaskRecord) -> None:
        expires_at = record.expires_at
        keys = [
            self._task + record.task_id,
            self._owner + record.owner if record.owner is not None else "",
            self._node + record.node_id if record.node_id is not None else "",
            self._nodes,
        ]
        args: list[Any] = [
            _dump(record),
            0 if expires_at is None else max(1, int(expires_at * 1000)),
            int(record.created_at * 1000),
            record.task_id,
            self.max_per_owner,
            record.node_id or "",
            self._task,
        ]
        try:
            done = await self._create(keys=keys, args=args)
        except FAILURES as exc:
            self._fail(exc)
        if done == -1:
            raise TaskExists(f"task {record.task_id} exists")
        if done == -2:
            raise TaskLimitExceeded(
                f"owner {record.owner!r} already has {self.max_per_owner} live tasks"
            )

    async def get(self, task_id: str) -> TaskRecord | None:
        try:
            value = await self.client.get(self._task + task_id)
        except FAILURES as exc:
            self._fail(exc)
        return None if value is None else self._load(task_id, value)

    async def transition(
        self,
        task_id: str,
        target: TaskStatus,
        *,
        expected: TaskStatus | None = None,
        status_message: str | EllipsisType | None = ...,
        input_requests: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
    ) -> TaskRecord | None:
        key = self._task + task_id
        while True:
            try:
                value = await self.client.get(key)
            except FAILURES as exc:
                self._fail(exc)
            if not isinstance(value, bytes | str):
                return None
            record = self._load(task_id, value)
            if record is None:
                return None
            # The server's clock for lastUpdatedAt, as for createdAt (time.time()).
            moved = record.moved(
                target,
                now=time.time(),
                status_message=status_message,
                input_requests=input_requests,
                result=result,
                error=error,
                expected=expected,
            )
            node = self._node + record.node_id if record.node_id is not None else ""
            try:
                settled = moved.terminal or moved.status is TaskStatus.WORKING
                done = await self._swap(
                    keys=[key, node, self._answers + task_id],
                    args=[
                        value,
                        _dump(moved),
                        task_id,
                        "1" if moved.terminal else "0",
                        f"{self._events}t:{task_id}",
                        "1" if settled else "0",
                    ],
                )
            except FAILURES as exc:
                self._fail(exc)
            if done == 1:
                return moved
            # Another writer came first: read again, and let the table judge again.

    async def list_by_owner(
        self, owner: str, *, cursor: str | None = None, limit: int = 50
    ) -> tuple[list[TaskRecord], str | None]:
        if type(limit) is not int or limit < 1:
            raise ValueError(f"limit must be a positive integer, not {limit!r}")
        after = decode_cursor(cursor) if cursor is not None else None
        try:
            # The set is bounded by max_per_owner: read it whole, sort as the memory store.
            members: Any = await self.client.zrange(self._owner + owner, 0, -1, withscores=True)
            ids = sorted((int(score), _text(member)) for member, score in members)
            if after is not None:
                ids = [entry for entry in ids if entry > after]
            values = await self.client.mget([self._task + t for _, t in ids]) if ids else []
        except FAILURES as exc:
            self._fail(exc)
        records = [
            r
            for (_, t), v in zip(ids, values, strict=True)
            if v is not None and (r := self._load(t, v)) is not None
        ]
        page = records[:limit]
        return page, (encode_cursor(page[-1]) if len(records) > limit else None)

    async def heartbeat(self, node_id: str, ttl: float) -> None:
        try:
            await self._beat(
                keys=[self._alive + node_id, self._node + node_id], args=[ms(ttl), self._task]
            )
        except FAILURES as exc:
            self._fail(exc)

    async def sweep(self) -> list[TaskRecord]:
        try:
            nodes = [_text(n) for n in await self.client.smembers(self._nodes)]
            if not nodes:
                return []
            pipe = self.client.pipeline(transaction=False)
            for node_id in nodes:
                pipe.exists(self._alive + node_id)
            alive = await pipe.execute()
        except FAILURES as exc:
            self._fail(exc)
        failed: list[TaskRecord] = []
        for node_id, beating in zip(nodes, alive, strict=True):
            if beating:
                continue
            try:
                ids = [_text(t) for t in await self.client.smembers(self._node + node_id)]
            except FAILURES as exc:
                self._fail(exc)
            for task_id in ids:
                try:
                    moved = await self._fail_lost(task_id)
                except IllegalTransition:
                    moved = None  # finished meanwhile
                if moved is not None:
                    failed.append(moved)
            try:
                pipe = self.client.pipeline(transaction=False)
                if ids:
                    pipe.srem(self._node + node_id, *ids)
                pipe.srem(self._nodes, node_id)
                await pipe.execute()
            except FAILURES as exc:
                self._fail(exc)
        return failed

    async def _fail_lost(self, task_id: str) -> TaskRecord | None:
        record = await self.get(task_id)
        if record is None or record.terminal:
            return None
        # No expected status: a dead node moves none of its tasks, and a tasks/cancel
        # that came first made the task terminal (IllegalTransition, skipped).
        return await self.transition(
            task_id,
            TaskStatus.FAILED,
            status_message=str(NODE_LOST["message"]),
            error=NODE_LOST,
        )

    async def claim(self, task_id: str, node_id: str) -> TaskRecord | None:
        key = self._task + task_id
        while True:
            try:
                value = await self.client.get(key)
            except FAILURES as exc:
                self._fail(exc)
            if not isinstance(value, bytes | str):
                return None
            record = self._load(task_id, value)
            if record is None:
                return None
            if record.terminal:
                raise IllegalTransition(record.status, record.status, task_id=task_id)
            claimed = replace(record, node_id=node_id)
            old = self._node + record.node_id if record.node_id is not None else ""
            try:
                done = await self._claim(
                    keys=[key, old, self._node + node_id, self._nodes],
                    args=[value, _dump(claimed), task_id, node_id],
                )
            except FAILURES as exc:
                self._fail(exc)
            if done == 1:
                return claimed
            # Written meanwhile (a move, another claim): read again.

    # -- events ---------------------------------------------------------------------------------

    async def _started_bus(self) -> RedisBus:
        async with self._bus_lock:
            if self._bus is None:
                bus = RedisBus(self.client, prefix=self._events, where=self.where)
                await bus.start(self._heard)
                # Whatever was published while the subscription was down: read it back.
                bus.on_reconnect(lambda: self._spawn(self.recheck()))
                self._bus = bus
                self._recheck_loop = asyncio.create_task(
                    self._recheck_every(), name=f"{self!r} recheck"
                )
            return self._bus

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._rechecks.add(task)
        task.add_done_callback(self._rechecks.discard)

    def _heard(self, channel: str, message: dict[str, Any]) -> None:
        if not channel.startswith("t:"):
            return  # the bus's own node and broadcast channels: nothing of ours
        task_id = channel[2:]
        stored, answers = message.get("record"), message.get("answers")
        if isinstance(stored, dict):
            try:
                record = TaskRecord.from_json(stored)
            except ValueError as exc:
                logger.warning("task %s: an event's record cannot be read (%s)", task_id, exc)
                return
            self._emit_record(record, replay=False)
        elif isinstance(answers, dict):
            self._emit_answers(task_id, answers)

    def _emit_record(self, record: TaskRecord, *, replay: bool) -> None:
        task_id = record.task_id
        if task_id not in self._watchers:
            return
        if record.terminal:
            if replay and task_id in self._heard_end:
                return
            self._heard_end.add(task_id)
        elif replay:
            return  # only the final word is read back: the moves before it are past
        self._watchers.emit(TaskEvent(task_id, record=record))

    def _emit_answers(self, task_id: str, answers: Mapping[str, Any]) -> None:
        if task_id not in self._watchers:
            return
        heard = self._heard_answers.setdefault(task_id, {})
        fresh = {k: v for k, v in answers.items() if k not in heard or heard[k] != v}
        if fresh:
            heard.update(fresh)
            self._watchers.emit(TaskEvent(task_id, answers=fresh))

    async def recheck(self) -> None:
        """Pass on what the watchers may have missed on pub/sub: stored answers, a final
        record (module doc). Never raises for Redis: the next recheck tries again."""
        task_ids = self._watchers.task_ids()
        if not task_ids:
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            for task_id in task_ids:
                pipe.get(self._task + task_id)
                pipe.hgetall(self._answers + task_id)
            replies = await pipe.execute()
        except FAILURES as exc:
            logger.debug("rechecking the watched tasks failed: %s", exc)
            return
        for i, task_id in enumerate(task_ids):
            value, stored = replies[2 * i], replies[2 * i + 1]
            if stored:  # written by answer() only: JSON
                self._emit_answers(task_id, {_text(k): orjson.loads(v) for k, v in stored.items()})
            record = None if value is None else self._load(task_id, value)
            if record is not None:
                self._emit_record(record, replay=True)

    async def _recheck_every(self) -> None:
        while True:
            await asyncio.sleep(self.recheck_s)
            try:
                await self.recheck()
            except Exception:  # a bug of ours: log it, keep rechecking
                logger.exception("rechecking the watched tasks failed")

    async def watch(self, task_id: str, callback: Watcher) -> Unwatch:
        bus = await self._started_bus()
        channel = f"t:{task_id}"

        async def unwatched() -> None:
            self._heard_answers.pop(task_id, None)
            self._heard_end.discard(task_id)
            await bus.leave(channel)

        unwatch = self._watchers.add(task_id, callback, on_empty=unwatched)
        try:
            # Confirmed by Redis (at once when already subscribed): later events reach us.
            await bus.join(channel)
        except BaseException:
            await unwatch()
            raise
        return unwatch

    async def answer(self, task_id: str, answers: Mapping[str, Any]) -> int:
        pairs = [item for key, value in answers.items() for item in (key, orjson.dumps(value))]
        message = orjson.dumps({"answers": dict(answers)})
        try:
            count = await self._answer(
                keys=[self._task + task_id, self._answers + task_id],
                args=[f"{self._events}t:{task_id}", message, *pairs],
            )
        except FAILURES as exc:
            self._fail(exc)
        return int(count)

    async def aclose(self) -> None:
        async with self._bus_lock:
            bus, self._bus = self._bus, None
            loop, self._recheck_loop = self._recheck_loop, None
        if bus is not None:  # first: a reconnection meanwhile would start a recheck
            await bus.aclose()
        tasks = [*self._rechecks, *([loop] if loop is not None else [])]
        await cancel_and_wait(*tasks, timeout=5.0, what="the task store's rechecks")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
