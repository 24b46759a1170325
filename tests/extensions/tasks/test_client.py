"""The tasks extension's client part against the real mcpkit tasks server, in memory, on
both eras: ``call_tool`` follows a task to its result (status, input, failure and
cancellation included) and :class:`TaskHandle` lets a caller steer a task by hand."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.errors import INVALID_PARAMS, MISSING_CAPABILITY, RemoteError
from mcpkit.extensions.tasks.client import (
    TaskHandle,
    TaskState,
    call_tool_task,
    tasks_client,
)
from mcpkit.extensions.tasks.server import TASKS
from mcpkit.extensions.tasks.states import TaskStatus
from tests.extensions.tasks.test_server import Probe, task_server

# The extension's methods and results are in no core schema.
pytestmark = pytest.mark.no_schema_check

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tasks_server.py"
ERAS = ["2026-07-28", "2025-11-25"]


@pytest.fixture
def example() -> Iterator[MCPServer]:
    """A fresh server of examples/tasks_server.py (slow_count, approve)."""
    spec = importlib.util.spec_from_file_location("tasks_server_for_client", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module.server
    finally:
        sys.modules.pop(spec.name, None)


def accept(ok: bool) -> Any:
    def handler(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": ok}}

    return handler


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("era", ERAS)
async def test_call_tool_returns_the_tasks_final_result(example: MCPServer, era: str) -> None:
    seen: list[TaskState] = []
    async with Client(
        server=example, protocol_version=era, extensions=[tasks_client(on_status=seen.append)]
    ) as client:
        result = await client.call_tool("slow_count", {"n": 3})
    assert text(result) == "counted to 3"
    assert "resultType" not in result or result["resultType"] == "complete"
    assert seen[0].status is TaskStatus.WORKING and seen[-1].status is TaskStatus.COMPLETED
    assert len({state.task_id for state in seen}) == 1


async def test_a_client_without_the_extension_is_refused_by_a_task_only_tool(
    example: MCPServer,
) -> None:
    async with Client(server=example, protocol_version="2026-07-28") as client:
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("slow_count", {"n": 1})
    assert caught.value.code == MISSING_CAPABILITY


async def test_status_messages_reach_on_status_and_the_progress_callback(
    example: MCPServer,
) -> None:
    statuses: list[str | None] = []
    reports: list[tuple[float, float | None, str | None]] = []

    def progress(value: float, total: float | None, message: str | None) -> None:
        reports.append((value, total, message))

    ext = tasks_client(on_status=lambda state: statuses.append(state.status_message))
    async with Client(server=example, protocol_version="2026-07-28", extensions=[ext]) as client:
        result = await client.call_tool("slow_count", {"n": 4}, progress=progress)
    assert text(result) == "counted to 4"
    steps = [m for m in statuses if m is not None and m.startswith("counted ")]
    assert steps, statuses  # at least one "counted i of 4" line was seen live
    assert steps == sorted(steps)
    values = [value for value, _, _ in reports]
    assert values == sorted(values) and len(set(values)) == len(values)  # increasing
    assert any(message in steps for _, _, message in reports)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("ok", "expected"), [(True, "approved"), (False, "rejected")])
async def test_input_required_is_answered_by_the_elicitation_handler(
    example: MCPServer, era: str, ok: bool, expected: str
) -> None:
    seen: list[TaskStatus] = []
    async with Client(
        server=example,
        protocol_version=era,
        elicitation_handler=accept(ok),
        extensions=[tasks_client(on_status=lambda state: seen.append(state.status))],
    ) as client:
        result = await client.call_tool("approve", {"item": "the report"})
    assert text(result) == f"{expected} the report"
    assert TaskStatus.INPUT_REQUIRED in seen


async def test_a_task_whose_input_cannot_be_given_is_cancelled(example: MCPServer) -> None:
    states: list[TaskState] = []

    def gone(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("the user went away")

    async with Client(
        server=example,
        protocol_version="2026-07-28",
        elicitation_handler=gone,
        extensions=[tasks_client(on_status=states.append)],
    ) as client:
        with pytest.raises(RuntimeError, match="went away"):
            await client.call_tool("approve", {"item": "x"})
        after = await TaskHandle(client, states[0].task_id).get()
    assert after.status is TaskStatus.CANCELLED  # nobody would ever answer it


@pytest.mark.parametrize("era", ERAS)
async def test_cancelling_the_caller_cancels_the_task_on_the_server(era: str) -> None:
    probe = Probe()
    states: list[TaskState] = []
    async with Client(
        server=task_server(probe),
        protocol_version=era,
        extensions=[tasks_client(on_status=states.append)],
    ) as client:
        call = asyncio.create_task(client.call_tool("wait", {}))
        await asyncio.wait_for(probe.started.wait(), 5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # The handler saw the cancellation, and the server recorded it.
        await asyncio.wait_for(probe.cancelled.wait(), 5)
        after = await TaskHandle(client, states[0].task_id).get()
    assert after.status is TaskStatus.CANCELLED


async def test_a_failed_task_raises_its_json_rpc_error() -> None:
    async with Client(
        server=task_server(Probe()), protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("protocol_error", {})
        tool_error = await client.call_tool("tool_error", {})
    assert caught.value.code == INVALID_PARAMS and "no such job" in str(caught.value)
    assert tool_error["isError"] is True  # a tool error is a completed task's result


async def test_an_optional_task_tool_is_followed_too() -> None:
    async with Client(
        server=task_server(Probe()), protocol_version="2025-11-25", extensions=[tasks_client()]
    ) as client:
        result = await client.call_tool("count", {"n": 2})
    assert text(result) == "counted to 2"


# -- the handle API ---------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_the_handle_is_driven_by_hand(example: MCPServer, era: str) -> None:
    # The handler would reject: the approval must come from the handle's own update.
    async with Client(
        server=example,
        protocol_version=era,
        elicitation_handler=accept(False),
        extensions=[tasks_client()],
    ) as client:
        handle = await call_tool_task(client, "approve", {"item": "the budget"})
        assert isinstance(handle, TaskHandle)
        state = handle.last
        assert state is not None
        for _ in range(100):
            if state.status is not TaskStatus.WORKING:
                break
            await asyncio.sleep(0.05)
            state = await handle.get()
        assert state.status is TaskStatus.INPUT_REQUIRED
        ((key, request),) = (state.input_requests or {}).items()
        assert request["method"] == "elicitation/create"
        await handle.update({key: {"action": "accept", "content": {"ok": True}}})
        final = await handle.wait(answer_inputs=False)
    assert final.status is TaskStatus.COMPLETED
    assert text(final.outcome()) == "approved the budget"


async def test_the_handle_cancels_the_task(example: MCPServer) -> None:
    async with Client(
        server=example, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        handle = await call_tool_task(client, "slow_count", {"n": 50})
        assert isinstance(handle, TaskHandle)
        await handle.cancel()
        state = await handle.get()
        assert state.status is TaskStatus.CANCELLED
        with pytest.raises(RemoteError, match="cancelled"):
            await handle.result()


async def test_a_task_is_resumed_by_id_from_a_new_client(example: MCPServer) -> None:
    # The first client is left alone once it has the id (not closed: in memory, closing
    # a connection still stops the tasks it started, a server-side limit for now).
    async with Client(
        server=example, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as first:
        handle = await call_tool_task(first, "slow_count", {"n": 2})
        assert isinstance(handle, TaskHandle)
        kept = handle.task_id  # what a caller would persist across a restart
        async with Client(
            server=example, protocol_version="2026-07-28", extensions=[tasks_client()]
        ) as second:
            resumed = TaskHandle(second, kept)
            assert (await resumed.get()).task_id == kept
            result = await resumed.result()
    assert text(result) == "counted to 2"


async def test_an_unknown_task_id_is_not_found(example: MCPServer) -> None:
    async with Client(
        server=example, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        with pytest.raises(RemoteError) as caught:
            await TaskHandle(client, "no-such-task").get()
    assert caught.value.code == INVALID_PARAMS


async def test_a_result_answered_in_place_is_returned_as_is() -> None:
    async with Client(
        server=task_server(Probe()), protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        result = await call_tool_task(client, "echo", {"text": "hi"})
    assert isinstance(result, dict) and text(result) == "echo hi"


@pytest.mark.parametrize("era", ERAS)
async def test_the_client_declares_the_extension_on_both_eras(example: MCPServer, era: str) -> None:
    async with Client(server=example, protocol_version=era, extensions=[tasks_client()]) as client:
        assert client.session.capabilities["extensions"] == {TASKS: {}}
        handle = await call_tool_task(client, "slow_count", {"n": 1})
    assert isinstance(handle, TaskHandle)  # the server saw the declaration: a task


async def test_a_failing_status_callback_does_not_stop_the_task(example: MCPServer) -> None:
    def broken(state: TaskState) -> None:
        raise RuntimeError("display broke")

    async with Client(
        server=example, protocol_version="2026-07-28", extensions=[tasks_client(on_status=broken)]
    ) as client:
        result = await client.call_tool("slow_count", {"n": 1})
    assert text(result) == "counted to 1"
