"""examples/tasks_server.py: slow_count runs as a task, polled to its result, in memory."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.errors import MISSING_CAPABILITY, RemoteError
from mcpkit.extensions.tasks.server import TASKS
from mcpkit.testing import InMemoryClient, connect
from tests.examples.fresh import fresh_example

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks_server.py"

pytestmark = pytest.mark.no_schema_check  # the extension's methods are in no core schema


@pytest.fixture
def server() -> Iterator[MCPServer]:
    with fresh_example(EXAMPLE) as module:
        yield module.server


async def poll(client: InMemoryClient, task_id: str) -> tuple[dict[str, Any], list[str]]:
    messages: list[str] = []
    for _ in range(100):
        task = await client.request("tasks/get", {"taskId": task_id})
        if task["status"] != "working":
            return task, messages
        if "statusMessage" in task and task["statusMessage"] not in messages:
            messages.append(task["statusMessage"])
        await asyncio.sleep(task["pollIntervalMs"] / 1000)
    raise AssertionError("slow_count never finished")


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_slow_count_runs_as_a_task_and_reports_its_steps(server: MCPServer, era: str) -> None:
    options: dict[str, Any] = {"protocol_version": era, "capabilities": {"extensions": {TASKS: {}}}}
    if era == "2026-07-28":
        options["initialize"] = False
    async with connect(server, **options) as client:
        created = await client.call_tool("slow_count", {"n": 4})
        assert created["resultType"] == "task" and created["pollIntervalMs"] == 200
        task, messages = await poll(client, created["taskId"])
    assert task["status"] == "completed"
    assert task["result"]["content"] == [{"type": "text", "text": "counted to 4"}]
    assert messages and set(messages) <= {f"counted {i} of 4" for i in range(1, 5)}


async def test_slow_count_can_be_cancelled_and_needs_the_extension(server: MCPServer) -> None:
    declared = {"extensions": {TASKS: {}}}
    async with connect(server, protocol_version="2025-11-25", capabilities=declared) as client:
        task_id = (await client.call_tool("slow_count", {"n": 50}))["taskId"]
        await client.request("tasks/cancel", {"taskId": task_id})
        task = await client.request("tasks/get", {"taskId": task_id})
        assert task["status"] == "cancelled"
    async with connect(server, protocol_version="2025-11-25") as plain:
        with pytest.raises(RemoteError) as info:
            await plain.call_tool("slow_count", {"n": 1})
    assert info.value.code == MISSING_CAPABILITY


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize(("ok", "text"), [(True, "approved report"), (False, "rejected report")])
async def test_approve_asks_inside_its_task(
    server: MCPServer, era: str, ok: bool, text: str
) -> None:
    options: dict[str, Any] = {
        "protocol_version": era,
        "capabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
    }
    if era == "2026-07-28":
        options["initialize"] = False
    async with connect(server, **options) as client:
        task_id = (await client.call_tool("approve", {"item": "report"}))["taskId"]
        task, _ = await poll(client, task_id)
        assert task["status"] == "input_required"
        [(key, request)] = task["inputRequests"].items()
        assert request["params"]["message"] == "Approve report?"
        answer = {key: {"action": "accept", "content": {"ok": ok}}}
        await client.request("tasks/update", {"taskId": task_id, "inputResponses": answer})
        done, _ = await poll(client, task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": text}]
