"""Structured request logging: one JSON line per request, no arguments or tokens."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest

from mcpkit import MCPServer, ToolError
from mcpkit.errors import RemoteError
from mcpkit.middleware import request_logging
from mcpkit.middleware.request_log import target_of
from mcpkit.testing import connect
from tests.middleware.conftest import ALICE, STATELESS, demo


def lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [orjson.loads(r.getMessage()) for r in caplog.records if r.name == "mcpkit.requests"]


def logged_server(**options: Any) -> MCPServer:
    server = demo(middleware=[request_logging(**options)])

    @server.tool
    async def fail() -> str:
        """A tool error."""
        raise ToolError("nope")

    @server.tool
    async def slow() -> str:
        """Wait to be cancelled."""
        await asyncio.sleep(60)
        return "late"

    return server


async def test_one_line_per_request_with_its_outcome(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpkit.requests")
    server = logged_server()
    async with connect(server, auth_info=ALICE) as client:
        await client.call_tool("echo", {"text": "secret sauce"})
        await client.call_tool("fail", {})
        with pytest.raises(RemoteError):
            await client.read_resource("demo://missing")
        await client.list_tools()
    records = lines(caplog)
    assert [(r["method"], r.get("target"), r["outcome"]) for r in records] == [
        ("initialize", None, "ok"),
        ("tools/call", "echo", "ok"),
        ("tools/call", "fail", "tool_error"),
        ("resources/read", "demo://missing", "error"),
        ("tools/list", None, "ok"),
    ]
    call = records[1]
    assert call["subject"] == "alice" and call["client_id"] == "ui"
    assert call["transport"] == "memory" and call["revision"] == "2025-11-25"
    assert call["duration_ms"] >= 0 and call["request_id"] == 2
    assert records[3]["error_code"] == -32002  # resource not found, on 2025-11-25
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "secret sauce" not in text and "t-alice" not in text  # no arguments, no token
    assert [r.levelno for r in caplog.records if r.name == "mcpkit.requests"][3] == logging.WARNING


async def test_arguments_only_when_asked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpkit.requests")
    async with connect(logged_server(include_arguments=True), **STATELESS) as client:
        await client.call_tool("echo", {"text": "shown"})
    (record,) = lines(caplog)
    assert record["arguments"] == {"text": "shown"}
    assert record["revision"] == "2026-07-28" and "session" not in record


async def test_a_cancelled_request_is_logged_as_cancelled(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpkit.requests")
    async with connect(logged_server()) as client:
        task = asyncio.ensure_future(client.call_tool("slow", {}))
        await asyncio.sleep(0.05)
        await client.notify("notifications/cancelled", {"requestId": 2})
        with pytest.raises(RemoteError):
            await asyncio.wait_for(task, 5)
    assert lines(caplog)[-1]["outcome"] == "cancelled"


async def test_nothing_is_logged_when_the_logger_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcpkit.requests")
    async with connect(logged_server()) as client:
        await client.call_tool("echo", {"text": "x"})
    assert lines(caplog) == []


def test_targets_name_what_the_request_names() -> None:
    assert target_of("prompts/get", {"name": "greet"}) == "greet"
    assert target_of("resources/subscribe", {"uri": "a://b"}) == "a://b"
    assert target_of("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}}) == "p"
    assert target_of("completion/complete", {"ref": {"uri": "a://{x}"}}) == "a://{x}"
    assert target_of("tools/list", {}) is None
    assert target_of("tools/call", {"name": 3}) is None
