"""Tools without a Context parameter run in the request's own task on 2026-07-28.

Such a tool rarely asks for input, so it is not started as a pausable call (a
task, and the wake-ups between it and the request). If it does ask, through
:func:`mcpkit.current_context`, it is started again from the top as a pausable
call: the answer is right, and only its work before the question runs twice
(documented; a tool that asks should declare a ``Context`` parameter).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import CallNext, Context, MCPServer, MiddlewareContext, current_context
from mcpkit.client import Client
from mcpkit.server.context import progress_reported_to
from mcpkit.testing import connect

ERAS = ["2026-07-28", "2025-11-25"]


def make_server(runs: dict[str, int]) -> MCPServer:
    server = MCPServer(name="inline", version="1")

    @server.tool
    async def plain(text: str) -> str:
        runs["plain"] = runs.get("plain", 0) + 1
        return text.upper()

    @server.tool
    async def asks_deep_down() -> str:
        runs["asks"] = runs.get("asks", 0) + 1
        ctx = current_context()
        assert ctx is not None
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"hello {answer.content['name'] if answer.content else '?'}"

    @server.tool
    async def steps_deep_down() -> str:
        ctx = current_context()
        assert ctx is not None

        def charge() -> int:
            runs["charged"] = runs.get("charged", 0) + 1
            return 42

        receipt = await ctx.once("charge", charge)
        answer = await ctx.elicit(
            "Confirm?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        return f"receipt {receipt}, {answer.action}"

    return server


def answer(params: dict[str, Any]) -> dict[str, Any]:
    if "name" in params["requestedSchema"]["properties"]:
        return {"action": "accept", "content": {"name": "Ada"}}
    return {"action": "accept", "content": {"ok": True}}


@pytest.mark.parametrize("version", ERAS)
async def test_a_plain_tool_runs_once_and_answers(version: str) -> None:
    runs: dict[str, int] = {}
    server = make_server(runs)
    async with Client(server=server, protocol_version=version) as client:
        result = await client.call_tool("plain", {"text": "abc"})
    assert result["content"] == [{"type": "text", "text": "ABC"}]
    assert runs == {"plain": 1}
    assert len(server.input_rounds) == 0  # nothing parked


@pytest.mark.parametrize("version", ERAS)
async def test_a_plain_tool_that_asks_through_current_context_gets_its_answer(
    version: str,
) -> None:
    runs: dict[str, int] = {}
    async with Client(
        server=make_server(runs), protocol_version=version, elicitation_handler=answer
    ) as client:
        result = await client.call_tool("asks_deep_down", {})
    assert result["content"] == [{"type": "text", "text": "hello Ada"}]
    # 2026-07-28: started again from the top as a pausable call when it first asked.
    assert runs["asks"] == (2 if version == "2026-07-28" else 1)


@pytest.mark.parametrize("version", ERAS)
async def test_a_step_in_a_plain_tool_still_runs_once(version: str) -> None:
    """``ctx.once`` restarts the tool before running the step, so the step runs once."""
    runs: dict[str, int] = {}
    async with Client(
        server=make_server(runs), protocol_version=version, elicitation_handler=answer
    ) as client:
        result = await client.call_tool("steps_deep_down", {})
    assert result["content"] == [{"type": "text", "text": "receipt 42, accept"}]
    assert runs["charged"] == 1


async def test_detached_work_runs_in_its_callers_task_whatever_its_parameters() -> None:
    # Under progress_reported_to (a task of the tasks extension), a tool with a Context
    # parameter runs inline too: cancelling the caller's task cancels the tool.
    server = MCPServer(name="inline", version="1")
    seen: dict[str, Any] = {}

    @server.tool
    async def waits(ctx: Context) -> str:
        seen["task"] = asyncio.current_task()
        await asyncio.sleep(0)
        return "done"

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        return None

    async def detach(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        seen["caller"] = asyncio.current_task()
        with progress_reported_to(sink):
            return await call_next(ctx)

    server.add_middleware(detach)
    async with connect(server, protocol_version="2026-07-28", initialize=False) as client:
        assert (await client.call_tool("waits", {}))["content"][0]["text"] == "done"
    assert seen["task"] is seen["caller"]
