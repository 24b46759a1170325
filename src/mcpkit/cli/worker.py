"""``mcpkit worker FILE[:OBJECT] --redis URL``: run a server's queued tasks, serving nothing.

The process loads the app as ``mcpkit run`` does, gives it the Redis store, and enters
its lifespan with the tasks extension's job queue consuming
(:mod:`mcpkit.extensions.tasks.queue`): tasks accepted by any ``mcpkit run`` node of the
same Redis (and prefix) run here. SIGTERM or Ctrl-C stops it: the jobs it was running
are handed back to the queue, and another worker runs them again (idempotent tools) or
records them ``failed``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server.server import MCPServer

__all__ = ["HELP", "configure", "run"]

HELP = "run the queued tasks of a server's tasks extension (needs --redis)"

REDIS_URL_ENV = "MCPKIT_REDIS_URL"
REDIS_PREFIX_ENV = "MCPKIT_REDIS_PREFIX"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="FILE[:OBJECT]",
        help="the same Python file or module (and server object) the nodes serve",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help=f"the Redis the nodes share (redis://[:password@]host:port/db; env "
        f"{REDIS_URL_ENV}). Needs pip install 'mcpkit[tasks-queue]'",
    )
    parser.add_argument(
        "--redis-prefix",
        metavar="P",
        help=f"the nodes' key prefix (env {REDIS_PREFIX_ENV}; default 'mcpkit:')",
    )


def _fail(message: str, status: int = 2) -> int:
    print(f"mcpkit: error: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    url = args.redis if args.redis is not None else os.environ.get(REDIS_URL_ENV) or None
    prefix = args.redis_prefix
    if prefix is None:
        prefix = os.environ.get(REDIS_PREFIX_ENV) or None
    if url is None:
        return _fail(f"mcpkit worker needs --redis URL (or {REDIS_URL_ENV}): the queue's Redis")
    from ..errors import ConfigurationError, LifespanError, MissingExtra, StoreUnavailable

    try:
        from ..extensions.tasks.queue import worker_role
        from ..stores.redis import RedisStore
    except MissingExtra as exc:
        return _fail(str(exc))
    from .run import _load

    server = _load(args.target, quiet_stdout=False)
    if isinstance(server, int):
        return server
    try:
        if server.store is None:
            store = RedisStore(url) if prefix is None else RedisStore(url, prefix=prefix)
            server.use_store(store)
        with worker_role() as role:
            return asyncio.run(_work(server, role))
    except (ConfigurationError, LifespanError, StoreUnavailable) as exc:
        return _fail(str(exc), status=1)
    except KeyboardInterrupt:
        return 0


async def _work(server: MCPServer, role: object) -> int:
    from ..extensions.tasks.queue import WorkerRole

    assert isinstance(role, WorkerRole)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    async with server.lifespan_context():
        if not role.queues:
            return _fail(
                f"{server.name} runs no tasks through a queue: give it "
                "tasks_extension(queue=True) (or queue=TaskQueue(...))"
            )
        print(
            f"mcpkit worker: running the queued tasks of {server.name} "
            f"(pid {os.getpid()}, {sum(q.concurrency for q in role.queues)} at once)",
            file=sys.stderr,
            flush=True,
        )
        await stop.wait()
    return 0
