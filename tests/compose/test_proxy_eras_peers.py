"""proxy() bridging eras with other projects' servers and clients, as real processes.

- A FastMCP server (its tools ask with handshake-era server→client requests, which it
  cannot do on 2026-07-28) over stdio, behind the proxy on Streamable HTTP, driven by
  the official Python SDK's client on 2026-07-28: the questions arrive as input rounds.
- The official SDK's dual-era server (``sdk_server_2026.py``, whose tools ask in
  2026-07-28 input rounds, two chained for ``profile``) over stdio as a 2026-07-28
  upstream, driven by a handshake-era client: the rounds arrive as ``elicitation/create``.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any

import mcp
import pytest
from mcp import types

from mcpkit import Client
from mcpkit.compose import proxy
from tests.client.http_servers import serve
from tests.interop.fixtures.peers import FIXTURES, Wire

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
FASTMCP = shlex.join([sys.executable, str(FIXTURES / "fastmcp_server.py"), "stdio"])
SDK_SERVER = str(FIXTURES / "sdk_server_2026.py")


async def test_fastmcp_behind_the_proxy_asks_the_sdk_client_in_input_rounds() -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        question = params.messages[0].content
        assert isinstance(question, types.TextContent)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"42 ({question.text})"),
            model="m",
        )

    server = proxy(FASTMCP, name="fastmcp-proxy")
    async with (
        serve(server.http_app()) as url,
        mcp.Client(url, elicitation_callback=elicit, sampling_callback=sample) as client,
    ):
        assert client.protocol_version == MODERN
        named = await client.call_tool("ask_name", {})
        answered = await client.call_tool("ask_model", {"question": "why?"})
    block = named.content[0]
    assert isinstance(block, types.TextContent) and not named.is_error, named
    assert block.text == "hello Ada"
    assert asked == ["What is your name?"]
    block = answered.content[0]
    assert isinstance(block, types.TextContent) and not answered.is_error, answered
    assert block.text == "42 (why?)"


async def test_the_sdks_input_rounds_are_elicitation_requests_to_a_handshake_client() -> None:
    asked: list[str] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        if params["message"] == "What is your name?":
            return {"action": "accept", "content": {"name": "Ada"}}
        return {"action": "accept", "content": {"color": "blue"}}

    # The upstream hop is recorded with the interop Wire: over stdio mcpkit's client sends
    # server/discover and initialize together, and the Wire checks each message against
    # the era it belongs to (the SDK refuses the initialize: this connection is 2026-07-28).
    wire = Wire()
    entry = {"command": sys.executable, "args": [SDK_SERVER, "stdio"], "trace": wire}
    server = proxy(entry, upstream_version=MODERN)
    async with Client(
        server=server, protocol_version=HANDSHAKE, elicitation_handler=elicit
    ) as client:
        result = await client.call_tool("profile", {})
        total = await client.call_tool("add", {"a": 2, "b": 3})
    assert result["content"][0]["text"] == "Ada likes blue", result
    assert asked == ["What is your name?", "Favourite colour, Ada?"]
    assert total["structuredContent"] == {"total": 5}
    assert wire.eras == [MODERN]
    rounds = [m for m in wire.sent("tools/call") if m["params"].get("inputResponses")]
    assert len(rounds) == 2  # the two chained input rounds, answered inside
    assert wire.check(received_too=True) > 5
