"""``@modelcontextprotocol/server-everything`` (npm) behind ``mcpkit proxy``, driven by the
official Python SDK's client.

The upstream is the pinned server-everything over stdio (a handshake-era server on the
TypeScript SDK, installed as ``tests/interop/fixtures/peers.py`` does). The proxy is the
``mcpkit proxy`` command, a real subprocess, serving:

- over stdio to the SDK's ``ClientSession`` (the handshake era): tools, progress,
  sampling and elicitation pass through as server→client requests;
- over Streamable HTTP to the SDK's ``Client``, which picks 2026-07-28: the upstream's
  sampling and elicitation requests become input-required rounds (era bridging).
"""

from __future__ import annotations

import asyncio
import shlex
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from tests.interop.fixtures.peers import NodePackage, install_server_everything
from tests.transports.stdio_peer import REPO

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TIMEOUT = 30.0


@pytest.fixture(scope="module")
def everything() -> NodePackage:
    return install_server_everything()


def upstream(everything: NodePackage) -> str:
    return shlex.join(everything.argv("stdio"))


class Peer:
    """The SDK client's handlers, and what they were asked."""

    def __init__(self) -> None:
        self.sampled: list[str] = []
        self.elicited: list[str] = []

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        content = params.messages[0].content
        assert isinstance(content, types.TextContent)
        self.sampled.append(content.text)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="MCP is a protocol (said the SDK)"),
            model="sdk-test-model",
        )

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params.message)
        return types.ElicitResult(
            action="accept",
            content={"name": "Ada", "check": True, "integer": 7, "number": 1.5},
        )


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_sdk_stdio_session_through_the_proxy(everything: NodePackage) -> None:
    peer = Peer()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpkit", "proxy", "--stdio", upstream(everything)],
        cwd=str(REPO),
    )
    steps: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    async with asyncio.timeout(TIMEOUT):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(
                read, write, sampling_callback=peer.sample, elicitation_callback=peer.elicit
            ) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "proxy"
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"echo", "get-sum", "trigger-sampling-request"} <= names
            assert text_of(await session.call_tool("echo", {"message": "hé"})) == "Echo: hé"
            summed = await session.call_tool("get-sum", {"a": 2, "b": 3})
            assert text_of(summed) == "The sum of 2 and 3 is 5."
            done = await session.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                progress_callback=on_progress,
            )
            assert "Long running operation completed" in text_of(done)
            sampled = await session.call_tool(
                "trigger-sampling-request", {"prompt": "What is MCP?", "maxTokens": 50}
            )
            assert "said the SDK" in text_of(sampled)
            elicited = await session.call_tool("trigger-elicitation-request", {})
            assert "Name: Ada" in text_of(elicited)
    assert steps == [1, 2, 3]
    assert peer.sampled and peer.sampled[0].endswith("What is MCP?")
    assert len(peer.elicited) == 1


@asynccontextmanager
async def proxy_over_http(command: str) -> AsyncIterator[str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *["-m", "mcpkit", "proxy", "--stdio", command, "-t", "http", "--port", "0"],
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(REPO),
    )
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)).decode()
        prefix = "mcpkit: serving 'proxy' on http://127.0.0.1:"
        assert line.startswith(prefix), line
        yield f"http://127.0.0.1:{int(line[len(prefix) :].split('/')[0])}/mcp"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), TIMEOUT)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def test_sdk_client_on_2026_gets_the_upstreams_questions_as_input_rounds(
    everything: NodePackage,
) -> None:
    peer = Peer()
    async with (
        asyncio.timeout(TIMEOUT),
        proxy_over_http(upstream(everything)) as url,
        mcp.Client(url, sampling_callback=peer.sample, elicitation_callback=peer.elicit) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        summed = await client.call_tool("get-sum", {"a": 2, "b": 3})
        assert text_of(summed) == "The sum of 2 and 3 is 5."
        sampled = await client.call_tool(
            "trigger-sampling-request", {"prompt": "What is MCP?", "maxTokens": 50}
        )
        assert "said the SDK" in text_of(sampled)
        elicited = await client.call_tool("trigger-elicitation-request", {})
        assert "Name: Ada" in text_of(elicited)
    assert len(peer.sampled) == 1 and len(peer.elicited) == 1
