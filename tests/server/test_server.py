"""MCPServer: capabilities, server info per revision, introspection, sessions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import CapabilityError, Context, InvalidParams, MCPServer, ServerLimits, current_context
from mcpkit.errors import ConfigurationError
from mcpkit.protocol.lifecycle import State
from mcpkit.testing import connect

ICONS = [{"src": "https://example.com/icon.png", "mimeType": "image/png"}]


def full_server() -> MCPServer:
    server = MCPServer(
        name="full",
        version="2.0.0",
        title="Full Server",
        description="Does everything",
        website_url="https://example.com",
        icons=ICONS,
        instructions="Be nice.",
    )

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.prompt
    def hello() -> str:
        return "hi"

    @server.resource("test://x")
    def x() -> str:
        return "x"

    return server


@pytest.mark.parametrize(
    ("version", "keys"),
    [
        ("2024-11-05", {"name", "version"}),
        ("2025-03-26", {"name", "version"}),
        ("2025-06-18", {"name", "version", "title"}),
        ("2025-11-25", {"name", "version", "title", "description", "websiteUrl", "icons"}),
    ],
)
async def test_server_info_is_shaped_per_revision(version: str, keys: set[str]) -> None:
    async with connect(full_server(), protocol_version=version) as client:
        assert client.initialize_result is not None
        info = client.initialize_result["serverInfo"]
    assert set(info) == keys
    assert info["name"] == "full" and info["version"] == "2.0.0"


async def test_server_info_follows_reassigned_fields() -> None:
    """serverInfo is built once per revision, and again when a field it shows changes."""
    server = full_server()
    key = "io.modelcontextprotocol/serverInfo"

    async def info_in_a_2026_result() -> dict[str, Any]:
        msg = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
            },
        }
        session = server.create_session(stateless=True, revision="2026-07-28")
        resp = await session.handle(msg, _drop)
        assert resp is not None
        return resp["result"]["_meta"][key]  # type: ignore[no-any-return]

    assert (await info_in_a_2026_result())["version"] == "2.0.0"
    server.version = "2.1.0"
    server.title = "Renamed"
    info = await info_in_a_2026_result()
    assert info["version"] == "2.1.0" and info["title"] == "Renamed"
    async with connect(server, protocol_version="2025-11-25") as client:
        assert client.initialize_result is not None
        assert client.initialize_result["serverInfo"]["title"] == "Renamed"


async def _drop(message: dict[str, Any]) -> None:
    pass


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_capabilities_per_revision(version: str) -> None:
    async with connect(full_server(), protocol_version=version) as client:
        assert client.initialize_result is not None
        caps = client.initialize_result["capabilities"]
    expected = {
        "logging": {},
        "tools": {"listChanged": True},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
    }
    if version != "2024-11-05":
        expected["completions"] = {}
    assert caps == expected


def test_constructor_validates_options() -> None:
    with pytest.raises(ConfigurationError):
        MCPServer(name="x", version="1", limits=ServerLimits(page_size=0))
    with pytest.raises(ConfigurationError):
        MCPServer(name="x", version="1", default_log_level="loud")


def test_constructor_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        MCPServer("x", "1")  # type: ignore[misc]


async def test_tools_given_to_the_constructor_by_name_and_as_a_list() -> None:
    def one() -> str:
        return "1"

    def two() -> str:
        return "2"

    by_name = MCPServer(name="x", version="1", tools={"first": one, "second": two})
    as_list = MCPServer(name="x", version="1", tools=[one, two])
    assert [t.name for t in by_name.tools] == ["first", "second"]
    assert [t.name for t in as_list.tools] == ["one", "two"]


# -- introspection (the seeds' API) -------------------------------------------------------------------


def test_get_server_info() -> None:
    info = full_server().get_server_info()
    assert info["name"] == "full" and info["version"] == "2.0.0"
    assert "tools" in info["capabilities"]


def test_get_tool_list_info_and_get_tool_info() -> None:
    server = full_server()
    listed = server.get_tool_list_info()
    assert [t["name"] for t in listed["tools"]] == ["add"]
    info = server.get_tool_info("add")
    assert info is not None
    assert info["description"] == "Add two integers."
    assert info["inputSchema"]["required"] == ["a", "b"]
    assert server.get_tool_info("missing") is None
    # Callers get copies: changing them does not change the server's listing.
    info["name"] = "changed"
    assert server.get_tool_info("add")["name"] == "add"  # type: ignore[index]


async def test_execute_tool_runs_without_a_transport() -> None:
    server = full_server()
    seen: list[Any] = []

    @server.tool
    async def with_ctx(ctx: Context) -> str:
        seen.append(current_context() is ctx)
        await ctx.info("nobody listens")
        await ctx.progress(1)
        return "ok"

    assert await server.execute_tool("add", {"a": 2, "b": 3}) == {
        "content": [{"type": "text", "text": "5"}],
        "structuredContent": {"result": 5},
    }
    assert (await server.execute_tool("with_ctx"))["content"][0]["text"] == "ok"
    assert seen == [True]
    invalid = await server.execute_tool("add", {"a": "x"})
    assert invalid["isError"] is True and "a" in invalid["content"][0]["text"]
    with pytest.raises(InvalidParams):
        await server.execute_tool("missing", {})


async def test_execute_tool_says_no_client_is_connected_when_a_tool_asks_one() -> None:
    server = MCPServer(name="direct", version="1")
    caught: list[CapabilityError] = []

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {}})
        return answer.action

    @server.tool
    async def ask_politely(ctx: Context) -> str:
        try:
            await ctx.sample("Hello?")
        except CapabilityError as exc:
            caught.append(exc)
            return "asked nobody"
        return "sampled"

    @server.tool
    def roots_sync(ctx: Context) -> str:
        return str(ctx.list_roots())

    for tool in ("ask", "roots_sync"):
        result = await server.execute_tool(tool)
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert "no client is connected" in text and "server.execute_tool" in text, text
        assert "stateless" not in text
    assert (await server.execute_tool("ask_politely"))["content"][0]["text"] == "asked nobody"
    (exc,) = caught
    assert str(exc).startswith("cannot send sampling/createMessage: no client is connected")


async def test_close_ends_every_session() -> None:
    server = full_server()
    async with connect(server) as one, connect(server) as two:
        assert len(server.sessions()) == 2
        await server.close()
        assert server.sessions() == []
        assert one.session.state is State.CLOSED and two.session.state is State.CLOSED
        out = await one.send_raw({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert out["error"]["code"] == -32600


async def test_close_cancels_running_requests() -> None:
    server = full_server()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    @server.tool
    async def forever() -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    async with connect(server) as client:
        call = asyncio.ensure_future(client.call_tool("forever"))
        await asyncio.wait_for(started.wait(), 5)
        await server.close()
        await asyncio.wait_for(cancelled.wait(), 5)
        with pytest.raises(Exception, match="no response"):
            await asyncio.wait_for(call, 5)


async def test_sessions_lists_only_initialized_sessions() -> None:
    server = full_server()
    async with connect(server, initialize=False):
        assert server.sessions() == []
        async with connect(server) as ready:
            assert server.sessions() == [ready.session]


async def test_roots_list_changed_calls_the_registered_callback() -> None:
    server = full_server()
    called = asyncio.Event()
    got: list[Any] = []

    @server.on_roots_changed
    async def changed(session: Any) -> None:
        got.append(session)
        called.set()

    async with connect(server, capabilities={"roots": {"listChanged": True}}) as client:
        await client.notify("notifications/roots/list_changed")
        await asyncio.wait_for(called.wait(), 5)
    assert got == [client.session]


async def test_list_changed_is_not_sent_to_uninitialized_sessions() -> None:
    server = full_server()
    async with connect(server, initialize=False) as fresh, connect(server) as ready:
        await server.tools.notify_list_changed()
        await server.prompts.notify_list_changed()
        await server.resources.notify_list_changed()
    assert fresh.notifications == []
    assert [n["method"] for n in ready.notifications] == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    ]
