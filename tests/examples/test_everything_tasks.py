"""examples/everything_tasks.py over real HTTP, as the conformance suite reaches it: what
tasks-status-notifications describes (the suite's own scenario skips every check) and
the input round before a task of tasks-mrtr-composition, through the mcpkit client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.extensions.tasks.client import TaskState, tasks_client
from mcpkit.extensions.tasks.states import TaskStatus
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.client.http_servers import serve
from tests.examples.fresh import fresh_example

pytestmark = pytest.mark.no_schema_check

FIXTURE = Path(__file__).resolve().parents[2] / "examples" / "everything_server.py"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MCPServer]:
    monkeypatch.syspath_prepend(str(FIXTURE.parent))  # its sibling, everything_tasks
    with fresh_example(FIXTURE) as module:
        yield module.server


async def test_status_notifications_carry_the_task_and_inline_the_result(
    server: MCPServer,
) -> None:
    heard: list[dict[str, Any]] = []

    def trace(direction: str, message: Any) -> None:
        if direction == "received" and message.get("method") == "notifications/tasks":
            heard.append(message["params"])

    async with (
        serve(StreamableHTTPApp(server, path="/mcp")) as url,
        Client(
            url=url,
            protocol_version="2026-07-28",
            extensions=[tasks_client()],
            trace=trace,
            timeout=10,
        ) as client,
    ):
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": "notified"})
    assert result["content"][0]["text"] == "notified: computed in 1.0 s"
    assert heard, "no notifications/tasks on the subscriptions/listen stream"
    assert len({p["taskId"] for p in heard}) == 1
    assert all(p["status"] in {s.value for s in TaskStatus} for p in heard)
    assert all(isinstance(p["_meta"][SUBSCRIPTION_ID], int) for p in heard)
    last = heard[-1]
    assert last["status"] == "completed"
    assert last["result"]["content"] == result["content"]  # inlined: no tasks/get needed


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_a_name_asked_before_the_task_is_in_its_result(server: MCPServer, era: str) -> None:
    states: list[TaskState] = []
    asked: list[dict[str, Any]] = []

    def name(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Alice"}}

    async with (
        serve(StreamableHTTPApp(server, path="/mcp")) as url,
        Client(
            url=url,
            protocol_version=era,
            extensions=[tasks_client(on_status=states.append)],
            elicitation_handler=name,
            timeout=10,
        ) as client,
    ):
        result = await client.call_tool("test_tool_with_task", {})
    assert "Alice" in result["content"][0]["text"]
    assert len(asked) == 1  # asked in the request, before the task existed
    assert states and states[0].input_requests is None  # the task never asked
    assert states[-1].status is TaskStatus.COMPLETED
