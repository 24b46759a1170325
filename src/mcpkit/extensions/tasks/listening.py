"""A client session's task status notifications: the ``taskIds`` its followers listen to.

SEP-2663 "Task Status Notifications": on 2026-07-28 a client asks for
``notifications/tasks`` by naming task ids in its ``subscriptions/listen`` filter
(``taskIds``), and the acknowledgment says which the server granted. A session keeps
one listen request (:class:`mcpkit.client.stateless.listen.Listener`); the followers of
:mod:`.client` add their task to its filter with :func:`listen_to` and get a queue of
the ``DetailedTask`` objects the server sends for it, or None when the server did not
grant it (a handshake-era session, which has no ``subscriptions/listen``; a server
without notifications), and then poll.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import TYPE_CHECKING, Any, Final

from ...errors import MCPKitError

if TYPE_CHECKING:
    from ...client.session import ClientSession

__all__ = ["LISTEN_WAIT", "listen_to", "stop_listening"]

log = logging.getLogger("mcpkit.extensions.tasks")

#: How long a follower waits for the server to acknowledge its listen filter.
LISTEN_WAIT: Final = 5.0
_NOTIFICATION: Final = "notifications/tasks"
_FILTER_KEY: Final = "taskIds"

Queue = asyncio.Queue[dict[str, Any]]


class _Listening:
    """The tasks one session's followers listen to, and the notifications for them."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.queues: dict[str, list[Queue]] = {}
        session.on_notification(_NOTIFICATION, self._heard)

    def _heard(self, params: dict[str, Any]) -> None:
        task_id = params.get("taskId")
        if isinstance(task_id, str):
            for queue in self.queues.get(task_id, ()):
                queue.put_nowait(params)

    async def add(self, task_id: str) -> Queue | None:
        queue: Queue = asyncio.Queue()
        self.queues.setdefault(task_id, []).append(queue)
        listener = self.session.listener
        listener.set_filter(_FILTER_KEY, sorted(self.queues))
        try:
            await listener.update(LISTEN_WAIT)
        except MCPKitError as exc:  # not acknowledged in time, or refused
            log.debug("%s; following task %s by polling", exc, task_id)
        granted = (listener.acknowledged or {}).get(_FILTER_KEY)
        if isinstance(granted, list) and task_id in granted:
            return queue
        self.remove(task_id, queue)
        return None

    def remove(self, task_id: str, queue: Queue) -> None:
        queues = self.queues.get(task_id, [])
        if queue in queues:
            queues.remove(queue)
        if not queues:
            self.queues.pop(task_id, None)
        # Not sent now: a finished task's notifications have ended anyway, and the filter
        # shrinks with the next change of it.
        self.session.listener.set_filter(_FILTER_KEY, sorted(self.queues) or None)


_listening: weakref.WeakKeyDictionary[ClientSession, _Listening] = weakref.WeakKeyDictionary()


async def listen_to(session: ClientSession, task_id: str) -> Queue | None:
    """Listen to ``task_id``'s notifications on ``session``: the queue of its
    ``DetailedTask`` objects, or None when the server did not grant it (poll then)."""
    # subscriptions/listen is the stateless era's (2026-07-28): a handshake-era session
    # polls, as it must.
    if session.stateless_version is None:
        return None
    listening = _listening.get(session)
    if listening is None:
        listening = _listening[session] = _Listening(session)
    return await listening.add(task_id)


def stop_listening(session: ClientSession, task_id: str, queue: Queue) -> None:
    """The follower that got ``queue`` from :func:`listen_to` is done with it."""
    listening = _listening.get(session)
    if listening is not None:
        listening.remove(task_id, queue)
