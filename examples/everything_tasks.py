"""The tasks fixtures of the "everything" server (SEP-2663; the conformance suite's tasks-*).

``add_task_fixtures(server)`` registers the tools the suite's ``tasks-*`` scenarios call
(conformance SERVER_FIXTURE.md §7) and adds the tasks extension, declaring which of them
may or must run as a task. Kept apart from ``everything_server.py`` so that each file stays
readable.

Not here yet: ``confirm_delete``, ``multi_input`` and ``test_tool_with_task``, which park a
task in ``input_required`` (``ctx.elicit`` inside a task, answered by ``tasks/update``):
that part of the extension is not built yet, and their scenarios are listed in
``conformance/expected-failures.txt``.
"""

from __future__ import annotations

import asyncio

from mcpkit import MCPServer, ToolError
from mcpkit.errors import INTERNAL_ERROR, MCPError
from mcpkit.extensions.tasks.server import tasks_extension

__all__ = ["add_task_fixtures"]


def add_task_fixtures(server: MCPServer) -> None:
    @server.tool
    def greet(name: str) -> str:
        """Greet someone (never a task)."""
        return f"Hello, {name}!"

    @server.tool
    async def slow_compute(seconds: float, label: str) -> str:
        """Wait `seconds`, then report `label` (a task for a client that supports them)."""
        await asyncio.sleep(seconds)
        return f"{label}: computed in {seconds} s"

    @server.tool
    async def failing_job() -> str:
        """Fail after a second with a tool error (always a task)."""
        await asyncio.sleep(1)
        raise ToolError("failing_job failed, as it always does")

    @server.tool
    async def protocol_error_job() -> str:
        """Fail with a JSON-RPC error (a task for a client that supports them)."""
        raise MCPError("protocol_error_job hit a protocol error", code=INTERNAL_ERROR)

    server.add_extension(
        tasks_extension(
            tools={
                "slow_compute": "optional",
                "failing_job": "required",
                "protocol_error_job": "optional",
            }
        )
    )
