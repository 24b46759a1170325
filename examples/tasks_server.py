"""A server whose slow tool runs as a task (the tasks extension, SEP-2663; experimental).

Run it on Streamable HTTP at http://127.0.0.1:8000/mcp::

    mcpkit run examples/tasks_server.py --transport http

``slow_count(n)`` always runs as a task: a client that declares
``io.modelcontextprotocol/tasks`` in its request's capabilities gets a
``CreateTaskResult`` (``resultType: "task"``, ``taskId``, ``ttlMs``,
``pollIntervalMs``) at once, then polls ``tasks/get``: ``working`` with the latest
progress line as ``statusMessage``, then ``completed`` with the tool's result
(``"counted to {n}"``). ``tasks/cancel`` stops the count. A client without the
extension is refused with -32021.

``approve(item)`` runs as a task too and asks for confirmation with the same
``await ctx.elicit(...)`` as any tool: the task moves to ``input_required`` with the
question in ``inputRequests``, the client answers with ``tasks/update``, and the
task completes with ``"approved {item}"`` or ``"rejected {item}"``.
"""

from __future__ import annotations

import asyncio

from mcpkit import Context, MCPServer
from mcpkit.extensions.tasks import tasks_extension

STEP_S = 0.2

server = MCPServer(name="tasks-example", version="1.0.0")


@server.tool
async def slow_count(n: int, ctx: Context) -> str:
    """Count to n, one step every 0.2 s, reporting each step."""
    for i in range(1, n + 1):
        await asyncio.sleep(STEP_S)
        await ctx.progress(i, total=n, message=f"counted {i} of {n}")
    return f"counted to {n}"


@server.tool
async def approve(item: str, ctx: Context) -> str:
    """Ask the user to approve item."""
    answer = await ctx.elicit(
        f"Approve {item}?",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    )
    if answer.action == "accept" and (answer.content or {}).get("ok") is True:
        return f"approved {item}"
    return f"rejected {item}"


server.add_extension(
    tasks_extension(tools={"slow_count": "required", "approve": "required"}, poll_interval_ms=200)
)


if __name__ == "__main__":
    server.run_http(port=8000)
