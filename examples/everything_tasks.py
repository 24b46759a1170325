"""The tasks fixtures of the "everything" server (SEP-2663; the conformance suite's tasks-*).

``add_task_fixtures(server)`` registers the tools the suite's ``tasks-*`` scenarios call
(conformance SERVER_FIXTURE.md §7) and adds the tasks extension, declaring which of them
may or must run as a task. Kept apart from ``everything_server.py`` so that each file stays
readable.

``confirm_delete`` and ``multi_input`` ask with ``ctx.elicit`` inside the task: it parks in
``input_required`` until ``tasks/update`` answers. ``test_tool_with_task`` asks *before*
the task exists, in its request's own input round, then continues as a task
(``continue_as_task()``, the suite's tasks-mrtr-composition).
"""

from __future__ import annotations

import asyncio

from mcpkit import Context, MCPServer, ToolError
from mcpkit.errors import INTERNAL_ERROR, MCPError
from mcpkit.extensions.tasks import continue_as_task, tasks_extension

__all__ = ["add_task_fixtures"]

CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


def _field(name: str) -> dict[str, object]:
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}


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

    @server.tool
    async def confirm_delete(filename: str, ctx: Context) -> str:
        """Delete a file once the user confirms (asks inside the task)."""
        answer = await ctx.elicit(f"Delete {filename}?", CONFIRM)
        if answer.action == "accept" and (answer.content or {}).get("confirm"):
            return f"Deleted {filename}"
        return f"Kept {filename}"

    @server.tool
    async def multi_input(ctx: Context) -> str:
        """Ask two questions at once (both listed in the task's inputRequests)."""
        name, color = await asyncio.gather(
            ctx.elicit("What is your name?", _field("name")),
            ctx.elicit("What is your favorite color?", _field("color")),
        )
        return f"{(name.content or {}).get('name')} likes {(color.content or {}).get('color')}"

    @server.tool
    async def test_tool_with_task(ctx: Context) -> str:
        """Ask for a name in this request, then finish as a task (input before the task)."""
        answer = await ctx.elicit("What is your name?", _field("name"), key="user_name")
        user_name = (answer.content or {}).get("name") if answer.action == "accept" else None
        await continue_as_task()  # the round that brought the answer gets the task
        await asyncio.sleep(0.1)
        return f"Hello, {user_name or 'stranger'}! (finished as a task)"

    server.add_extension(
        tasks_extension(
            deferred=["test_tool_with_task"],
            tools={
                "test_tool_with_task": "required",
                "slow_compute": "optional",
                "failing_job": "required",
                "protocol_error_job": "optional",
                "confirm_delete": "optional",
                "multi_input": "optional",
            },
        )
    )
