"""The app of ``bench_tasks.py``: one tool, ``noop``, that may run as a task.

``build(queue=...)`` gives the server; as a module it is the queued app the benchmark's
``mcpkit worker`` processes load (``--redis URL --redis-prefix P``).
"""

from __future__ import annotations

from mcpkit import MCPServer
from mcpkit.extensions.tasks import tasks_extension
from mcpkit.extensions.tasks.store import TaskStore


def build(
    *, queue: bool = False, consume: bool = True, store: TaskStore | None = None
) -> MCPServer:
    server = MCPServer(name="bench-tasks", version="1.0.0")

    @server.tool
    async def noop(text: str) -> str:
        """Answer the text back (the same tool plain and as a task)."""
        return text

    task_queue: object = False
    if queue:
        from mcpkit.extensions.tasks.queue import TaskQueue

        task_queue = TaskQueue(consume=consume)
    server.add_extension(
        tasks_extension(
            tools={"noop": "optional"},
            store=store,
            poll_interval_ms=1,
            queue=task_queue,  # type: ignore[arg-type]
        )
    )
    return server


server = build(queue=True)
