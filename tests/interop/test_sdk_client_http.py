"""The official MCP Python SDK client (``mcp`` from PyPI) against mcpkit's HTTP transports.

Streamable HTTP (``streamable_http_client``) and the legacy HTTP+SSE transport
(``sse_client``), each against a real uvicorn server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import ClientSession, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from mcpkit.stores import MemoryEventStore
from tests.transports.conftest import TIMEOUT, demo_server, run_app

pytestmark = pytest.mark.filterwarnings("ignore:The logging capability is deprecated")


class Recorder:
    """Collects the logging notifications and answers elicitation."""

    def __init__(self) -> None:
        self.logs: list[Any] = []

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "SDK"})


async def exercise(session: ClientSession, recorder: Recorder) -> None:
    tools = await session.list_tools()
    assert {"add", "work", "ask", "reconnect"} <= {t.name for t in tools.tools}

    added = await session.call_tool("add", {"a": 19, "b": 23})
    assert not added.is_error
    assert added.content[0].text == "42"  # type: ignore[union-attr]

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    await session.set_logging_level("info")
    worked = await session.call_tool("work", {"steps": 3}, progress_callback=on_progress)  # type: ignore[call-overload]
    assert worked.content[0].text == "worked 3"
    assert [p[0] for p in progress] == [1, 2, 3]
    assert recorder.logs[-3:] == ["did step 1", "did step 2", "did step 3"]

    asked = await session.call_tool("ask", {})
    assert asked.content[0].text == "hello SDK"  # type: ignore[union-attr]

    resources = await session.list_resources()
    assert [str(r.uri) for r in resources.resources] == ["demo://greeting"]
    read = await session.read_resource("demo://greeting")
    assert read.contents[0].text == "hello from a resource"  # type: ignore[union-attr]
    templates = await session.list_resource_templates()
    assert [t.uri_template for t in templates.resource_templates] == ["demo://items/{item_id}"]
    item = await session.read_resource("demo://items/42")
    assert '"42"' in item.contents[0].text  # type: ignore[union-attr]

    prompts = await session.list_prompts()
    assert [p.name for p in prompts.prompts] == ["review"]
    prompt = await session.get_prompt("review", {"code": "x = 1"})
    assert prompt.messages[0].content.text == "Review:\nx = 1"  # type: ignore[union-attr]


@pytest.mark.parametrize("options", [{}, {"json_response": True}], ids=["sse", "json"])
async def test_sdk_streamable_http_client(options: dict[str, Any]) -> None:
    server = demo_server()
    app = server.http_app(**options)
    recorder = Recorder()
    async with run_app(app) as base:
        async with asyncio.timeout(TIMEOUT * 3):
            async with streamable_http_client(base + "/mcp") as (read, write):
                async with ClientSession(
                    read, write, logging_callback=recorder.log, elicitation_callback=recorder.elicit
                ) as session:
                    init = await session.initialize()
                    assert init.server_info.name == "http-demo"
                    assert len(app) == 1  # type: ignore[arg-type]
                    await exercise(session, recorder)
            # the SDK DELETEs its session on exit
            assert len(app) == 0  # type: ignore[arg-type]


async def test_sdk_client_resumes_a_stream_the_server_closed() -> None:
    """SEP-1699: the SDK reconnects with Last-Event-ID and gets the result by replay."""
    server = demo_server()
    app = server.http_app(event_store=MemoryEventStore(), retry_interval_ms=20)
    recorder = Recorder()
    async with run_app(app) as base:
        async with asyncio.timeout(TIMEOUT * 3):
            async with streamable_http_client(base + "/mcp") as (read, write):
                async with ClientSession(read, write, logging_callback=recorder.log) as session:
                    await session.initialize()
                    await session.set_logging_level("info")
                    result = await session.call_tool("reconnect", {})
                    assert result.content[0].text == "reconnected"  # type: ignore[union-attr]
                    assert "before close" in recorder.logs and "after close" in recorder.logs


async def test_sdk_sse_client_against_the_legacy_transport() -> None:
    server = demo_server()
    app = server.sse_app()
    recorder = Recorder()
    async with run_app(app) as base:
        async with asyncio.timeout(TIMEOUT * 3):
            async with sse_client(base + "/sse") as (read, write):
                async with ClientSession(
                    read, write, logging_callback=recorder.log, elicitation_callback=recorder.elicit
                ) as session:
                    await session.initialize()
                    assert len(app) == 1  # type: ignore[arg-type]
                    await exercise(session, recorder)
