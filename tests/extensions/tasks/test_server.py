"""The tasks extension's server part in memory, on 2026-07-28 and a 2025-11-25 session:
task-augmented tools/call, tasks/get, tasks/cancel, tasks/update, TTL, owner binding."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mcpkit import Context, LifespanError, MCPServer, ToolError
from mcpkit.auth import AuthInfo
from mcpkit.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    ConfigurationError,
    InvalidParams,
    RemoteError,
)
from mcpkit.extensions import EXTENSIONS
from mcpkit.extensions.tasks.records import TaskRecord
from mcpkit.extensions.tasks.server import TASKS, tasks_extension
from mcpkit.extensions.tasks.store import MemoryTaskStore
from mcpkit.protocol.envelope import CLIENT_CAPABILITIES
from mcpkit.testing import InMemoryClient, connect
from tests.extensions.tasks.test_records import valid

# The extension's methods and results are in no core schema; the tests check them against
# the ext-tasks schema (valid(...)) instead.
pytestmark = pytest.mark.no_schema_check

MODERN = "2026-07-28"
DECLARED = {"extensions": {TASKS: {}}}


class Probe:
    """What the tools of the test server saw."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()


def task_server(probe: Probe, **options: Any) -> MCPServer:
    server = MCPServer(name="tasks", version="1")

    @server.tool
    async def count(n: int, ctx: Context) -> str:
        for i in range(n):
            await ctx.progress(i + 1, total=n, message=f"step {i + 1} of {n}")
            await asyncio.sleep(0.02)
        return f"counted to {n}"

    @server.tool
    async def wait(ctx: Context) -> str:
        probe.started.set()
        try:
            await probe.release.wait()
        except asyncio.CancelledError:
            probe.cancelled.set()
            raise
        return "released"

    @server.tool
    def echo(text: str) -> str:
        return f"echo {text}"

    @server.tool
    async def tool_error() -> str:
        raise ToolError("the job went wrong")

    @server.tool
    async def protocol_error() -> str:
        raise InvalidParams("no such job")

    ok_schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}

    @server.tool
    async def asks(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("OK?", ok_schema)
        except asyncio.CancelledError:
            probe.cancelled.set()
            raise
        return f"answered {answer.action}: {(answer.content or {}).get('ok')}"

    @server.tool
    async def asks_while_counting(ctx: Context) -> str:
        async def count() -> None:
            for i in range(20):
                await ctx.progress(i, message=f"still here {i}")
                await asyncio.sleep(0.01)

        counting = asyncio.create_task(count())
        answer = await ctx.elicit("OK?", ok_schema)
        await counting
        return f"answered {answer.action}"

    @server.tool
    async def asks_twice(ctx: Context) -> str:
        one, two = await asyncio.gather(
            ctx.elicit("One?", ok_schema), ctx.elicit("Two?", ok_schema)
        )
        return f"{one.action} and {two.action}"

    tools = {
        "asks": "required",
        "asks_while_counting": "required",
        "asks_twice": "required",
        "count": "optional",
        "wait": "required",
        "tool_error": "required",
        "protocol_error": "required",
    }
    server.add_extension(tasks_extension(tools=tools, **options))  # type: ignore[arg-type]
    return server


def modern(server: MCPServer, **options: Any) -> InMemoryClient:
    return connect(
        server, protocol_version=MODERN, initialize=False, capabilities=DECLARED, **options
    )


def undeclared() -> dict[str, Any]:
    """A 2026-07-28 request's ``_meta`` whose client capabilities lack the extension."""
    return {"_meta": {CLIENT_CAPABILITIES: {}}}


async def get(client: InMemoryClient, task_id: str) -> dict[str, Any]:
    return await client.request("tasks/get", {"taskId": task_id})


async def until(
    client: InMemoryClient, task_id: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    for _ in range(300):
        task = await get(client, task_id)
        if done(task):
            return task
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} never got there: {task}")


def terminal(task: dict[str, Any]) -> bool:
    return task["status"] in ("completed", "failed", "cancelled")


async def refused(code: int, call: Any) -> RemoteError:
    with pytest.raises(RemoteError) as info:
        await call
    assert info.value.code == code, info.value
    return info.value


# -- advertising and deciding -----------------------------------------------------------------


def test_the_extension_is_registered_and_advertised_with_no_settings() -> None:
    assert EXTENSIONS[TASKS] == "mcpkit.extensions.tasks"
    server = task_server(Probe())
    assert server.extension_capabilities() == {TASKS: {}}
    valid("TasksExtensionCapability", server.extension_capabilities()[TASKS])


async def test_a_task_is_created_polled_and_completed_with_progress_as_status() -> None:
    async with modern(task_server(Probe(), poll_interval_ms=1)) as client:
        created = await client.call_tool("count", {"n": 5})
        valid("CreateTaskResult", created)
        assert created["resultType"] == "task" and created["status"] == "working"
        assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] == 1
        assert "result" not in created and "task" not in created
        messages: set[str] = set()

        def seen(task: dict[str, Any]) -> bool:
            valid("GetTaskResult", task)
            if "statusMessage" in task and task["status"] == "working":
                messages.add(task["statusMessage"])
            return terminal(task)

        done = await until(client, created["taskId"], seen)
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "counted to 5"}]
    assert "resultType" not in done["result"]
    assert messages and messages <= {f"step {i} of 5" for i in range(1, 6)}


async def test_the_task_is_stored_before_the_create_result_goes_out() -> None:
    class SlowStore(MemoryTaskStore):
        async def create(self, record: TaskRecord) -> None:
            await asyncio.sleep(0.05)  # a store that takes its time (a network round trip)
            await super().create(record)

    probe = Probe()
    async with modern(task_server(probe, store=SlowStore())) as client:
        created = await client.call_tool("wait", {})
        assert (await get(client, created["taskId"]))["status"] == "working"
        probe.release.set()


async def test_the_server_decides_by_the_tool_and_the_requests_capabilities() -> None:
    async with modern(task_server(Probe())) as client:
        # Not declared: an optional tool runs in place, a required one is -32021.
        params = {"name": "count", "arguments": {"n": 1}, **undeclared()}
        in_place = await client.request("tools/call", params)
        assert in_place["resultType"] == "complete" and "taskId" not in in_place
        assert in_place["content"][0]["text"] == "counted to 1"
        error = await refused(
            MISSING_CAPABILITY,
            client.request("tools/call", {"name": "wait", "arguments": {}, **undeclared()}),
        )
        assert error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
        # Declared: a tool not named stays synchronous.
        assert (await client.call_tool("echo", {"text": "hi"}))["content"][0]["text"] == "echo hi"


async def test_a_tool_error_completes_and_a_protocol_error_fails_the_task() -> None:
    async with modern(task_server(Probe())) as client:
        tool = await client.call_tool("tool_error", {})
        protocol = await client.call_tool("protocol_error", {})
        completed = await until(client, tool["taskId"], terminal)
        failed = await until(client, protocol["taskId"], terminal)
    assert completed["status"] == "completed" and completed["result"]["isError"] is True
    assert "the job went wrong" in completed["result"]["content"][0]["text"]
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"]["code"] == INVALID_PARAMS
    assert failed["error"]["message"] == "no such job"
    valid("GetTaskResult", failed)


def asking(server: MCPServer, era: str) -> InMemoryClient:
    capabilities = {"elicitation": {}, **DECLARED}
    if era == MODERN:
        return connect(server, protocol_version=era, initialize=False, capabilities=capabilities)
    return connect(server, protocol_version=era, capabilities=capabilities)


def waiting(task: dict[str, Any]) -> bool:
    return task["status"] != "working"


@pytest.mark.parametrize("era", [MODERN, "2025-11-25"])
async def test_ctx_elicit_in_a_task_is_an_input_request_answered_by_tasks_update(
    era: str,
) -> None:
    async with asking(task_server(Probe()), era) as client:
        task_id = (await client.call_tool("asks", {}))["taskId"]
        parked = await until(client, task_id, waiting)
        valid("GetTaskResult", parked)
        assert parked["status"] == "input_required"
        (key, request), *more = parked["inputRequests"].items()
        assert not more and request["method"] == "elicitation/create"
        assert request["params"]["message"] == "OK?"
        # Not sent to the client as a request of its own: it is in the task.
        assert not [m for m in client.received if m.get("method") == "elicitation/create"]
        answer = {"action": "accept", "content": {"ok": True}}
        ack = await client.request(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}
        )
        assert ack["resultType"] == "complete" and "status" not in ack
        done = await until(client, task_id, terminal)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "answered accept: True"


async def test_two_questions_at_once_are_listed_together_and_answered_in_parts() -> None:
    async with asking(task_server(Probe()), MODERN) as client:
        task_id = (await client.call_tool("asks_twice", {}))["taskId"]
        parked = await until(client, task_id, lambda t: len(t.get("inputRequests", {})) == 2)
        first, second = sorted(parked["inputRequests"])
        accept = {"action": "accept", "content": {"ok": True}}
        # Unknown keys are ignored; a partial answer leaves only the other key, at once.
        responses = {first: accept, "no-such-key": accept}
        await client.request("tasks/update", {"taskId": task_id, "inputResponses": responses})
        partial = await get(client, task_id)
        assert partial["status"] == "input_required"
        assert list(partial["inputRequests"]) == [second]
        # An answered key answered again changes nothing.
        await client.request("tasks/update", {"taskId": task_id, "inputResponses": responses})
        decline = {second: {"action": "decline"}}
        await client.request("tasks/update", {"taskId": task_id, "inputResponses": decline})
        done = await until(client, task_id, terminal)
    assert done["result"]["content"][0]["text"] == "accept and decline"


async def test_progress_never_replaces_the_outstanding_questions() -> None:
    async with asking(task_server(Probe(), poll_interval_ms=1), MODERN) as client:
        task_id = (await client.call_tool("asks_while_counting", {}))["taskId"]
        parked = await until(client, task_id, waiting)
        for _ in range(10):  # while the tool keeps reporting progress
            await asyncio.sleep(0.02)
            task = await get(client, task_id)
            assert task["status"] == "input_required", task
            assert list(task["inputRequests"]) == list(parked["inputRequests"])
        [key] = parked["inputRequests"]
        answer = {key: {"action": "cancel"}}
        await client.request("tasks/update", {"taskId": task_id, "inputResponses": answer})
        done = await until(client, task_id, terminal)
    assert done["result"]["content"][0]["text"] == "answered cancel"


async def test_cancelling_a_task_waiting_for_input_cancels_its_handler() -> None:
    probe = Probe()
    async with asking(task_server(probe), MODERN) as client:
        task_id = (await client.call_tool("asks", {}))["taskId"]
        await until(client, task_id, waiting)
        await client.request("tasks/cancel", {"taskId": task_id})
        await asyncio.wait_for(probe.cancelled.wait(), 2)
        task = await get(client, task_id)
    assert task["status"] == "cancelled" and "inputRequests" not in task


# -- tasks/cancel, TTL ------------------------------------------------------------------------


async def test_cancel_reaches_the_running_handler_and_is_acknowledged_again() -> None:
    probe = Probe()
    async with modern(task_server(probe)) as client:
        task_id = (await client.call_tool("wait", {}))["taskId"]
        await asyncio.wait_for(probe.started.wait(), 2)
        ack = await client.request("tasks/cancel", {"taskId": task_id})
        assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
        await asyncio.wait_for(probe.cancelled.wait(), 2)
        assert (await get(client, task_id))["status"] == "cancelled"
        # Idempotent on a terminal task, and changes nothing.
        await client.request("tasks/cancel", {"taskId": task_id})
        assert (await get(client, task_id))["status"] == "cancelled"


async def test_cancelling_a_finished_task_keeps_its_result() -> None:
    async with modern(task_server(Probe())) as client:
        task_id = (await client.call_tool("count", {"n": 1}))["taskId"]
        await until(client, task_id, terminal)
        await client.request("tasks/cancel", {"taskId": task_id})
        task = await get(client, task_id)
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "counted to 1"


async def test_a_task_past_its_ttl_is_gone_and_its_handler_cancelled() -> None:
    probe = Probe()
    async with modern(task_server(probe, ttl_ms=150)) as client:
        created = await client.call_tool("wait", {})
        assert created["ttlMs"] == 150
        await asyncio.wait_for(probe.cancelled.wait(), 2)
        await asyncio.sleep(0.05)
        await refused(INVALID_PARAMS, get(client, created["taskId"]))


async def test_a_stopping_server_fails_its_running_tasks() -> None:
    probe = Probe()
    store = MemoryTaskStore()
    server = task_server(probe, store=store)
    async with modern(server) as client:
        task_id = (await client.call_tool("wait", {}))["taskId"]
        await asyncio.wait_for(probe.started.wait(), 2)
    record = await store.get(task_id)
    assert record is not None and record.status == "failed"
    assert record.error is not None and record.error["code"] == INTERNAL_ERROR
    assert probe.cancelled.is_set()


# -- who may see a task; errors ---------------------------------------------------------------


async def test_a_task_is_visible_only_to_the_principal_that_created_it() -> None:
    probe = Probe()
    server = task_server(probe)
    alice = AuthInfo(token="a", subject="alice")
    async with modern(server, auth_info=alice) as client:
        task_id = (await client.call_tool("wait", {}))["taskId"]
        await asyncio.wait_for(probe.started.wait(), 2)
        # Another principal: answered exactly as an unknown id, and cannot cancel.
        client.auth_info = AuthInfo(token="b", subject="bob")
        theirs = await refused(INVALID_PARAMS, get(client, task_id))
        unknown = await refused(INVALID_PARAMS, get(client, "no-such-task"))
        assert theirs.message.replace(task_id, "ID") == unknown.message.replace(
            "no-such-task", "ID"
        )
        await refused(INVALID_PARAMS, client.request("tasks/cancel", {"taskId": task_id}))
        await refused(INVALID_PARAMS, client.request("tasks/update", {"taskId": task_id}))
        # Unauthenticated is not alice either.
        client.auth_info = None
        await refused(INVALID_PARAMS, get(client, task_id))
        # A new token of the same subject is the same principal.
        client.auth_info = AuthInfo(token="a2", subject="alice")
        assert (await get(client, task_id))["status"] == "working"
        assert not probe.cancelled.is_set()
        probe.release.set()
        assert (await until(client, task_id, terminal))["status"] == "completed"


async def test_the_error_codes_the_extension_names() -> None:
    async with modern(task_server(Probe())) as client:
        task_id = (await client.call_tool("count", {"n": 1}))["taskId"]
        for method in ("tasks/get", "tasks/cancel", "tasks/update"):
            params = {"taskId": task_id, **undeclared()}
            await refused(MISSING_CAPABILITY, client.request(method, params))
            await refused(INVALID_PARAMS, client.request(method, {"taskId": "unknown"}))
            await refused(INVALID_PARAMS, client.request(method, {}))
        # Gone from the extension (tasks/result) or left out on purpose (tasks/list).
        for method in ("tasks/result", "tasks/list"):
            await refused(METHOD_NOT_FOUND, client.request(method, {"taskId": task_id}))
        # tasks/update: responses for unknown keys are ignored, the ack carries no task.
        ack = await client.request(
            "tasks/update", {"taskId": task_id, "inputResponses": {"nope": {"action": "cancel"}}}
        )
        assert ack["resultType"] == "complete" and "taskId" not in ack and "status" not in ack


# -- the handshake era ------------------------------------------------------------------------


async def test_a_2025_11_25_session_that_declared_the_extension_gets_tasks() -> None:
    server = task_server(Probe())
    async with connect(server, protocol_version="2025-11-25", capabilities=DECLARED) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["capabilities"]["extensions"] == {TASKS: {}}
        created = await client.call_tool("count", {"n": 2})
        assert created["resultType"] == "task"
        done = await until(client, created["taskId"], terminal)
        assert done["result"]["content"][0]["text"] == "counted to 2"
    async with connect(server, protocol_version="2025-11-25") as plain:
        assert (await plain.call_tool("count", {"n": 1}))["content"][0]["text"] == "counted to 1"
        await refused(MISSING_CAPABILITY, plain.call_tool("wait", {}))
        await refused(MISSING_CAPABILITY, get(plain, created["taskId"]))


# -- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"tools": {"x": "always"}}, "tools"),
        ({"ttl_ms": 0}, "ttl_ms"),
        ({"poll_interval_ms": None}, "poll_interval_ms"),
        ({"heartbeat_s": -1}, "heartbeat_s"),
        ({"store": object()}, "TaskStore"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        tasks_extension(**options)


async def test_a_tool_named_but_not_served_is_refused_at_start() -> None:
    server = MCPServer(name="tasks", version="1")
    server.add_extension(tasks_extension(tools={"missing": "required"}))
    with pytest.raises(LifespanError, match=r"names tools the server does not have: \['missing'\]"):
        async with connect(server):
            pass


# -- progress throttling, liveness, sync tools ------------------------------------------------


async def test_progress_is_stored_at_most_once_per_poll_interval() -> None:
    async with modern(task_server(Probe(), poll_interval_ms=60_000)) as client:
        task_id = (await client.call_tool("count", {"n": 5}))["taskId"]
        messages = set()
        while (task := await get(client, task_id))["status"] == "working":
            messages.add(task.get("statusMessage"))
            await asyncio.sleep(0.005)
    # The first step is written; the four after it fall within the interval.
    assert messages <= {None, "step 1 of 5"} and "step 1 of 5" in messages
    assert task["status"] == "completed"


async def test_the_server_sweeps_the_tasks_of_a_dead_node() -> None:
    store = MemoryTaskStore()
    orphan = TaskRecord.new(ttl_ms=60_000, node_id="node-that-died")
    await store.create(orphan)
    async with modern(task_server(Probe(), store=store, heartbeat_s=0.01)):
        for _ in range(200):
            record = await store.get(orphan.task_id)
            if record is not None and record.terminal:
                break
            await asyncio.sleep(0.01)
    assert record is not None and record.status == "failed"
    assert record.error is not None and record.error["code"] == INTERNAL_ERROR


async def test_a_sync_tool_asks_inside_a_task_from_its_thread() -> None:
    server = MCPServer(name="tasks", version="1")

    @server.tool
    def asks_from_a_thread(ctx: Context) -> str:
        answer = ctx.elicit("OK?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"answered {answer.action}"

    server.add_extension(tasks_extension(tools={"asks_from_a_thread": "required"}))
    async with asking(server, MODERN) as client:
        task_id = (await client.call_tool("asks_from_a_thread", {}))["taskId"]
        [key] = (await until(client, task_id, waiting))["inputRequests"]
        answer = {key: {"action": "decline"}}
        await client.request("tasks/update", {"taskId": task_id, "inputResponses": answer})
        task = await until(client, task_id, terminal)
    assert task["result"]["content"][0]["text"] == "answered decline"
