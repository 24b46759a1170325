"""Component sources: per-session components consulted by the list and call handlers."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.errors import ConfigurationError, InvalidParams, RemoteError
from mcpkit.server.request import Request
from mcpkit.server.session import ServerSession
from mcpkit.server.sources import ComponentSource
from mcpkit.testing import connect


class PerSession:
    """A source whose tool answers with a number of its own for each session."""

    def __init__(self) -> None:
        self.kinds = frozenset(
            {"tools", "resources", "resourceTemplates", "prompts", "completions"}
        )
        self.numbers: dict[ServerSession, int] = {}
        self.closed: list[ServerSession] = []
        self.served: list[str] = []

    def number(self, session: ServerSession) -> int:
        return self.numbers.setdefault(session, len(self.numbers) + 1)

    async def list_components(self, session: ServerSession, kind: str) -> list[dict[str, Any]]:
        n = self.number(session)
        entries: dict[str, list[dict[str, Any]]] = {
            "tools": [{"name": f"remote{n}", "title": "Remote", "inputSchema": {"type": "object"}}],
            "resources": [{"uri": f"remote://{n}", "name": "r"}],
            "resourceTemplates": [{"uriTemplate": "remote://{n}/x", "name": "t"}],
            "prompts": [{"name": f"greet{n}"}],
        }
        return entries[kind]

    async def serve(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        n = self.number(session)
        params = request.params
        self.served.append(request.method)
        if request.method == "tools/call":
            if params["name"] == "broken":
                raise InvalidParams("broken on purpose", data={"why": "test"})
            if params["name"] != f"remote{n}":
                return None
            return {"content": [{"type": "text", "text": f"session {n}"}]}
        if request.method == "resources/read":
            return {"contents": [{"uri": params["uri"], "text": f"read {n}", "_meta": {"k": 1}}]}
        if request.method == "prompts/get":
            return {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}
        if request.method == "completion/complete":
            return {"completion": {"values": ["far"], "total": 1, "hasMore": False}}
        return None

    def session_closed(self, session: ServerSession) -> None:
        self.closed.append(session)


def server_with_source() -> tuple[MCPServer, PerSession]:
    server = MCPServer(name="s", version="1")

    @server.tool
    def local(x: int) -> int:
        return x

    source = PerSession()
    assert server.add_component_source(source) is source
    return server, source


async def test_listings_add_each_sessions_own_entries_after_the_servers() -> None:
    server, _ = server_with_source()
    async with connect(server) as one, connect(server) as two:
        assert [t["name"] for t in await one.list_tools()] == ["local", "remote1"]
        assert [t["name"] for t in await two.list_tools()] == ["local", "remote2"]
        assert [r["uri"] for r in await one.list_resources()] == ["remote://1"]
        assert [t["name"] for t in await one.list_resource_templates()] == ["t"]
        assert [p["name"] for p in await two.list_prompts()] == ["greet2"]


async def test_sourced_entries_are_shaped_for_an_older_revision() -> None:
    server, _ = server_with_source()
    async with connect(server, protocol_version="2025-03-26") as client:
        remote = (await client.list_tools())[-1]
        assert remote["name"] == "remote1" and "title" not in remote


async def test_a_call_the_server_lacks_goes_to_the_source_of_its_session() -> None:
    server, source = server_with_source()
    async with connect(server) as one, connect(server) as two:
        await one.list_tools()
        await two.list_tools()
        result = await two.call_tool("remote2", {})
        assert result["content"][0]["text"] == "session 2"
        # The server's own tool never reaches the source.
        assert (await one.call_tool("local", {"x": 3}))["content"][0]["text"] == "3"
        assert source.served == ["tools/call"]


async def test_a_name_no_source_answers_is_unknown_as_before() -> None:
    server, _ = server_with_source()
    async with connect(server) as client:
        with pytest.raises(RemoteError, match="Unknown tool: remote9") as exc:
            await client.call_tool("remote9", {})
        assert exc.value.code == -32602


async def test_a_sources_error_keeps_its_code_and_data() -> None:
    server, _ = server_with_source()
    async with connect(server) as client:
        with pytest.raises(RemoteError, match="broken on purpose") as exc:
            await client.call_tool("broken", {})
        assert exc.value.code == -32602 and exc.value.data == {"why": "test"}


async def test_reads_gets_and_completions_the_server_lacks_are_sourced() -> None:
    server, _ = server_with_source()
    async with connect(server, protocol_version="2025-03-26") as client:
        read = await client.read_resource("remote://1")
        assert read["contents"] == [{"uri": "remote://1", "text": "read 1"}]  # no _meta there
        got = await client.get_prompt("greet1", {})
        assert got["messages"][0]["content"]["text"] == "hi"
        done = await client.complete({"type": "ref/prompt", "name": "greet1"}, "a", "f")
        assert done["values"] == ["far"]


async def test_the_servers_own_completions_win() -> None:
    server, source = server_with_source()

    @server.prompt
    def own(a: str) -> str:
        return a

    @server.completion(prompt="own", argument="a")
    def values(value: str) -> list[str]:
        return ["mine"]

    async with connect(server) as client:
        done = await client.complete({"type": "ref/prompt", "name": "own"}, "a", "")
        assert done["values"] == ["mine"]
        got = await client.get_prompt("own", {"a": "x"})
        assert got["messages"][0]["content"]["text"] == "x"
    assert source.served == []


async def test_capabilities_name_what_the_sources_serve() -> None:
    server = MCPServer(name="s", version="1")
    assert "prompts" not in server.capabilities()
    server.add_component_source(PerSession())
    caps = server.capabilities()
    assert {"resources", "prompts", "completions"} <= set(caps)


async def test_the_source_hears_when_each_session_ends() -> None:
    server, source = server_with_source()
    async with connect(server) as client:
        await client.list_tools()
        session = client.session
    assert source.closed == [session]


def test_a_source_is_checked_and_can_be_removed() -> None:
    server = MCPServer(name="s", version="1")
    with pytest.raises(ConfigurationError, match="component source"):
        server.add_component_source(object())  # type: ignore[arg-type]
    source = PerSession()
    assert isinstance(source, ComponentSource)
    server.add_component_source(source)
    server.remove_component_source(source)
    assert server.component_sources == () and server.sourced_kinds == frozenset()
    assert "prompts" not in server.capabilities()


async def test_subscriptions_are_recorded_then_offered_to_the_sources() -> None:
    server, source = server_with_source()
    async with connect(server) as client:
        await client.subscribe_resource("remote://1")
        assert client.session.subscriptions == {"remote://1"}
        await client.unsubscribe_resource("remote://1")
        assert client.session.subscriptions == set()
    assert source.served == ["resources/subscribe", "resources/unsubscribe"]
