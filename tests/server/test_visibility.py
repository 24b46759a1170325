"""Tags and visibility: enable/disable by name or tag, for everyone, one session or one principal."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import Context, MCPServer, create_tool
from mcpkit.auth import AuthInfo
from mcpkit.errors import ConfigurationError, RegistrationError, RemoteError
from mcpkit.server.visibility import VisibilityRules
from mcpkit.testing import InMemoryClient, connect

TOOLS_CHANGED = "notifications/tools/list_changed"


def catalogue(**options: Any) -> MCPServer:
    server = MCPServer("catalogue", **options)

    @server.tool(tags={"read"})
    def search(q: str) -> str:
        return f"found {q}"

    @server.tool(tags={"write", "admin"})
    def delete(item: str) -> str:
        return f"deleted {item}"

    @server.tool
    def plain() -> str:
        return "plain"

    @server.tool(enabled=False)
    def secret() -> str:
        return "secret"

    @server.resource("data://public", tags={"read"})
    def public() -> str:
        return "public"

    @server.resource("data://admin", tags={"admin"})
    def admin_data() -> str:
        return "admin"

    @server.resource("users://{user}", tags={"admin"})
    def user(user: str) -> str:
        return user

    @server.prompt(tags={"admin"})
    def audit() -> str:
        return "audit"

    @server.prompt
    def hello() -> str:
        return "hello"

    # The tools that change what the caller sees.
    @server.tool
    async def hide_admin(ctx: Context) -> str:
        await ctx.disable_components(tags={"admin"})
        return "hidden"

    @server.tool
    async def show_secret(ctx: Context) -> str:
        await ctx.enable_components("secret", components={"tools"})
        return "shown"

    @server.tool
    async def reset(ctx: Context) -> str:
        await ctx.reset_visibility()
        return "reset"

    return server


async def names(client: InMemoryClient) -> set[str]:
    return {t["name"] for t in await client.list_tools()}


async def settle() -> None:
    for _ in range(3):  # the list_changed notifications are sent from tasks
        await asyncio.sleep(0)


async def test_a_tool_registered_disabled_is_absent_and_refused_until_enabled() -> None:
    server = catalogue()
    async with connect(server) as client:
        assert "secret" not in await names(client)
        with pytest.raises(RemoteError, match="Tool 'secret' is disabled"):
            await client.call_tool("secret")
        server.enable("secret")
        await settle()
        assert "secret" in await names(client)
        assert (await client.call_tool("secret"))["content"][0]["text"] == "secret"
        assert any(n["method"] == TOOLS_CHANGED for n in client.notifications)


async def test_disable_by_tag_hides_every_kind_and_refuses_each_use() -> None:
    server = catalogue()
    async with connect(server) as client:
        client.notifications.clear()
        server.disable(tags={"admin"})
        await settle()
        assert "delete" not in await names(client) and "search" in await names(client)
        with pytest.raises(RemoteError, match="Tool 'delete' is disabled"):
            await client.call_tool("delete", {"item": "x"})
        assert [r["uri"] for r in await client.list_resources()] == ["data://public"]
        assert await client.list_resource_templates() == []
        with pytest.raises(RemoteError, match="'data://admin' is disabled"):
            await client.read_resource("data://admin")
        with pytest.raises(RemoteError, match="'users://bob' is disabled"):
            await client.read_resource("users://bob")
        assert [p["name"] for p in await client.list_prompts()] == ["hello"]
        with pytest.raises(RemoteError, match="Prompt 'audit' is disabled"):
            await client.get_prompt("audit")
        sent = {n["method"] for n in client.notifications}
        assert sent == {
            TOOLS_CHANGED,
            "notifications/resources/list_changed",
            "notifications/prompts/list_changed",
        }
        server.enable(tags={"admin"})  # the latest rule wins
        assert "delete" in await names(client)
        assert (await client.read_resource("users://bob"))["contents"][0]["text"] == "bob"


async def test_components_limits_a_rule_to_some_kinds() -> None:
    server = catalogue()
    server.disable(tags={"admin"}, components={"tools"})
    async with connect(server) as client:
        assert "delete" not in await names(client)
        assert {p["name"] for p in await client.list_prompts()} == {"audit", "hello"}
    with pytest.raises(ConfigurationError, match="unknown component kind"):
        server.disable("x", components={"widgets"})
    with pytest.raises(ConfigurationError, match="name the components"):
        server.disable()


async def test_include_and_exclude_tags_at_server_level() -> None:
    async with connect(catalogue(include_tags={"read"})) as client:
        assert await names(client) == {"search"}
        assert [r["uri"] for r in await client.list_resources()] == ["data://public"]
    async with connect(catalogue(exclude_tags={"admin"})) as client:
        assert "delete" not in await names(client) and "plain" in await names(client)
        assert [p["name"] for p in await client.list_prompts()] == ["hello"]


async def test_a_session_sees_its_own_rules_and_only_it_hears_of_them() -> None:
    server = catalogue()
    async with connect(server) as alice, connect(server) as bob:
        await alice.call_tool("hide_admin")
        await settle()
        assert "delete" not in await names(alice) and "delete" in await names(bob)
        with pytest.raises(RemoteError, match="is disabled"):
            await alice.call_tool("delete", {"item": "x"})
        assert (await bob.call_tool("delete", {"item": "x"}))["content"][0]["text"] == "deleted x"
        assert [p["name"] for p in await alice.list_prompts()] == ["hello"]
        assert any(n["method"] == TOOLS_CHANGED for n in alice.notifications)
        assert not any(n["method"] == TOOLS_CHANGED for n in bob.notifications)
        # A session's rule wins over the server's: the globally disabled tool, for alice only.
        await alice.call_tool("show_secret")
        assert "secret" in await names(alice) and "secret" not in await names(bob)
        await alice.call_tool("reset")
        assert await names(alice) == await names(bob)


def alice() -> AuthInfo:
    return AuthInfo(token="a", subject="alice", scopes=frozenset())


def bob() -> AuthInfo:
    return AuthInfo(token="b", subject="bob", scopes=frozenset())


def stateless(server: MCPServer, auth: AuthInfo | None) -> InMemoryClient:
    return connect(server, protocol_version="2026-07-28", initialize=False, auth_info=auth)


async def test_on_2026_07_28_a_principal_keeps_its_rules_across_requests() -> None:
    server = catalogue()
    async with stateless(server, alice()) as a, stateless(server, bob()) as b:
        await a.call_tool("hide_admin")
        assert "delete" not in await names(a) and "delete" in await names(b)
        with pytest.raises(RemoteError, match="is disabled"):
            await a.call_tool("delete", {"item": "x"})
    async with stateless(server, alice()) as again:  # a new connection, the same principal
        assert "delete" not in await names(again)
        await again.call_tool("reset")
        assert "delete" in await names(again)


async def test_per_caller_rules_need_a_caller_when_there_is_no_session() -> None:
    async with stateless(catalogue(), None) as anonymous:
        result = await anonymous.call_tool("hide_admin")
    assert result["isError"] is True
    assert "no session and no authenticated caller" in result["content"][0]["text"]


async def test_the_server_can_set_rules_for_a_principal_or_a_session() -> None:
    server = catalogue()
    await server.disable_for(bob().principal, "search")  # AuthInfo.principal names it
    async with stateless(server, bob()) as b, stateless(server, alice()) as a:
        assert "search" not in await names(b) and "search" in await names(a)
    async with connect(server) as client:
        (session,) = server.sessions()
        await server.enable_for(session, "secret")
        assert "secret" in await names(client)


def test_tags_are_checked_at_registration() -> None:
    server = MCPServer("t")

    def tool() -> str:
        return ""

    with pytest.raises(RegistrationError, match="tags must be a set of strings"):
        server.tool(tags="admin")(tool)  # a string would be a set of letters
    with pytest.raises(RegistrationError, match="tags must be non-empty strings"):
        create_tool(id="t", description="", execute=lambda: "", tags={""})


async def test_create_tool_and_add_tool_carry_tags_and_enabled() -> None:
    server = MCPServer("t")
    server.add_tool(create_tool(id="a", description="", execute=lambda: "", tags={"x"}))
    server.add_tool(create_tool(id="b", description="", execute=lambda: "", enabled=False))
    server.disable(tags={"x"})
    async with connect(server) as client:
        assert await names(client) == set()


def test_rules_the_latest_wins_and_a_toggled_tag_keeps_one_rule() -> None:
    rules = VisibilityRules()
    rules.add(False, tags={"a"})
    rules.add(True, ("t",))
    assert rules.decide("tools", "t", frozenset({"a"})) is True
    assert rules.decide("tools", "u", frozenset({"a"})) is False
    assert rules.decide("tools", "u", frozenset({"b"})) is None
    for _ in range(10):
        rules.add(True, tags={"a"})
        rules.add(False, tags={"a"})
    assert len(rules.by_tag) == 1
    assert rules.decide("tools", "t", frozenset({"a"})) is False  # the tag rule is newer now
    again = VisibilityRules.from_json(rules.to_json())
    assert again.to_json() == rules.to_json()
    assert again.decide("prompts", "t", frozenset({"a"})) is False
