"""Tasks across real ``mcpkit run --redis`` processes sharing a real ``redis-server``: a
node killed mid-task, tasks/get, tasks/update and tasks/cancel served by another node,
and a task followed again from a new connection to another node."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from uuid import uuid4

import pytest

from mcpkit import Client
from mcpkit.errors import INTERNAL_ERROR
from mcpkit.extensions.tasks.client import TaskHandle, TaskState, call_tool_task, tasks_client
from mcpkit.extensions.tasks.states import TaskStatus
from tests.cli.test_run import _running, _until_listening
from tests.extensions.tasks.node_app import HEARTBEAT_S
from tests.redis_server import free_port

pytestmark = pytest.mark.no_schema_check

APP = str(Path(__file__).with_name("node_app.py"))
MODERN = "2026-07-28"


@asynccontextmanager
async def nodes(redis_url: str, count: int = 2) -> AsyncIterator[list[tuple[str, object]]]:
    """``count`` processes of the app on one Redis prefix: (url, process) each."""
    prefix = f"test-{uuid4().hex}:"
    async with AsyncExitStack() as stack:
        out: list[tuple[str, object]] = []
        for _ in range(count):
            port = free_port()
            proc = await stack.enter_async_context(
                _running(
                    APP,
                    "--transport",
                    "http",
                    "--port",
                    str(port),
                    "--redis",
                    redis_url,
                    "--redis-prefix",
                    prefix,
                )
            )
            await _until_listening(port, proc)
            out.append((f"http://127.0.0.1:{port}/mcp", proc))
        yield out


def client(url: str, **options: object) -> Client:
    handler = {
        "elicitation_handler": lambda params: {"action": "accept", "content": {"name": "Ada"}}
    }
    return Client(
        url=url,
        protocol_version=MODERN,
        extensions=[tasks_client()],
        timeout=10,
        **handler,  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )


async def until(
    handle: TaskHandle, done: Callable[[TaskState], bool], limit: float = 10
) -> TaskState:
    deadline = time.monotonic() + limit
    while True:
        state = await handle.get()
        if done(state) or time.monotonic() > deadline:
            return state
        await asyncio.sleep(0.05)


async def test_a_task_of_a_killed_node_fails_within_the_liveness_window(
    redis_url: str, tmp_path: Path
) -> None:
    async with nodes(redis_url) as ((url_a, proc_a), (url_b, _)):
        async with client(url_a) as on_a, client(url_b) as on_b:
            handle = await call_tool_task(on_a, "wait_long", {"marker": str(tmp_path / "m")})
            assert isinstance(handle, TaskHandle)
            assert (await TaskHandle(on_b, handle.task_id).get()).status is TaskStatus.WORKING
            proc_a.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
            killed = time.monotonic()
            state = await until(TaskHandle(on_b, handle.task_id), lambda s: s.terminal)
            took = time.monotonic() - killed
    assert state.status is TaskStatus.FAILED, state
    assert state.error is not None and state.error["code"] == INTERNAL_ERROR
    assert "node running this task stopped" in state.error["message"]
    # The liveness window: the heartbeat's TTL (3 beats) and one sweep, with room for load.
    assert took < HEARTBEAT_S * 4 + 3, took


async def test_another_node_answers_get_update_and_cancel(redis_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    async with nodes(redis_url) as ((url_a, _), (url_b, _)):
        async with client(url_a) as on_a, client(url_b) as on_b:
            asked = await call_tool_task(on_a, "ask_name", {})
            assert isinstance(asked, TaskHandle)
            there = TaskHandle(on_b, asked.task_id)
            waiting = await until(there, lambda s: s.status is TaskStatus.INPUT_REQUIRED)
            assert waiting.input_requests is not None
            (key,) = waiting.input_requests
            await there.update({key: {"action": "accept", "content": {"name": "Bo"}}})
            done = await until(asked, lambda s: s.terminal)  # read back on the first node
            assert done.result is not None
            assert done.result["content"][0]["text"] == "hello Bo"

            long = await call_tool_task(on_a, "wait_long", {"marker": str(marker)})
            assert isinstance(long, TaskHandle)
            await TaskHandle(on_b, long.task_id).cancel()
            deadline = time.monotonic() + 30  # a loaded 2-core machine is slow to deliver it
            while not marker.exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert marker.read_text() == "cancelled"  # the handler on node A saw it
            assert (await long.get()).status is TaskStatus.CANCELLED


async def test_a_task_is_followed_again_from_a_new_connection_to_another_node(
    redis_url: str,
) -> None:
    seen: list[TaskState] = []
    async with nodes(redis_url) as ((url_a, _), (url_b, _)):
        async with client(url_a) as on_a:
            handle = await call_tool_task(on_a, "count", {"n": 10})
            assert isinstance(handle, TaskHandle)
        # The first connection is gone; a new client of another node picks the task up,
        # hears its progress (made on node A) and gets its result.
        sent: list[str] = []

        def trace(direction: str, message: dict[str, object]) -> None:
            if direction == "sent" and isinstance(message.get("method"), str):
                sent.append(str(message["method"]))

        async with client(url_b, trace=trace) as on_b:
            again = TaskHandle(on_b, handle.task_id)
            state = await again.wait(on_status=seen.append)
    assert state.status is TaskStatus.COMPLETED
    assert state.result is not None and state.result["content"][0]["text"] == "counted to 10"
    assert any(s.status_message and s.status_message.startswith("step") for s in seen)
    # Followed by listening: node A's moves reached node B's stream through Redis (a
    # poll every 100 ms would have sent about ten tasks/get).
    assert "subscriptions/listen" in sent
    assert sent.count("tasks/get") == 1, sent  # the first state only
