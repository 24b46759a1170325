"""``MCPClient`` with the tasks extension's client part: a server definition's
``extensions=[tasks_client()]`` follows tasks, with their status shown live."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.client import MCPClient
from mcpkit.extensions.tasks.client import TaskState, tasks_client
from mcpkit.extensions.tasks.states import TaskStatus
from tests.extensions.tasks.test_client import example, text

__all__ = ["example"]  # the fixture, shared with test_client.py

pytestmark = pytest.mark.no_schema_check


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_mcp_client_follows_tasks_and_shows_their_status(
    example: MCPServer, era: str
) -> None:
    seen: list[TaskState] = []
    definition: dict[str, Any] = {
        "server": example,
        "protocol_version": era,
        "extensions": [tasks_client(on_status=seen.append)],
    }
    mcp = MCPClient(servers={"jobs": definition}, timeout=10)
    mcp.elicitation.on_request("jobs", lambda params: {"action": "accept", "content": {"ok": True}})
    async with mcp:
        counted = await mcp.call_tool("jobs", "slow_count", {"n": 2})
        tools = await mcp.get_tools()
        approved = await tools["jobs_approve"](item="the plan")
    assert text(counted) == "counted to 2"
    assert approved == [{"type": "text", "text": "approved the plan"}]
    statuses = [state.status for state in seen]
    assert statuses.count(TaskStatus.COMPLETED) == 2
    assert TaskStatus.INPUT_REQUIRED in statuses
