"""Where task records live: the :class:`TaskStore` protocol and :class:`MemoryTaskStore`.

What every store guarantees (tests/extensions/tasks/conformance.py checks it):

* **Create before answer.** :meth:`TaskStore.create` returns only once a
  :meth:`~TaskStore.get` of the id, from any process sharing the store, finds the task:
  the spec's "MUST NOT return ``CreateTaskResult`` until the task is durably created".
* **One winner.** :meth:`~TaskStore.transition` is a compare-and-set: the move is checked
  against the lifecycle table (:mod:`.states`) on the status the store holds at that
  instant, so of two racing moves out of ``working`` (a ``tasks/cancel`` on one node, the
  result on another) exactly one applies and the other raises
  :class:`~.states.IllegalTransition`.
* **Expiry.** A task is gone (``get`` returns None) once its TTL, counted from
  creation, has run out; the spec lets a server "delete it at any time" after that.
* **Liveness.** A node running tasks calls :meth:`~TaskStore.heartbeat` more often than
  the ``ttl`` it gives; :meth:`~TaskStore.sweep` moves the unfinished tasks of a node
  whose last heartbeat ran out (or that never beat) to ``failed``, with
  :data:`NODE_LOST`, so no task stays ``working`` forever after its node died. A
  task is its node's from creation (``record.node_id``), or from
  :meth:`~TaskStore.claim` (a queue worker taking a task created with no node); a
  task with no node is nobody's to sweep.
* **Bounded.** At most ``max_per_owner`` live tasks per owner: one more raises
  :class:`TaskLimitExceeded` (the extension answers it as an error, not a task).
* **Events.** :meth:`~TaskStore.watch` calls back, on every node watching the task,
  with each record a :meth:`~TaskStore.transition` wrote (on any node), and with the
  input responses :meth:`~TaskStore.answer` sent. Delivery is at most once and only
  to watchers present at that instant (a bus, not a log): the record stays the truth,
  and whoever must not miss a change reads it after watching. A store whose events can
  be lost (Redis pub/sub) must still get answers and the final record to the running
  node's watchers: it keeps answers while the task waits for input and reads back what
  its watchers missed (:mod:`.redis`); a watcher may then hear an answer late.

:meth:`~TaskStore.list_by_owner` pages through an owner's live tasks, oldest first. The
spec has no ``tasks/list`` (on purpose: no cross-caller leak), so no client method
reaches it; it serves resuming clients' owners, operators and tests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from types import EllipsisType
from typing import Any, Final, Protocol, runtime_checkable

from ...errors import ConfigurationError, MCPKitError
from .records import TaskRecord
from .states import IllegalTransition, TaskStatus

__all__ = [
    "DEFAULT_MAX_PER_OWNER",
    "DEFAULT_MAX_TASKS",
    "NODE_LOST",
    "MemoryTaskStore",
    "TaskEvent",
    "TaskExists",
    "TaskLimitExceeded",
    "TaskStore",
    "Unwatch",
    "decode_cursor",
    "encode_cursor",
]

logger = logging.getLogger("mcpkit.extensions.tasks.store")

DEFAULT_MAX_PER_OWNER: Final = 100
DEFAULT_MAX_TASKS: Final = 10_000

#: The JSON-RPC error of a task whose node stopped: an internal error (-32603), since the
#: request failed for a reason of the server's own (ext-tasks "Task Execution Errors").
NODE_LOST: Final[Mapping[str, Any]] = {
    "code": -32603,
    "message": "The server node running this task stopped before it finished",
}


@dataclass(frozen=True, slots=True)
class TaskEvent:
    """What a watcher of a task hears: a new ``record`` (a transition, on any node), or
    ``answers`` (``tasks/update`` input responses meant for the node running the task)."""

    task_id: str
    record: TaskRecord | None = None
    answers: Mapping[str, Any] | None = None


#: ``await unwatch()``: stop a watch (idempotent).
Unwatch = Callable[[], Awaitable[None]]
#: ``callback(event)``: called synchronously, on the store's reader: it must not block.
Watcher = Callable[[TaskEvent], None]


class TaskExists(MCPKitError):
    """A task of this id is already stored (ids come from the CSPRNG: a bug if seen)."""


class TaskLimitExceeded(MCPKitError):
    """The owner (or the store) holds as many live tasks as it may."""


def encode_cursor(record: TaskRecord) -> str:
    """The position after ``record`` in an owner's listing: creation millisecond, id."""
    return f"{int(record.created_at * 1000)}:{record.task_id}"


def decode_cursor(cursor: str) -> tuple[int, str]:
    ms, sep, task_id = cursor.partition(":")
    if not sep or not ms.isdigit():
        raise ValueError(f"not a task listing cursor: {cursor!r}")
    return int(ms), task_id


@runtime_checkable
class TaskStore(Protocol):
    """Task records, shared by every node given the same store (see the module doc)."""

    async def create(self, record: TaskRecord) -> None:
        """Store a new task (durably, before returning); :class:`TaskExists`,
        :class:`TaskLimitExceeded`."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task, or None when it is unknown or expired."""
        ...

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
        """Move the task atomically (:meth:`TaskRecord.moved`'s arguments); the new
        record, None when the task is unknown or expired,
        :class:`~.states.IllegalTransition` when the status it holds does not allow it."""
        ...

    async def list_by_owner(
        self, owner: str, *, cursor: str | None = None, limit: int = 50
    ) -> tuple[list[TaskRecord], str | None]:
        """Up to ``limit`` of the owner's live tasks after ``cursor``, oldest first, and
        the cursor of the next page (None on the last)."""
        ...

    async def heartbeat(self, node_id: str, ttl: float) -> None:
        """Node ``node_id`` is alive for ``ttl`` more seconds."""
        ...

    async def sweep(self) -> list[TaskRecord]:
        """Fail the unfinished tasks of nodes without a live heartbeat (and drop expired
        tasks where the store does not expire them by itself); the failed records."""
        ...

    async def claim(self, task_id: str, node_id: str) -> TaskRecord | None:
        """Make the unfinished task node ``node_id``'s (its liveness now hangs on that
        node's heartbeat); the record, None when it is unknown or expired,
        :class:`~.states.IllegalTransition` when it has finished."""
        ...

    async def watch(self, task_id: str, callback: Watcher) -> Unwatch:
        """Call ``callback`` with the task's events from now on (once this returns),
        whichever node causes them; the function that stops it."""
        ...

    async def answer(self, task_id: str, answers: Mapping[str, Any]) -> int:
        """Send ``tasks/update`` input responses to the task's watchers (the node running
        it); how many nodes (or, in memory, watchers) got them: 0 when none listens."""
        ...

    async def aclose(self) -> None:
        """Release what watching holds (a pub/sub connection); the records stay."""
        ...


def check_caps(max_per_owner: int, max_tasks: int | None = None) -> None:
    for name, value in (("max_per_owner", max_per_owner), ("max_tasks", max_tasks)):
        if value is not None and (type(value) is not int or value < 1):
            raise ConfigurationError(f"{name} must be a positive integer, not {value!r}")


class MemoryTaskStore:
    """A :class:`TaskStore` in this process's memory (the default; one process only).

    Bounded: at most ``max_tasks`` tasks in all (default 10 000) and ``max_per_owner``
    per owner (default 100), counting the tasks not yet expired; expired tasks are
    dropped when met and by :meth:`sweep`. ``clock`` (default ``time.time``) is for
    tests.
    """

    #: Other processes do not see these tasks.
    shared: Final = False

    def __init__(
        self,
        *,
        max_per_owner: int = DEFAULT_MAX_PER_OWNER,
        max_tasks: int = DEFAULT_MAX_TASKS,
        clock: Any = time.time,
    ) -> None:
        check_caps(max_per_owner, max_tasks)
        self.max_per_owner = max_per_owner
        self.max_tasks = max_tasks
        self._clock = clock
        self._tasks: dict[str, TaskRecord] = {}
        self._owned: dict[str, dict[str, None]] = {}
        self._alive: dict[str, float] = {}
        self._watchers = Watchers()

    def __len__(self) -> int:
        return len(self._tasks)

    def _drop(self, task_id: str) -> None:
        record = self._tasks.pop(task_id, None)
        if record is not None and record.owner is not None:
            owned = self._owned.get(record.owner)
            if owned is not None:
                owned.pop(task_id, None)
                if not owned:
                    del self._owned[record.owner]

    def _live(self, task_id: str, now: float) -> TaskRecord | None:
        record = self._tasks.get(task_id)
        if record is not None and record.expired(now):
            self._drop(task_id)
            return None
        return record

    def _purge(self, now: float) -> None:
        for task_id in [t for t, r in self._tasks.items() if r.expired(now)]:
            self._drop(task_id)

    async def create(self, record: TaskRecord) -> None:
        now = self._clock()
        if self._live(record.task_id, now) is not None:
            raise TaskExists(f"task {record.task_id} exists")
        owned = self._owned.get(record.owner, {}) if record.owner is not None else {}
        if len(owned) >= self.max_per_owner or len(self._tasks) >= self.max_tasks:
            self._purge(now)
            owned = self._owned.get(record.owner, {}) if record.owner is not None else {}
        if len(owned) >= self.max_per_owner:
            raise TaskLimitExceeded(
                f"owner {record.owner!r} already has {self.max_per_owner} live tasks"
            )
        if len(self._tasks) >= self.max_tasks:
            raise TaskLimitExceeded(f"the store already holds {self.max_tasks} live tasks")
        self._tasks[record.task_id] = record
        if record.owner is not None:
            self._owned.setdefault(record.owner, {})[record.task_id] = None

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._live(task_id, self._clock())

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
        now = self._clock()
        record = self._live(task_id, now)
        if record is None:
            return None
        # No await between the read and the write: in one event loop this is atomic.
        moved = record.moved(
            target,
            now=now,
            status_message=status_message,
            input_requests=input_requests,
            result=result,
            error=error,
            expected=expected,
        )
        self._tasks[task_id] = moved
        self._watchers.emit(TaskEvent(task_id, record=moved))
        return moved

    async def list_by_owner(
        self, owner: str, *, cursor: str | None = None, limit: int = 50
    ) -> tuple[list[TaskRecord], str | None]:
        if type(limit) is not int or limit < 1:
            raise ValueError(f"limit must be a positive integer, not {limit!r}")
        after = decode_cursor(cursor) if cursor is not None else None
        now = self._clock()
        records = [
            r for t in list(self._owned.get(owner, {})) if (r := self._live(t, now)) is not None
        ]
        records.sort(key=lambda r: (int(r.created_at * 1000), r.task_id))
        if after is not None:
            records = [r for r in records if (int(r.created_at * 1000), r.task_id) > after]
        page = records[:limit]
        more = len(records) > limit
        return page, (encode_cursor(page[-1]) if more else None)

    async def heartbeat(self, node_id: str, ttl: float) -> None:
        self._alive[node_id] = self._clock() + ttl

    async def sweep(self) -> list[TaskRecord]:
        now = self._clock()
        self._purge(now)
        for node_id in [n for n, until in self._alive.items() if until <= now]:
            del self._alive[node_id]
        failed: list[TaskRecord] = []
        for record in list(self._tasks.values()):
            if record.terminal or record.node_id is None or record.node_id in self._alive:
                continue
            try:
                moved = await self.transition(
                    record.task_id,
                    TaskStatus.FAILED,
                    status_message=str(NODE_LOST["message"]),
                    error=NODE_LOST,
                )
            except IllegalTransition:
                continue
            if moved is not None:
                failed.append(moved)
        return failed

    async def claim(self, task_id: str, node_id: str) -> TaskRecord | None:
        record = self._live(task_id, self._clock())
        if record is None:
            return None
        if record.terminal:
            raise IllegalTransition(record.status, record.status, task_id=task_id)
        claimed = replace(record, node_id=node_id)
        self._tasks[task_id] = claimed
        return claimed

    async def watch(self, task_id: str, callback: Watcher) -> Unwatch:
        return self._watchers.add(task_id, callback)

    async def answer(self, task_id: str, answers: Mapping[str, Any]) -> int:
        return self._watchers.emit(TaskEvent(task_id, answers=dict(answers)))

    async def aclose(self) -> None:
        return None


class Watchers:
    """The watch callbacks of a store's tasks in this process (every store keeps one)."""

    def __init__(self) -> None:
        self._by_task: dict[str, list[Watcher]] = {}

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._by_task

    def task_ids(self) -> list[str]:
        """The tasks watched now."""
        return list(self._by_task)

    def add(self, task_id: str, callback: Watcher, on_empty: Unwatch | None = None) -> Unwatch:
        """Watch ``task_id``; the unwatch, which awaits ``on_empty()`` (a store's
        unsubscribe) when it removes the task's last watcher."""
        entry = [callback]  # a fresh list per watch: the same callback may watch twice
        self._by_task.setdefault(task_id, []).append(callback)
        done = False

        async def unwatch() -> None:
            nonlocal done
            if done:
                return
            done = True
            callbacks = self._by_task.get(task_id, [])
            if entry[0] in callbacks:
                callbacks.remove(entry[0])
            if not callbacks:
                self._by_task.pop(task_id, None)
                if on_empty is not None:
                    await on_empty()

        return unwatch

    def emit(self, event: TaskEvent) -> int:
        """Call the task's watchers with ``event`` (a failing one is logged); how many."""
        callbacks = list(self._by_task.get(event.task_id, ()))
        for callback in callbacks:
            try:
                callback(event)
            except Exception:
                logger.exception("a watcher of task %s failed", event.task_id)
        return len(callbacks)
