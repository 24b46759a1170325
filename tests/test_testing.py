"""``mcpkit.testing.connect``: the in-memory test client has the conveniences of ``Client``."""

from __future__ import annotations

import inspect
from typing import Any

from mcpkit import Client, Context, MCPServer, ServerLimits
from mcpkit.auth import AuthInfo
from mcpkit.testing import InMemoryClient, connect


def demo() -> MCPServer:
    server = MCPServer(name="t", version="1", limits=ServerLimits(page_size=1))

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def neg(a: int) -> int:
        return -a

    @server.resource("data://one")
    def one() -> str:
        return "1"

    @server.resource("data://items/{id}")
    def item(id: str) -> str:
        return id

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return [n for n in ("Ada", "Alan") if n.startswith(value)]

    return server


def test_every_public_coroutine_of_client_is_on_the_in_memory_client_too() -> None:
    def methods(cls: type) -> set[str]:
        return {
            name
            for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction)
            if not name.startswith("_")
        }

    missing = methods(Client) - methods(InMemoryClient) - {"connect", "set_roots"}
    assert not missing, missing


async def test_the_conveniences_answer_as_the_client_does() -> None:
    server = demo()
    async with connect(server) as raw, Client(server=server) as full:
        for client in (raw, full):
            assert [t["name"] for t in await client.list_tools()] == ["add", "neg"]
            assert [r["uri"] for r in await client.list_resources()] == ["data://one"]
            templates = await client.list_resource_templates()
            assert [t["uriTemplate"] for t in templates] == ["data://items/{id}"]
            assert [p["name"] for p in await client.list_prompts()] == ["greet"]
            completion = await client.complete({"type": "ref/prompt", "name": "greet"}, "name", "A")
            assert completion["values"] == ["Ada", "Alan"]
            await client.ping()


async def test_auth_info_reaches_handlers_and_a_2026_client_sends_the_envelope() -> None:
    server = MCPServer(name="t", version="1")
    seen: list[Any] = []

    @server.tool
    async def whoami(ctx: Context) -> str:
        seen.append((ctx.auth_info, ctx.session.revision.name))
        return "ok"

    alice = AuthInfo(token="a", subject="alice")
    async with (
        connect(server, auth_info=alice) as old,
        connect(server, protocol_version="2026-07-28", initialize=False, auth_info=alice) as new,
    ):
        await old.call_tool("whoami")
        result = await new.call_tool("whoami")
        assert new.initialize_result is None  # no handshake on 2026-07-28
        assert result["resultType"] == "complete"
        new.auth_info = None
        await new.call_tool("whoami")
    assert seen == [(alice, "2025-11-25"), (alice, "2026-07-28"), (None, "2026-07-28")]
