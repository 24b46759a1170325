"""The official MCP Python SDK client (``mcp`` from PyPI) spawning mcpkit servers over stdio.

The SDK's ``stdio_client`` launches the fixture server as a subprocess, both
directly (``python stdio_server.py``, which calls ``run_stdio``) and through
``mcpkit run``, and uses everything a stdio client commonly does: tools with
structured output, resources and templates, prompts with arguments, progress
and log notifications, elicitation, and its own shutdown sequence (close stdin,
then SIGTERM).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from tests.transports.stdio_peer import FIXTURES, REPO, TIMEOUT

pytestmark = pytest.mark.filterwarnings("ignore:The logging capability is deprecated")

SERVER = str(FIXTURES / "stdio_server.py")
COMMANDS = {
    "run_stdio": [SERVER],
    "mcpkit-run": ["-m", "mcpkit", "run", SERVER],
}


class Recorder:
    def __init__(self) -> None:
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.elicitations: list[str] = []

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicitations.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "SDK"})


@pytest.mark.parametrize("command", sorted(COMMANDS))
async def test_sdk_stdio_client(command: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=COMMANDS[command], cwd=str(REPO))
    recorder = Recorder()
    async with asyncio.timeout(TIMEOUT * 3):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(
                read,
                write,
                logging_callback=recorder.log,
                elicitation_callback=recorder.elicit,
            ) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "stdio-fixture"
            assert init.server_info.version == "1.2.3"
            assert init.instructions == "A test server."

            # Tools, with and without structured output.
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert {"echo", "add", "progress", "chatty", "ask"} <= set(tools)
            assert tools["add"].output_schema is not None
            assert set(tools["add"].output_schema["properties"]) == {"total", "terms"}

            added = await session.call_tool("add", {"a": 19, "b": 23})
            assert not added.is_error
            assert added.structured_content == {"total": 42, "terms": 2}

            echoed = await session.call_tool("echo", {"text": "über ✓"})
            assert echoed.content[0].text == "über ✓"  # type: ignore[union-attr]

            # Progress notifications reach the per-call callback.
            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))

            done = await session.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
            assert done.content[0].text == "done"  # type: ignore[union-attr]
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

            # Log notifications reach the logging callback, filtered by the level set.
            await session.set_logging_level("info")
            await session.call_tool("chatty", {})
            assert [(entry.level, entry.data) for entry in recorder.logs] == [
                ("info", "an info line"),
                ("warning", {"detail": "a warning"}),
            ]
            assert recorder.logs[1].logger == "fixture"

            # A server→client request while the tool waits.
            asked = await session.call_tool("ask", {})
            assert asked.content[0].text == "hello SDK"  # type: ignore[union-attr]
            assert recorder.elicitations == ["What is your name?"]

            # Resources and a template.
            resources = await session.list_resources()
            assert [str(r.uri) for r in resources.resources] == ["fixture://greeting"]
            greeting = await session.read_resource("fixture://greeting")
            assert greeting.contents[0].text == "hello from a resource"  # type: ignore[union-attr]
            templates = await session.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "fixture://items/{item_id}"
            ]
            item = await session.read_resource("fixture://items/42")
            assert item.contents[0].mime_type == "application/json"
            assert '"id":"42"' in item.contents[0].text.replace(" ", "")  # type: ignore[union-attr]

            # Prompts with arguments (one defaulted, one given).
            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            assert {a.name: a.required for a in prompts["review"].arguments or []} == {
                "code": True,
                "language": False,
            }
            prompt = await session.get_prompt("review", {"code": "x = 1"})
            assert prompt.messages[0].content.text == "Review this python code:\nx = 1"  # type: ignore[union-attr]
            prompt = await session.get_prompt("review", {"code": "fn()", "language": "rust"})
            assert prompt.messages[0].content.text == "Review this rust code:\nfn()"  # type: ignore[union-attr]

            # An error from a tool's arguments is a tool error, not a protocol failure.
            bad = await session.call_tool("add", {"a": "not a number", "b": 1})
            assert bad.is_error


async def test_sdk_progress_read_together_with_the_result_reaches_the_callback() -> None:
    # The SDK matches a progress notification to its call when it reads it, before the
    # response in the same read settles the call: nothing is lost even when a server writes
    # them at once (unlike the TypeScript SDK's client: see test_ts_sdk_client.py).
    raw = REPO / "tests" / "client" / "fixtures" / "raw_server.py"
    params = StdioServerParameters(command=sys.executable, args=[str(raw), "one_write"])
    async with asyncio.timeout(TIMEOUT * 3):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen: list[list[float]] = []

            async def on_progress(value: float, total: float | None, message: Any) -> None:
                seen[-1].append(value)

            for _ in range(3):
                seen.append([])
                await session.call_tool("work", {}, progress_callback=on_progress)
            assert seen == [[0, 50, 100]] * 3
