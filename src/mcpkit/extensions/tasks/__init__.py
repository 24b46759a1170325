"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): experimental.

SEP-2663 is a draft: the wire shapes here follow the ``modelcontextprotocol/ext-tasks``
repository's ``specification/draft/tasks.md`` and ``schema/draft/schema.json``, and
may change with it.

The server part runs tasks in the accepting process, input inside a task included, or
through a Redis job queue on any worker process; the client part follows a task inside
``call_tool``; status notifications are still to come:

* :mod:`.server`: :func:`~.server.tasks_extension`, the ``Extension`` a server adds
  (task-augmented ``tools/call``, ``tasks/get``, ``tasks/cancel``, ``tasks/update``);
* :mod:`.client`: :func:`~.client.tasks_client` for ``Client(extensions=[...])``,
  :class:`~.client.TaskHandle` and :func:`~.client.call_tool_task` (exported lazily:
  a server need not load the client);
* :mod:`.inputs`: :class:`~.inputs.TaskInputs`, a running task's input requests;
* :mod:`.deferred`: :func:`~.deferred.continue_as_task`, a tool that asks in its
  request and then becomes a task;
* :mod:`.notify`: ``notifications/tasks`` on ``subscriptions/listen`` (server);
  :mod:`.listening`: a client session's task notifications;
* :mod:`.access`: the capability check and owner binding;
* :mod:`.states`: the task lifecycle as a table, and :func:`~.states.check_transition`;
* :mod:`.records`: :class:`~.records.TaskRecord` and its wire forms (``Task``,
  ``CreateTaskResult``, ``GetTaskResult``, the ``notifications/tasks`` params);
* :mod:`.store`: the :class:`~.store.TaskStore` protocol and
  :class:`~.store.MemoryTaskStore`;
* :mod:`.redis`: :class:`~.redis.RedisTaskStore`, the task records on Redis;
* :mod:`.queue`: :class:`~.queue.TaskQueue`, execution through a pydocket job queue
  (``mcpkit[tasks-queue]``; ``mcpkit worker``), the only module that imports docket.

The package sits in ``extensions`` (above ``server`` and ``client``, beside
``adapters``) and uses only public seams below it (``errors``, ``stores``, the
server's ``Extension``, middleware and ``Context``; the client's extension seams,
``client_capability`` and ``result_handlers``); the core never imports it. docs/design/tasks.md says how the
remaining parts will build on it; docs/extensions.md how to use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from .deferred import continue_as_task
from .records import EXTENSION_ID, TaskRecord
from .server import TaskSupport, tasks_extension
from .states import TaskStatus
from .store import MemoryTaskStore, TaskStore

if TYPE_CHECKING:
    from .client import TaskHandle, TaskState, call_tool_task, tasks_client

__all__ = [
    "EXTENSION_ID",
    "MemoryTaskStore",
    "TaskHandle",
    "TaskRecord",
    "TaskState",
    "TaskStatus",
    "TaskStore",
    "TaskSupport",
    "call_tool_task",
    "continue_as_task",
    "tasks_client",
    "tasks_extension",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {name: ".client" for name in ("TaskHandle", "TaskState", "call_tool_task", "tasks_client")},
    __all__,
)
