"""notifications/tasks on subscriptions/listen (SEP-2663 "Task Status Notifications"), in
memory: granted for the caller's own tasks, the current state at once, every move after,
the terminal status last; -32021 for a client without the extension."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.auth import AuthInfo
from mcpkit.errors import INVALID_PARAMS, MISSING_CAPABILITY
from mcpkit.extensions.tasks.server import TASKS
from tests.extensions.tasks.test_records import valid
from tests.extensions.tasks.test_server import MODERN, Probe, asking, modern, task_server, until

pytestmark = pytest.mark.no_schema_check

PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
SUB = "io.modelcontextprotocol/subscriptionId"


class Stream:
    """One subscriptions/listen request on a session of its own, and what it received."""

    def __init__(self, server: MCPServer, task_ids: Any, *, declared: bool = True) -> None:
        caps = {"extensions": {TASKS: {}}} if declared else {}
        params = {"notifications": {"taskIds": task_ids}, "_meta": {PV: "2026-07-28", CAPS: caps}}
        message = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": params}
        self.sent: list[dict[str, Any]] = []
        self.request = asyncio.ensure_future(server.create_session().handle(message, self.wire))

    async def wire(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def received(self, count: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(5):
            while len(self.sent) < count and not self.request.done():
                await asyncio.sleep(0.005)
        return self.sent

    def statuses(self) -> list[str]:
        return [
            m["params"]["status"] for m in self.sent if m.get("method") == "notifications/tasks"
        ]

    async def close(self) -> None:
        self.request.cancel()
        await asyncio.gather(self.request, return_exceptions=True)


async def test_a_listener_hears_the_current_state_then_each_move_until_the_end() -> None:
    probe = Probe()
    server = task_server(probe)
    async with asking(server, MODERN) as client:
        task_id = (await client.call_tool("asks", {}))["taskId"]
        await until(client, task_id, lambda t: t["status"] == "input_required")
        stream = Stream(server, [task_id, "no-such-task", task_id])
        ack, first = await stream.received(2)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        # What tasks/get says, at once: the question is in it.
        assert first["method"] == "notifications/tasks"
        valid("TaskStatusNotification", first)
        assert first["params"]["_meta"] == {SUB: 9}
        params = {k: v for k, v in first["params"].items() if k != "_meta"}
        polled = await client.request("tasks/get", {"taskId": task_id})
        assert params == {k: v for k, v in polled.items() if k not in ("resultType", "_meta")}
        (key,) = params["inputRequests"]
        await client.request(
            "tasks/update",
            {
                "taskId": task_id,
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            },
        )
        await stream.received(4)
        await asyncio.sleep(0.05)  # nothing follows the terminal status
        assert stream.statuses() == ["input_required", "working", "completed"]
        last = stream.sent[-1]
        valid("TaskStatusNotification", last)
        assert last["params"]["result"]["content"][0]["text"] == "answered accept: True"
        assert not stream.request.done()  # the stream stays open for other keys
        await stream.close()


async def test_a_finished_task_is_heard_once_with_its_result() -> None:
    server = task_server(Probe())
    async with modern(server) as client:
        task_id = (await client.call_tool("count", {"n": 1}))["taskId"]
        done = await until(client, task_id, lambda t: t["status"] == "completed")
        stream = Stream(server, [task_id])
        await stream.received(2)
        await asyncio.sleep(0.05)
        assert stream.statuses() == ["completed"]
        assert stream.sent[1]["params"]["result"] == done["result"]
        await stream.close()


async def test_a_cancel_is_heard_and_a_closed_stream_stops_watching() -> None:
    probe = Probe()
    server = task_server(probe)
    async with modern(server) as client:
        task_id = (await client.call_tool("wait", {}))["taskId"]
        await asyncio.wait_for(probe.started.wait(), 2)
        early = Stream(server, [task_id])
        await early.received(2)
        await early.close()
        stream = Stream(server, [task_id])
        await stream.received(2)
        await client.request("tasks/cancel", {"taskId": task_id})
        await stream.received(3)
        assert stream.statuses() == ["working", "cancelled"]
        assert early.statuses() == ["working"]  # closed before: heard nothing more
        await stream.close()


async def test_another_callers_task_is_not_granted_and_is_not_told_apart() -> None:
    probe = Probe()
    server = task_server(probe)
    async with modern(server, auth_info=AuthInfo(token="a", subject="alice")) as client:
        task_id = (await client.call_tool("wait", {}))["taskId"]
        stream = Stream(server, [task_id, "no-such-task"])  # no principal: not alice
        (ack,) = await stream.received(1)
        await asyncio.sleep(0.05)
        assert ack["params"]["notifications"] == {"taskIds": []}
        assert len(stream.sent) == 1
        await stream.close()
        probe.release.set()


async def test_a_client_without_the_extension_or_with_bad_ids_is_refused() -> None:
    server = task_server(Probe())
    for task_ids, declared, code in (
        (["x"], False, MISSING_CAPABILITY),
        ("x", True, INVALID_PARAMS),
        ([1], True, INVALID_PARAMS),
    ):
        stream = Stream(server, task_ids, declared=declared)
        answer = await asyncio.wait_for(stream.request, 5)
        assert stream.sent == []  # refused before any acknowledgment
        assert answer is not None and answer["error"]["code"] == code, answer
        if code == MISSING_CAPABILITY:
            assert answer["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
