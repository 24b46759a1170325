"""Tasks (SEP-2663): what a task costs over a plain ``tools/call``, and the queue's throughput.

1. **Overhead per task.** One tool, ``noop(text)`` (``servers/tasks_app.py``), declared
   ``"optional"``: a client without the tasks extension gets the result in place (the
   **baseline**, a plain ``tools/call``), a client with it gets a task. A task is driven
   by hand, as tightly as the protocol allows: ``tools/call`` (the ``CreateTaskResult``),
   then ``tasks/get`` at once and again until the task is ``completed`` (no poll
   interval waited: the figure is the work, not the client's patience). Each variant
   runs in batches of sequential calls over one in-memory client
   (``mcpkit.testing.connect``, every message serialised as on a transport), batches
   interleaved variant by variant; per task, the median over batches of wall time and of
   this process's CPU time (client and server both; a ``redis-server``'s own CPU is not
   counted). Variants: the records in memory (``MemoryTaskStore``), on Redis
   (``RedisStore`` + ``RedisTaskStore``, the task run in process), and through the job
   queue (``TaskQueue``, run by one ``mcpkit worker`` process: wall time only, the CPU
   being spread over processes). The ratio is variant / plain ``tools/call``.
2. **Queue throughput.** M tasks created at once by one client on a node that runs none
   (``TaskQueue(consume=False)``), run by N ``mcpkit worker`` processes (concurrency 10
   each), followed by polling the task store until the last is ``completed``: tasks per
   second from the first ``tools/call`` to the last completion, for N = 1, 2, 4.

Needs ``redis-server`` and ``pip install -e '.[dev]'`` (pydocket comes with the test
extra). Run: ``python benchmarks/bench_tasks.py [--quick] [--reps N] [--calls M]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from _util import HERE, child_env, fmt, median, spread

from mcpkit import Client, MCPServer
from mcpkit.extensions.tasks.client import TaskHandle, call_tool_task, tasks_client
from mcpkit.extensions.tasks.redis import RedisTaskStore
from mcpkit.extensions.tasks.states import TaskStatus
from mcpkit.stores.redis import RedisStore

sys.path.insert(0, str(HERE / "servers"))
sys.path.insert(0, str(HERE.parent / "tests"))
from tasks_app import build

from redis_server import RedisServer

APP = str(HERE / "servers" / "tasks_app.py")
ARGS = {"text": "hello world"}
EXPECTED = {"content": [{"type": "text", "text": "hello world"}]}
TIMEOUT = 60.0

Call = Callable[[], Awaitable[int]]  # one call; the number of tasks/get it took


async def plain(client: Client) -> int:
    result = await client.call_tool("noop", ARGS)
    if result.get("content") != EXPECTED["content"]:
        raise SystemExit(f"noop answered {result!r}")
    return 0


async def as_task(client: Client) -> int:
    handle = await call_tool_task(client, "noop", ARGS)
    if not isinstance(handle, TaskHandle):
        raise SystemExit(f"noop was not made a task: {handle!r}")
    gets = 0
    while True:
        state = await handle.get()
        gets += 1
        if state.status is TaskStatus.COMPLETED:
            if state.result is None or state.result.get("content") != EXPECTED["content"]:
                raise SystemExit(f"the task ended with {state.result!r}")
            return gets
        if state.terminal:
            raise SystemExit(f"the task ended {state.status}: {state.error!r}")


async def batch(call: Call, calls: int) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds per call, and tasks/get per call, over ``calls`` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    gets = 0
    for _ in range(calls):
        gets += await call()
    return (
        (time.perf_counter() - wall) / calls,
        (time.process_time() - cpu) / calls,
        gets / calls,
    )


class Workers:
    """``mcpkit worker`` processes of ``servers/tasks_app.py`` on one Redis and prefix."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url, self.prefix = url, prefix
        self.procs: list[asyncio.subprocess.Process] = []

    async def start(self, n: int) -> None:
        for _ in range(n):
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "mcpkit",
                "worker",
                APP,
                "--redis",
                self.url,
                "--redis-prefix",
                self.prefix,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=child_env(),
            )
            assert proc.stderr is not None
            line = await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)
            if b"mcpkit worker: running" not in line:
                raise SystemExit(f"a worker did not start: {line!r}")
            # Drain its log, so that a full pipe never stalls it.
            asyncio.get_running_loop().create_task(proc.stderr.read())
            self.procs.append(proc)

    async def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            await asyncio.wait_for(proc.wait(), TIMEOUT)
        self.procs.clear()


@asynccontextmanager
async def node(server: MCPServer, *, tasks: bool) -> AsyncIterator[Client]:
    extensions = [tasks_client()] if tasks else []
    async with Client(server=server, extensions=extensions) as client:
        yield client


async def overhead(redis: RedisServer, reps: int, calls: int) -> dict[str, list[float]]:
    prefix = f"bt{secrets.token_hex(3)}:"
    memory = build()
    on_redis = build()
    on_redis.use_store(RedisStore(redis.url, prefix=prefix + "r:"))
    queued = build(queue=True, consume=False)
    queued.use_store(RedisStore(redis.url, prefix=prefix + "q:"))
    workers = Workers(redis.url, prefix + "q:")
    await workers.start(1)
    out: dict[str, list[float]] = {}
    try:
        async with (
            node(memory, tasks=False) as c_plain,
            node(memory, tasks=True) as c_memory,
            node(on_redis, tasks=True) as c_redis,
            node(queued, tasks=True) as c_queue,
        ):
            variants: dict[str, Call] = {
                "plain": lambda: plain(c_plain),
                "memory": lambda: as_task(c_memory),
                "redis": lambda: as_task(c_redis),
                "queue": lambda: as_task(c_queue),
            }
            for call in variants.values():  # warm up every path
                await batch(call, max(5, calls // 10))
            names = list(variants)
            for i in range(reps):
                order = names if i % 2 == 0 else names[::-1]
                for name in order:
                    n = calls if name != "queue" else max(5, calls // 10)
                    wall, cpu, gets = await batch(variants[name], n)
                    out.setdefault(f"{name} wall", []).append(wall)
                    out.setdefault(f"{name} cpu", []).append(cpu)
                    out.setdefault(f"{name} gets", []).append(gets)
    finally:
        await workers.stop()
    return out


async def throughput(redis: RedisServer, n_workers: int, tasks: int) -> float:
    prefix = f"bq{secrets.token_hex(3)}:"
    server = build(queue=True, consume=False)
    store = RedisStore(redis.url, prefix=prefix)
    server.use_store(store)
    records = RedisTaskStore.from_store(store)
    workers = Workers(redis.url, prefix)
    await workers.start(n_workers)
    try:
        async with node(server, tasks=True) as client:
            started = time.perf_counter()
            handles = await asyncio.gather(
                *(call_tool_task(client, "noop", ARGS) for _ in range(tasks))
            )
            ids = [h.task_id for h in handles if isinstance(h, TaskHandle)]
            if len(ids) != tasks:
                raise SystemExit("a call was not made a task")
            pending = set(ids)
            deadline = started + TIMEOUT
            while pending:
                if time.perf_counter() > deadline:
                    raise SystemExit(f"{len(pending)} of {tasks} tasks did not finish")
                done = await asyncio.gather(*(records.get(i) for i in pending))
                for record in done:
                    if record is not None and record.status is TaskStatus.COMPLETED:
                        pending.discard(record.task_id)
                    elif record is None or record.terminal:
                        raise SystemExit(f"a task ended otherwise: {record!r}")
                await asyncio.sleep(0.005)
            return tasks / (time.perf_counter() - started)
    finally:
        await workers.stop()


async def main(reps: int, calls: int, burst: int, counts: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer(Path(tmp))
        redis.start()
        try:
            figures = await overhead(redis, reps, calls)
            rates = {n: await throughput(redis, n, burst) for n in counts}
        finally:
            redis.stop()
    base_wall = median(figures["plain wall"])
    base_cpu = median(figures["plain cpu"])
    print(f"plain tools/call: {fmt(base_wall * 1e6)} us wall, {fmt(base_cpu * 1e6)} us CPU")
    for name, label in (
        ("memory", "task, records in memory"),
        ("redis", "task, records on Redis"),
        ("queue", "task, through the queue"),
    ):
        wall = median(figures[f"{name} wall"])
        cpu = median(figures[f"{name} cpu"])
        gets = median(figures[f"{name} gets"])
        cpu_part = "" if name == "queue" else f", CPU {fmt(cpu * 1e6)} us ({cpu / base_cpu:.2f}x)"
        print(
            f"{label}: wall {fmt(wall * 1e6)} us ({wall / base_wall:.2f}x){cpu_part}, "
            f"{gets:.2f} tasks/get per task; wall per batch {spread([w * 1e6 for w in figures[f'{name} wall']])} us"
        )
    for n, rate in rates.items():
        print(f"queue throughput, {n} worker process(es): {fmt(rate)} tasks/s ({burst} tasks)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--burst", type=int, default=500)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    if args.quick:
        asyncio.run(main(2, 20, 20, [1]))
    else:
        asyncio.run(main(args.reps, args.calls, args.burst, [1, 2, 4]))
