"""A client following a task listens for its notifications/tasks on 2026-07-28 instead of
polling, and polls at the server's interval where it cannot listen (the handshake era)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mcpkit import Client
from mcpkit.extensions.tasks.client import TaskState, tasks_client
from mcpkit.extensions.tasks.states import TaskStatus
from tests.extensions.tasks.test_server import Probe, task_server

pytestmark = pytest.mark.no_schema_check

SLOW_POLL_MS = 3_000  # a poll would cost this much: listening must not wait for it


async def follow_wait(era: str) -> tuple[float, list[str], list[TaskState]]:
    """Follow the `wait` tool released at once: (seconds, methods sent, states seen)."""
    probe = Probe()
    sent: list[str] = []
    states: list[TaskState] = []

    def trace(direction: str, message: dict[str, Any]) -> None:
        if direction == "sent" and "method" in message:
            sent.append(message["method"])

    async with Client(
        server=task_server(probe, poll_interval_ms=SLOW_POLL_MS),
        protocol_version=era,
        extensions=[tasks_client(on_status=states.append)],
        trace=trace,
    ) as client:
        call = asyncio.create_task(client.call_tool("wait", {}))
        await asyncio.wait_for(probe.started.wait(), 5)
        await asyncio.sleep(0.2)  # the follower is waiting now
        began = time.monotonic()
        probe.release.set()
        result = await asyncio.wait_for(call, 10)
        took = time.monotonic() - began
    assert result["content"][0]["text"] == "released"
    return took, sent, states


async def test_on_2026_07_28_the_follower_hears_the_end_without_polling() -> None:
    took, sent, states = await follow_wait("2026-07-28")
    assert took < SLOW_POLL_MS / 1000 / 2, took
    assert "tasks/get" not in sent
    assert "subscriptions/listen" in sent
    assert [s.status for s in states] == [TaskStatus.WORKING, TaskStatus.COMPLETED]
    assert states[-1].result is not None


async def test_on_a_handshake_session_the_follower_polls_at_the_servers_interval() -> None:
    took, sent, states = await follow_wait("2025-11-25")
    assert took > 0.5, took  # waited for its next poll
    assert "tasks/get" in sent and "subscriptions/listen" not in sent
    assert states[-1].status is TaskStatus.COMPLETED


async def test_tasks_followed_at_once_on_one_session_are_all_heard() -> None:
    probe = Probe()
    sent: list[str] = []

    def trace(direction: str, message: dict[str, Any]) -> None:
        if direction == "sent" and "method" in message:
            sent.append(message["method"])

    async with Client(
        server=task_server(probe, poll_interval_ms=SLOW_POLL_MS),
        protocol_version="2026-07-28",
        extensions=[tasks_client()],
        trace=trace,
    ) as client:
        calls = [asyncio.create_task(client.call_tool("wait", {})) for _ in range(3)]
        await asyncio.sleep(0.3)  # every follower is waiting now
        probe.release.set()
        results = await asyncio.wait_for(asyncio.gather(*calls), SLOW_POLL_MS / 1000 / 2)
    assert [r["content"][0]["text"] for r in results] == ["released"] * 3
    assert "tasks/get" not in sent
