"""Where a tasks extension keeps its records and runs its tasks while the server runs.

Without ``store=``, the records live beside the server's own store: on a
``RedisStore`` (``mcpkit run --redis``) a :class:`~.redis.RedisTaskStore`, so every
node of the deployment shares them; otherwise this process's memory. With
``queue=``, execution goes to a Redis job queue (:mod:`.queue`) instead of the
accepting process. The Redis modules are imported only when the server has Redis.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, cast

from ...errors import ConfigurationError
from .store import MemoryTaskStore, TaskStore

if TYPE_CHECKING:
    from ...server.server import MCPServer
    from ...stores.redis import RedisStore
    from .queue import TaskQueue

__all__ = ["Placed", "placement", "redis_store_of", "store_beside"]


class Placed(Protocol):
    """What :func:`placement` sets up: the tasks extension's state (``server._Tasks``)."""

    chosen: bool  # a store was given (store=): keep it
    store: TaskStore
    queue_option: TaskQueue | bool
    queue: TaskQueue | None


@contextlib.asynccontextmanager
async def placement(tasks: Placed, server: MCPServer) -> AsyncIterator[None]:
    """Where records live and tasks run while the server runs: without ``store=``, a
    server's RedisStore shares the records (``mcpkit run --redis``); with ``queue``,
    the job queue (.queue) takes the execution."""
    if not tasks.chosen:
        tasks.store = store_beside(server)
    redis_store = redis_store_of(server)
    option = tasks.queue_option
    if option is False or (option is True and redis_store is None):
        yield  # in process (queue=True without Redis: the same app runs on one node)
        return
    if option is True:
        from .queue import TaskQueue

        option = TaskQueue()
    if isinstance(tasks.store, MemoryTaskStore):
        raise ConfigurationError(
            "tasks_extension(queue=...) needs a shared task store: give the server a "
            "RedisStore (mcpkit run --redis URL), or store=RedisTaskStore(...)"
        )
    async with option.running(server, tasks.store, redis_store):
        tasks.queue = option
        try:
            yield
        finally:
            tasks.queue = None


def redis_store_of(server: MCPServer) -> RedisStore | None:
    """The server's store when it is a RedisStore; its module is loaded only if it is."""
    module = sys.modules.get("mcpkit.stores.redis")
    store = server.store
    if module is None or store is None or not isinstance(store, module.RedisStore):
        return None
    return cast("RedisStore", store)


def store_beside(server: MCPServer) -> TaskStore:
    """The task store a server's own store implies: on a ``RedisStore`` (``mcpkit run
    --redis``), a :class:`~.redis.RedisTaskStore` beside it, so that every node of the
    deployment shares the tasks; else this process's memory."""
    # Loaded only when it is one: a server without Redis never imports redis.
    redis_module = sys.modules.get("mcpkit.stores.redis")
    if redis_module is not None and isinstance(server.store, redis_module.RedisStore):
        from .redis import RedisTaskStore

        return RedisTaskStore.from_store(server.store)
    return MemoryTaskStore()
