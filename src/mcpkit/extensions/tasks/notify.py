"""Task status notifications: ``notifications/tasks`` on a ``subscriptions/listen`` stream.

SEP-2663 "Task Status Notifications" (ext-tasks ``specification/draft/tasks.md``): a
client opts in with ``subscriptions/listen {notifications: {taskIds: [...]}}``; the
server acknowledges the ids it agreed to and then sends, for each, a
``notifications/tasks`` whose params are the complete ``DetailedTask``, "identical to
what ``tasks/get`` would have returned at that moment". A client that did not declare
the extension gets -32021 (the spec's "MUST"). Only ``notifications/tasks`` goes on
the stream: progress and log notifications of a task "MUST NOT" be sent there.

:class:`StatusNotifier` is the extension's grant function of the ``taskIds`` filter key
(``Extension(listen_filters=...)``, :mod:`mcpkit.server.stateless.listen`):

* an id is granted when the task exists and belongs to the caller (:func:`.owner_of`,
  as for ``tasks/get``); any other id is left out of the acknowledgment, unknown and
  foreign alike, so existence does not leak;
* the task's current state is sent at once (after the acknowledgment), so a client
  that subscribes after the task moved, or finished, still hears where it stands;
* every later move, written on any node sharing the store, reaches the stream through
  :meth:`~.store.TaskStore.watch` (Redis pub/sub on a shared store); a record older
  than the last one sent, or equal to it, is skipped, so the two paths never make the
  stream go back in time; a terminal status is the task's last notification.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ...errors import InvalidParams
from .access import client_declares_tasks, missing_capability, owner_of
from .records import TaskRecord, detailed_task_wire
from .store import TaskEvent, TaskStore, Unwatch

if TYPE_CHECKING:
    from ...server.stateless.listen import Listener

__all__ = ["METHOD", "TASK_IDS", "StatusNotifier"]

log = logging.getLogger("mcpkit.extensions.tasks")

#: The notification (ext-tasks ``TaskStatusNotification``).
METHOD: Final = "notifications/tasks"
#: The ``subscriptions/listen`` filter key (ext-tasks ``TaskSubscriptionNotifications``).
TASK_IDS: Final = "taskIds"
#: At most this many task ids per listen request (a bound on the store reads it costs).
MAX_TASK_IDS: Final = 100


class StatusNotifier:
    """The ``taskIds`` listen filter of one tasks extension (see the module doc)."""

    def __init__(self, store: Callable[[], TaskStore]) -> None:
        self._store = store  # the extension's store, which its lifespan may still choose
        self._background: set[asyncio.Task[None]] = set()

    async def grant(self, value: Any, listener: Listener) -> list[str] | None:
        if not client_declares_tasks(listener.ctx.client_capabilities):
            raise missing_capability("task status notifications")
        if type(value) is not list or any(type(t) is not str for t in value):
            raise InvalidParams(
                "subscriptions/listen: 'notifications.taskIds' must be an array of task id strings"
            )
        if len(value) > MAX_TASK_IDS:
            raise InvalidParams(
                f"subscriptions/listen: at most {MAX_TASK_IDS} task ids per listen request"
            )
        owner = owner_of(listener.ctx)
        store = self._store()
        granted: list[str] = []
        for task_id in dict.fromkeys(value):
            record = await store.get(task_id)
            if record is None or record.owner != owner:
                continue  # unknown or another caller's: not granted, and not said which
            granted.append(task_id)
            await self._follow(store, record, listener)
        return granted

    async def _follow(self, store: TaskStore, record: TaskRecord, listener: Listener) -> None:
        last: list[TaskRecord] = []
        stop: list[Unwatch] = []

        def send(current: TaskRecord) -> None:
            if last and (current == last[0] or current.updated_at < last[0].updated_at):
                return
            if last and last[0].terminal:
                return  # the terminal status was the last word
            last[:] = [current]
            listener.send(METHOD, detailed_task_wire(current))
            if current.terminal and stop:
                self._spawn(stop[0]())

        if record.terminal:
            send(record)
            return

        def heard(event: TaskEvent) -> None:
            if event.record is not None and not listener.closed:
                send(event.record)

        # Watch first, then read again: a move between the two reads reaches the stream
        # either way (by the event, or by the read), never by neither.
        stop.append(await store.watch(record.task_id, heard))
        listener.on_close(lambda: self._spawn(stop[0]()))
        current = await store.get(record.task_id)
        send(record if current is None else current)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        """Wait for the unwatches under way (the server is stopping)."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
