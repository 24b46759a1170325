"""A mount follows the child's enable/disable rules: hidden on the child, hidden on the parent."""

from __future__ import annotations

import asyncio

import pytest

from mcpkit import Context, MCPServer
from mcpkit.errors import RemoteError
from mcpkit.testing import InMemoryClient, connect

TOOLS_CHANGED = "notifications/tools/list_changed"


def child() -> MCPServer:
    server = MCPServer("child")

    @server.tool(tags={"admin"})
    def purge() -> str:
        return "purged"

    @server.tool
    def search() -> str:
        return "found"

    @server.tool(enabled=False)
    def secret() -> str:
        return "secret"

    @server.resource("data://admin", tags={"admin"})
    def admin_data() -> str:
        return "admin"

    @server.resource("users://{user}", tags={"admin"})
    def user(user: str) -> str:
        return user

    @server.resource("data://off", enabled=False)
    def off() -> str:
        return "off"

    @server.prompt(tags={"admin"})
    def audit() -> str:
        return "audit"

    @server.tool
    async def hide_admin(ctx: Context) -> str:
        await ctx.disable_components(tags={"admin"})
        return "hidden"

    return server


async def names(client: InMemoryClient) -> set[str]:
    return {t["name"] for t in await client.list_tools()}


async def settle() -> None:
    for _ in range(3):  # list_changed is sent from a task
        await asyncio.sleep(0)


async def test_a_component_the_child_disables_is_absent_on_the_parent_and_refused() -> None:
    parent, kid = MCPServer("parent"), child()
    kid.disable("purge")
    parent.mount(kid, namespace="c")
    async with connect(parent) as client:
        assert "c_purge" not in await names(client) and "c_search" in await names(client)
        with pytest.raises(RemoteError, match="Tool 'c_purge' is disabled"):
            await client.call_tool("c_purge")
        # Registered disabled on the child: disabled on the parent, until the child says so.
        assert "c_secret" not in await names(client)
        assert "data://c/off" not in {r["uri"] for r in await client.list_resources()}
        with pytest.raises(RemoteError, match="'data://c/off' is disabled"):
            await client.read_resource("data://c/off")
        client.notifications.clear()
        kid.enable("purge", "secret")
        await settle()
        assert {"c_purge", "c_secret"} <= await names(client)
        assert (await client.call_tool("c_purge"))["content"][0]["text"] == "purged"
        assert [n["method"] for n in client.notifications] == [TOOLS_CHANGED]


async def test_toggling_a_tag_on_the_child_hides_every_kind_on_the_parent_and_says_so() -> None:
    parent, kid = MCPServer("parent"), child()
    parent.mount(kid, namespace="c")
    async with connect(parent) as client:
        client.notifications.clear()
        kid.disable(tags={"admin"})
        await settle()
        assert "c_purge" not in await names(client)
        assert "data://c/admin" not in {r["uri"] for r in await client.list_resources()}
        assert await client.list_resource_templates() == []
        assert await client.list_prompts() == []
        with pytest.raises(RemoteError, match="'users://c/bob' is disabled"):
            await client.read_resource("users://c/bob")
        with pytest.raises(RemoteError, match="Prompt 'c_audit' is disabled"):
            await client.get_prompt("c_audit")
        assert {n["method"] for n in client.notifications} == {
            TOOLS_CHANGED,
            "notifications/resources/list_changed",
            "notifications/prompts/list_changed",
        }
        kid.enable(tags={"admin"})
        await settle()
        assert "c_purge" in await names(client)
        assert (await client.get_prompt("c_audit"))["messages"]


async def test_the_childs_rules_hold_for_what_it_registers_later() -> None:
    parent, kid = MCPServer("parent"), child()
    parent.mount(kid, namespace="c")
    kid.disable(tags={"admin"})

    @kid.tool(tags={"admin"})
    def later() -> str:
        return "later"

    async with connect(parent) as client:
        assert "c_later" not in await names(client)


async def test_a_parents_rules_do_not_show_what_the_child_hides() -> None:
    parent, kid = MCPServer("parent"), child()
    parent.mount(kid, namespace="c")
    kid.disable("purge")
    parent.enable("c_purge")  # the child's verdict stands: show it on the child
    async with connect(parent) as client:
        assert "c_purge" not in await names(client)


async def test_a_mounted_childs_tool_sets_rules_for_the_parents_caller() -> None:
    # Per-caller rules belong to the caller's session, which is the parent's: a child's
    # tool calling ctx.disable_components hides, by tag, the parent's copies for it only.
    parent = MCPServer("parent")
    parent.mount(child(), namespace="c")
    async with connect(parent) as alice, connect(parent) as bob:
        await alice.call_tool("c_hide_admin")
        await settle()
        assert "c_purge" not in await names(alice) and "c_purge" in await names(bob)
        assert any(n["method"] == TOOLS_CHANGED for n in alice.notifications)


async def test_a_mounted_childs_tool_names_components_by_the_childs_own_names() -> None:
    # Written for the child alone, the tool names "purge": mounted, that is the parent's
    # "c_purge" (and, mounted once more, the grandparent's "g_c_purge").
    kid = child()

    @kid.tool
    async def hide_purge(ctx: Context) -> str:
        await ctx.disable_components("purge", "data://admin")
        return "hidden"

    parent, grand = MCPServer("parent"), MCPServer("grand")
    parent.mount(kid, namespace="c")
    grand.mount(parent, namespace="g")
    async with connect(parent) as alice, connect(parent) as bob:
        await alice.call_tool("c_hide_purge")
        assert "c_purge" not in await names(alice) and "c_purge" in await names(bob)
        with pytest.raises(RemoteError, match="Tool 'c_purge' is disabled"):
            await alice.call_tool("c_purge")
        assert "data://c/admin" not in {r["uri"] for r in await alice.list_resources()}
    async with connect(grand) as carol:
        await carol.call_tool("g_c_hide_purge")
        assert "g_c_purge" not in await names(carol) and "g_c_search" in await names(carol)


async def test_the_childs_rules_reach_every_level_of_nested_mounts() -> None:
    kid, parent, grand = child(), MCPServer("parent"), MCPServer("grand")
    parent.mount(kid, namespace="c")
    grand.mount(parent, namespace="g")
    async with connect(grand) as client:
        assert "g_c_purge" in await names(client)
        client.notifications.clear()
        kid.disable("purge", components={"tools"})
        await settle()
        assert "g_c_purge" not in await names(client)
        with pytest.raises(RemoteError, match="Tool 'g_c_purge' is disabled"):
            await client.call_tool("g_c_purge")
        assert [n["method"] for n in client.notifications] == [TOOLS_CHANGED]
