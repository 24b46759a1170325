"""proxy(Client(...)): the client is a template of the proxy's upstream connections.

Its transport options (command, URL, headers) and identity reach every connection the
proxy opens, its handlers do not (the downstream client answers), and its own live
connection is neither used nor closed by the proxy.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, Context, MCPServer
from mcpkit.client.transports.memory import MemoryTransport
from mcpkit.compose import ProxySource, proxy
from mcpkit.errors import ConfigurationError
from mcpkit.testing import connect
from tests.client.http_servers import serve

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"

ASKER = """
import os
from mcpkit import Context, MCPServer

server = MCPServer(name="asker", version="1.0.0")

@server.tool
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit(
        "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    return f"{answer.action}: {answer.content}"

@server.tool
def who(ctx: Context) -> str:
    info = ctx.client_info or {}
    return f"{info.get('name')} in {os.getpid()}"

@server.tool
def capabilities(ctx: Context) -> str:
    return ",".join(sorted(ctx.client_capabilities))
"""


def never(params: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError("the template's own handler answered a proxied request")


def ada(params: dict[str, Any]) -> dict[str, Any]:
    assert params["message"] == "Your name?"
    return {"action": "accept", "content": {"name": "Ada"}}


async def test_a_stdio_client_is_a_template_and_keeps_its_own_connection(
    tmp_path: Path,
) -> None:
    script = tmp_path / "asker.py"
    script.write_text(ASKER)
    template = Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(script)],
        client_info={"name": "template", "version": "1.0.0"},
        elicitation_handler=never,
        protocol_version=HANDSHAKE,
    )
    async with template:
        own = (await template.call_tool("who", {}))["content"][0]["text"]
        server = proxy(template, name="asker-proxy")
        async with Client(
            server=server, protocol_version=HANDSHAKE, elicitation_handler=ada
        ) as client:
            named = await client.call_tool("ask_name", {})
            assert named["content"][0]["text"] == "accept: {'name': 'Ada'}"
            proxied = (await client.call_tool("who", {}))["content"][0]["text"]
        # A downstream client that declares nothing: the template's handler is not its own.
        async with Client(server=server, protocol_version=HANDSHAKE) as bare:
            caps = await bare.call_tool("capabilities", {})
            assert caps["content"][0]["text"] == ""
        # The template's identity, on a process of the proxy's own.
        assert proxied.startswith("template in ") and proxied != own
        # The downstream session and its upstream are gone; the template's connection is not.
        assert template.connected
        assert (await template.call_tool("who", {}))["content"][0]["text"] == own


def upstream_asker() -> MCPServer:
    server = MCPServer(name="asker", version="1.0.0")

    @server.tool
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"{answer.action}: {answer.content}"

    return server


ASGIApp = Callable[..., Awaitable[None]]


def recording_headers(app: ASGIApp, seen: list[str | None]) -> ASGIApp:
    """``app``, noting each HTTP request's ``X-Team`` header."""

    async def wrapped(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            team = headers.get(b"x-team")
            seen.append(team.decode() if team is not None else None)
        await app(scope, receive, send)

    return wrapped


async def test_an_http_client_is_a_template_for_sessions_and_the_pool() -> None:
    teams: list[str | None] = []
    app = recording_headers(upstream_asker().http_app(), teams)
    async with serve(app) as url:
        template = Client(url=url, headers={"X-Team": "blue"}, elicitation_handler=never)
        server = proxy(template, name="http-asker-proxy")
        (source,) = (s for s in server.component_sources if isinstance(s, ProxySource))
        async with connect(server):  # the proxy's lifespan: it closes the pool
            # A handshake downstream session: its own upstream connection.
            async with Client(
                server=server, protocol_version=HANDSHAKE, elicitation_handler=ada
            ) as client:
                named = await client.call_tool("ask_name", {})
                assert named["content"][0]["text"] == "accept: {'name': 'Ada'}"
            # A 2026-07-28 downstream: a pooled connection, the question as an input round.
            async with Client(
                server=server, protocol_version=MODERN, elicitation_handler=ada
            ) as client:
                named = await client.call_tool("ask_name", {})
                assert named["content"][0]["text"] == "accept: {'name': 'Ada'}"
            assert len(source.pool.members) == 1
    # Every request the proxy sent up carried the template's header.
    assert teams and set(teams) == {"blue"}
    assert not template.connected  # never connected by the proxy


async def test_a_client_with_a_transport_object_is_refused() -> None:
    upstream = upstream_asker()
    with pytest.raises(ConfigurationError, match=r"transport=.*one connection"):
        proxy(Client(transport=MemoryTransport(upstream)))


def test_a_bad_target_names_every_kind_it_takes() -> None:
    with pytest.raises(ConfigurationError, match=r"an MCPServer or a Client, not int"):
        proxy(3)  # type: ignore[arg-type]
