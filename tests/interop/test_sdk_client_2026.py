"""The official MCP Python SDK client (``mcp`` 2.3 from PyPI) in its 2026-07-28 mode, against mcpkit.

``mcp.Client`` in its default ``mode="auto"`` probes ``server/discover`` and, when the
server lists 2026-07-28, drops the handshake: every request carries its own ``_meta``
envelope (``mcp/client/_probe.py``). These tests run it against mcpkit's real
Streamable HTTP app on uvicorn and against ``mcpkit run`` over stdio, and use what the
SDK client offers in that era: discover, tools (plain, structured, a tool error),
resources (and resource-not-found as -32602), prompts, an input-required round
answered by its elicitation callback (SEP-2322, ``mcp/client/_input_required.py``),
progress on the request's own stream and logging opted in per request
(``Client(log_level=...)`` stamps ``io.modelcontextprotocol/logLevel``).

The wire is recorded on the server side (``AsgiTap`` over HTTP, ``stdio_tap.py`` on
stdio) and every message both ways is validated against the 2026-07-28 schema.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from mcpkit import MCPServer
from tests import schema
from tests.interop.fixtures.wire_tap import STDIO_TAP, AsgiTap, check_exchanges, read_stdio_log
from tests.transports.conftest import demo_server, run_app
from tests.transports.stdio_peer import FIXTURES, REPO

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

V = "2026-07-28"
TIMEOUT = 20.0
STDIO_SERVER = str(FIXTURES / "stdio_server.py")


class Stats(BaseModel):
    total: int
    count: int


def modern_server() -> MCPServer:
    server = demo_server()

    @server.tool
    def stats(values: list[int]) -> Stats:
        """Sum and count (structured output)."""
        return Stats(total=sum(values), count=len(values))

    return server


class Peer:
    """The SDK client's callbacks: answers elicitation, collects logs and progress."""

    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.asked: list[str] = []
        self.progress: list[tuple[float, float | None, str | None]] = []

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "SDK"})

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_sdk_client_2026_over_streamable_http(json_response: bool) -> None:
    server = modern_server()
    tap = AsgiTap(server.http_app(json_response=json_response))
    peer = Peer()
    async with run_app(tap) as base, asyncio.timeout(TIMEOUT):
        async with Client(
            base + "/mcp",
            elicitation_callback=peer.elicit,
            logging_callback=peer.log,
            log_level="info",
        ) as client:
            # discover picked the stateless era: no initialize, no session.
            assert client.protocol_version == V
            assert client.server_info is not None and client.server_info.name == "http-demo"
            assert client.server_capabilities.tools is not None

            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"add", "ask", "work", "boom", "stats"} <= set(tools)
            assert tools["stats"].output_schema is not None

            added = await client.call_tool("add", {"a": 19, "b": 23})
            assert text(added) == "42" and not added.is_error
            stats = await client.call_tool("stats", {"values": [1, 2, 3]})
            assert stats.structured_content == {"total": 6, "count": 3}

            boom = await client.call_tool("boom", {})
            assert boom.is_error and "secret" not in text(boom)

            # Progress and logs ride the request's own response stream (an SSE stream
            # even when the app prefers JSON responses, as there are notifications).
            worked = await client.call_tool(
                "work", {"steps": 3}, progress_callback=peer.on_progress
            )
            assert text(worked) == "worked 3"
            assert peer.progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            assert peer.logs == ["did step 1", "did step 2", "did step 3"]

            # An input round: the first answer is input_required, the SDK asks its
            # elicitation callback and retries with inputResponses and requestState.
            asked = await client.call_tool("ask", {})
            assert text(asked) == "hello SDK"
            assert peer.asked == ["What is your name?"]

            read = await client.read_resource("demo://greeting")
            content = read.contents[0]
            assert isinstance(content, types.TextResourceContents)
            assert content.text == "hello from a resource"
            assert read.ttl_ms is not None and read.cache_scope is not None
            with pytest.raises(MCPError) as missing:
                await client.read_resource("demo://nothing")
            assert missing.value.error.code == -32602

            prompt = await client.get_prompt("review", {"code": "x = 1"})
            message = prompt.messages[0].content
            assert isinstance(message, types.TextContent) and message.text == "Review:\nx = 1"

        # Without the per-request logLevel opt-in the server sends no log lines.
        quiet = Peer()
        async with Client(base + "/mcp", logging_callback=quiet.log) as client:
            assert text(await client.call_tool("work", {"steps": 2})) == "worked 2"
        assert quiet.logs == []

    assert {e.revision for e in tap.exchanges} == {V}
    assert all("mcp-session-id" not in e.response_headers for e in tap.exchanges)

    discovers = tap.calls("server/discover")
    assert len(discovers) == 2  # one probe per client
    assert V in discovers[0].messages[0]["result"]["supportedVersions"]
    assert tap.calls("initialize") == []

    # The elicitation round on the wire: input_required, then the retry with the answer.
    first, retry = _ask_rounds(tap)
    interim = first.messages[-1]["result"]
    assert interim["resultType"] == "input_required"
    (key,) = interim["inputRequests"]
    retry_params = retry.body["params"]
    assert retry_params["requestState"] == interim["requestState"]
    assert retry_params["inputResponses"][key]["action"] == "accept"
    assert retry.messages[-1]["result"]["resultType"] == "complete"

    (missing_read,) = [
        e for e in tap.calls("resources/read") if e.body["params"]["uri"] == "demo://nothing"
    ]
    assert missing_read.messages[-1]["error"]["code"] == -32602

    logged = [e for e in tap.calls("tools/call") if e.body["params"]["name"] == "work"]
    assert logged[0].response_headers["content-type"].startswith("text/event-stream")
    assert [m.get("method") for m in logged[0].messages].count("notifications/progress") == 3
    if json_response:
        adds = [e for e in tap.calls("tools/call") if e.body["params"]["name"] == "add"]
        assert adds[0].response_headers["content-type"].startswith("application/json")
    assert logged[0].body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"
    assert "io.modelcontextprotocol/logLevel" not in logged[1].body["params"]["_meta"]

    assert check_exchanges(tap.exchanges) > 20


def _ask_rounds(tap: AsgiTap) -> tuple[Any, Any]:
    asks = [e for e in tap.calls("tools/call") if e.body["params"]["name"] == "ask"]
    assert len(asks) == 2, [a.body for a in asks]
    return asks[0], asks[1]


LAUNCHERS = {
    "run_stdio": [STDIO_SERVER],
    "mcpkit-run": ["-m", "mcpkit", "run", STDIO_SERVER],
}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
async def test_sdk_client_2026_over_stdio(launcher: str, tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(STDIO_TAP), str(log), "--", sys.executable, *LAUNCHERS[launcher]],
        cwd=str(REPO),
    )
    peer = Peer()
    async with asyncio.timeout(TIMEOUT):
        async with Client(
            params, elicitation_callback=peer.elicit, logging_callback=peer.log, log_level="info"
        ) as client:
            assert client.protocol_version == V
            assert client.server_info is not None and client.server_info.name == "stdio-fixture"

            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"echo", "add", "progress", "chatty", "ask"} <= tools
            echoed = await client.call_tool("echo", {"text": "über ✓"})
            assert text(echoed) == "über ✓"
            added = await client.call_tool("add", {"a": 19, "b": 23})
            assert added.structured_content == {"total": 42, "terms": 2}
            bad = await client.call_tool("add", {"a": "not a number", "b": 1})
            assert bad.is_error

            done = await client.call_tool(
                "progress", {"steps": 2}, progress_callback=peer.on_progress
            )
            assert text(done) == "done"
            assert peer.progress == [(1, 2, "step 1"), (2, 2, "step 2")]
            await client.call_tool("chatty", {})
            assert peer.logs == ["an info line", {"detail": "a warning"}]  # debug filtered out

            asked = await client.call_tool("ask", {})
            assert text(asked) == "hello SDK" and peer.asked == ["What is your name?"]

            item = await client.read_resource("fixture://items/7")
            content = item.contents[0]
            assert isinstance(content, types.TextResourceContents) and '"7"' in content.text
            with pytest.raises(MCPError) as missing:
                await client.read_resource("fixture://nothing")
            assert missing.value.error.code == -32602

            prompt = await client.get_prompt("review", {"code": "fn()", "language": "rust"})
            message = prompt.messages[0].content
            assert isinstance(message, types.TextContent)
            assert message.text == "Review this rust code:\nfn()"

            # Cancelling a call: on stdio the SDK sends notifications/cancelled.
            started = asyncio.Event()

            async def on_start(progress: float, total: float | None, message: str | None) -> None:
                started.set()

            slow = asyncio.create_task(
                client.call_tool("slow", {"seconds": TIMEOUT * 2}, progress_callback=on_start)
            )
            await started.wait()
            slow.cancel()
            with pytest.raises(asyncio.CancelledError):
                await slow
            assert text(await client.call_tool("echo", {"text": "after"})) == "after"

    wire = read_stdio_log(log)
    sent = [m for d, m in wire if d == "sent"]
    assert sent[0]["method"] == "server/discover"
    assert all(m.get("method") != "initialize" for m in sent)
    interim = [
        m["result"]
        for d, m in wire
        if d == "received" and m.get("result", {}).get("resultType") == "input_required"
    ]
    assert len(interim) == 1 and interim[0]["requestState"]
    assert [d for d, m in wire if "unparsed" in m] == []
    (slow_call,) = [m for m in sent if m.get("params", {}).get("name") == "slow"]
    (cancelled,) = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert cancelled["params"]["requestId"] == slow_call["id"]
    assert all(m.get("id") != slow_call["id"] for d, m in wire if d == "received")
    assert schema.assert_valid_conversation([(d, m, True) for d, m in wire], V) > 15


async def test_sdk_client_2026_listens_and_cancels_by_closing_the_stream() -> None:
    """``Client.listen`` (``subscriptions/listen``) and cancellation by closing the stream.

    The SDK client cancels a 2026-07-28 call over HTTP by dropping its response
    stream (no ``notifications/cancelled`` on this transport, 2026-07-28 cancellation);
    mcpkit must then stop the tool.
    """
    server = modern_server()
    started, stopped = asyncio.Event(), asyncio.Event()

    @server.tool
    async def hang() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await asyncio.sleep(TIMEOUT * 2)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "not cancelled"

    tap = AsgiTap(server.http_app())
    async with run_app(tap) as base, asyncio.timeout(TIMEOUT):
        async with Client(base + "/mcp") as client:
            call = asyncio.create_task(client.call_tool("hang", {}))
            await started.wait()
            call.cancel()
            await stopped.wait()  # the server stopped the tool when the stream closed
            assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"

            async with client.listen(
                resources_list_changed=True, resource_subscriptions=["demo://greeting"]
            ) as subscription:
                assert subscription.honored.resource_subscriptions == ["demo://greeting"]
                await server.resources.notify_updated("demo://greeting")
                await server.resources.notify_list_changed()
                events: list[str] = []
                async for event in subscription:
                    events.append(type(event).__name__)
                    if len(events) == 2:
                        break
            assert sorted(events) == ["ResourceUpdated", "ResourcesListChanged"]

    (hung,) = [e for e in tap.calls("tools/call") if e.body["params"]["name"] == "hang"]
    assert hung.messages == []  # no result was ever written for the cancelled call
    (listened,) = tap.calls("subscriptions/listen")
    methods = [m.get("method") for m in listened.messages]
    assert methods[0] == "notifications/subscriptions/acknowledged"
    assert {"notifications/resources/updated", "notifications/resources/list_changed"} <= set(
        methods
    )
    assert check_exchanges(tap.exchanges) > 5
