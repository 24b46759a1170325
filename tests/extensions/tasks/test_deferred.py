"""A tool that asks in its own request, then continues as a task (SEP-2663 with SEP-2322
input rounds; the conformance suite's tasks-mrtr-composition), on both eras."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import Context, MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.extensions.tasks import continue_as_task, tasks_extension
from tests.extensions.tasks.test_records import valid
from tests.extensions.tasks.test_server import DECLARED, MODERN, terminal, until

pytestmark = pytest.mark.no_schema_check

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def deferred_server(seen: list[Any]) -> MCPServer:
    server = MCPServer(name="deferred", version="1")

    @server.tool
    async def greet_later(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME, key="user_name")
        name = (answer.content or {}).get("name")
        seen.append(await continue_as_task())
        seen.append(await continue_as_task())  # once only
        await ctx.progress(1, total=1, message="greeting")
        return f"Hello, {name}!"

    @server.tool
    async def ask_again(ctx: Context) -> str:
        first = await ctx.elicit("Name?", NAME)
        await continue_as_task()
        second = await ctx.elicit("Sure?", OK)  # now the task's input_required
        return f"{(first.content or {}).get('name')}: {(second.content or {}).get('ok')}"

    @server.tool
    async def quick(ctx: Context) -> str:
        return "answered in place"

    @server.tool
    async def plain() -> str:
        went = await continue_as_task()  # not a deferred call: goes on in place
        return f"went: {went}"

    server.add_extension(
        tasks_extension(
            tools={"greet_later": "required", "ask_again": "optional", "quick": "optional"},
            deferred=["greet_later", "ask_again", "quick"],
            poll_interval_ms=1,
        )
    )
    return server


def answer(key: str, content: dict[str, Any]) -> dict[str, Any]:
    return {key: {"action": "accept", "content": content}}


async def test_the_round_that_brings_the_answer_gets_the_task_on_2026_07_28() -> None:
    from mcpkit.testing import connect

    seen: list[Any] = []
    server = deferred_server(seen)
    caps = {"elicitation": {}, **DECLARED}
    async with connect(server, protocol_version=MODERN, initialize=False, capabilities=caps) as c:
        first = await c.call_tool("greet_later", {})
        assert first["resultType"] == "input_required" and "taskId" not in first
        assert list(first["inputRequests"]) == ["user_name"]
        second = await c.request(
            "tools/call",
            {
                "name": "greet_later",
                "arguments": {},
                "inputResponses": answer("user_name", {"name": "Alice"}),
                "requestState": first["requestState"],
            },
        )
        assert second["resultType"] == "task"
        assert "requestState" not in second and "inputRequests" not in second
        valid("CreateTaskResult", {k: v for k, v in second.items() if k != "_meta"})
        done = await until(c, second["taskId"], terminal)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Hello, Alice!"
    assert seen == [True, False]


async def test_a_handshake_session_asks_the_client_then_gets_the_task() -> None:
    from mcpkit.testing import connect

    seen: list[Any] = []
    caps = {"elicitation": {}, **DECLARED}
    handlers = {"elicitation/create": lambda p: {"action": "accept", "content": {"name": "Bo"}}}
    async with connect(deferred_server(seen), capabilities=caps, handlers=handlers) as c:
        created = await asyncio.create_task(c.call_tool("greet_later", {}))
        assert created["resultType"] == "task"
        done = await until(c, created["taskId"], terminal)
    assert done["result"]["content"][0]["text"] == "Hello, Bo!"


async def test_questions_after_the_escalation_are_the_tasks_own() -> None:
    from mcpkit.testing import connect

    caps = {"elicitation": {}, **DECLARED}
    async with connect(
        deferred_server([]), protocol_version=MODERN, initialize=False, capabilities=caps
    ) as c:
        first = await c.call_tool("ask_again", {})
        (key,) = first["inputRequests"]
        created = await c.request(
            "tools/call",
            {
                "name": "ask_again",
                "arguments": {},
                "inputResponses": answer(key, {"name": "Cy"}),
                "requestState": first["requestState"],
            },
        )
        task_id = created["taskId"]
        waiting = await until(c, task_id, lambda t: t["status"] == "input_required")
        (later,) = waiting["inputRequests"]
        await c.request(
            "tasks/update", {"taskId": task_id, "inputResponses": answer(later, {"ok": True})}
        )
        done = await until(c, task_id, terminal)
    assert done["result"]["content"][0]["text"] == "Cy: True"


async def test_a_deferred_tool_that_never_escalates_is_answered_in_place() -> None:
    from mcpkit.testing import connect

    async with connect(
        deferred_server([]), protocol_version=MODERN, initialize=False, capabilities=DECLARED
    ) as c:
        quick = await c.call_tool("quick", {})
        plain = await c.call_tool("plain", {})
    assert quick["resultType"] == "complete"
    assert quick["content"][0]["text"] == "answered in place"
    assert plain["content"][0]["text"] == "went: False"


def test_a_deferred_tool_must_be_a_task_tool() -> None:
    with pytest.raises(ConfigurationError, match="'nope' must be named in tools"):
        tasks_extension(tools={}, deferred=["nope"])


async def test_the_task_outlives_the_input_rounds_ttl_of_the_call_it_was() -> None:
    from mcpkit.testing import connect

    server = MCPServer(name="long", version="1")

    @server.tool
    async def long_after(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME)
        await continue_as_task()
        await asyncio.sleep(0.6)  # longer than the parked-call TTL below
        return f"done for {(answer.content or {}).get('name')}"

    server.add_extension(tasks_extension(tools={"long_after": "required"}, deferred=["long_after"]))
    server.input_rounds.ttl = 0.2  # a call paused for input is dropped after this
    caps = {"elicitation": {}, **DECLARED}
    async with connect(server, protocol_version=MODERN, initialize=False, capabilities=caps) as c:
        first = await c.call_tool("long_after", {})
        (key,) = first["inputRequests"]
        created = await c.request(
            "tools/call",
            {
                "name": "long_after",
                "arguments": {},
                "inputResponses": answer(key, {"name": "Di"}),
                "requestState": first["requestState"],
            },
        )
        done = await until(c, created["taskId"], terminal)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "done for Di"
