"""A mount follows the child's enable/disable rules: hidden on the child, hidden on the parent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo
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


def hiding_child() -> MCPServer:
    """The test child, with a resource, a template and prompts that set the caller's rules
    by the child's own names."""
    kid = child()

    @kid.completion(prompt="audit", argument="scope")
    def scopes(value: str) -> list[str]:
        return ["all", "mine"]

    @kid.resource("hide://all")
    async def hide_all(ctx: Context) -> str:
        await ctx.disable_components("purge", "data://admin", "users://{user}", "audit")
        return "hidden"

    @kid.resource("hide://tool/{name}")
    async def hide_tool(name: str, ctx: Context) -> str:
        await ctx.disable_components(name)
        return f"hid {name}"

    @kid.prompt
    async def hide_prompts(ctx: Context) -> str:
        await ctx.disable_components("audit", "search")
        return "hidden"

    @kid.prompt
    async def show_all(ctx: Context) -> str:
        await ctx.enable_components("purge", "data://admin", "users://{user}", "audit", "search")
        return "shown"

    return kid


async def seen(client: InMemoryClient) -> set[str]:
    """Every name, URI and URI template the client is shown."""
    return (
        await names(client)
        | {p["name"] for p in await client.list_prompts()}
        | {r["uri"] for r in await client.list_resources()}
        | {t["uriTemplate"] for t in await client.list_resource_templates()}
    )


@pytest.mark.parametrize("depth", [1, 2, 3])
async def test_a_mounted_childs_resource_names_components_by_the_childs_own_names(
    depth: int,
) -> None:
    # Written for the child alone, its resource names "purge", "data://admin", ...: mounted
    # under c (and again under g, and h), those are the top server's "h_g_c_purge", ...
    top = hiding_child()
    for namespace in ("c", "g", "h")[:depth]:
        outer = MCPServer(f"over-{namespace}")
        outer.mount(top, namespace=namespace)
        top = outer
    prefix = "_".join(("h", "g", "c")[-depth:])
    path = "/".join(("h", "g", "c")[-depth:])
    hidden = {f"{prefix}_purge", f"data://{path}/admin", f"users://{path}/{{user}}"}
    hidden.add(f"{prefix}_audit")
    async with connect(top) as alice, connect(top) as bob:
        assert hidden <= await seen(alice)
        await alice.read_resource(f"hide://{path}/all")
        await settle()
        assert not hidden & await seen(alice) and hidden <= await seen(bob)
        assert f"{prefix}_search" in await seen(alice)
        with pytest.raises(RemoteError, match=f"Tool '{prefix}_purge' is disabled"):
            await alice.call_tool(f"{prefix}_purge")
        with pytest.raises(RemoteError, match=f"'data://{path}/admin' is disabled"):
            await alice.read_resource(f"data://{path}/admin")
        with pytest.raises(RemoteError, match=f"'users://{path}/bob' is disabled"):
            await alice.read_resource(f"users://{path}/bob")
        with pytest.raises(RemoteError, match=f"Prompt '{prefix}_audit' is disabled"):
            await alice.get_prompt(f"{prefix}_audit")
        assert (await bob.call_tool(f"{prefix}_purge"))["content"][0]["text"] == "purged"


async def test_a_mounted_childs_template_handler_names_components_by_the_childs_names() -> None:
    parent, grand = MCPServer("parent"), MCPServer("grand")
    parent.mount(hiding_child(), namespace="c")
    grand.mount(parent, namespace="g")
    async with connect(grand) as alice, connect(grand) as bob:
        read = await alice.read_resource("hide://g/c/tool/purge")
        assert read["contents"][0]["text"] == "hid purge"
        assert "g_c_purge" not in await names(alice) and "g_c_purge" in await names(bob)
        with pytest.raises(RemoteError, match="Tool 'g_c_purge' is disabled"):
            await alice.call_tool("g_c_purge")
        assert "g_c_search" in await names(alice)


async def test_a_mounted_childs_prompts_hide_and_show_by_the_childs_names() -> None:
    parent, grand = MCPServer("parent"), MCPServer("grand")
    parent.mount(hiding_child(), namespace="c")
    grand.mount(parent, namespace="g")
    async with connect(grand) as alice, connect(grand) as bob:
        await alice.get_prompt("g_c_hide_prompts")
        await settle()
        assert "g_c_search" not in await names(alice) and "g_c_search" in await names(bob)
        prompts = {p["name"] for p in await alice.list_prompts()}
        assert "g_c_audit" not in prompts and "g_c_show_all" in prompts
        with pytest.raises(RemoteError, match="Tool 'g_c_search' is disabled"):
            await alice.call_tool("g_c_search")
        with pytest.raises(RemoteError, match="Prompt 'g_c_audit' is disabled"):
            await alice.get_prompt("g_c_audit")
        await alice.get_prompt("g_c_show_all")
        assert {"g_c_search", "g_c_purge"} <= await names(alice)
        assert (await alice.get_prompt("g_c_audit"))["messages"]
        assert any(n["method"] == "notifications/prompts/list_changed" for n in alice.notifications)


async def test_completions_of_what_a_mounted_child_hides_are_refused_at_every_level() -> None:
    kid, parent, grand = hiding_child(), MCPServer("parent"), MCPServer("grand")
    parent.mount(kid, namespace="c")
    grand.mount(parent, namespace="g")
    audit = {"type": "ref/prompt", "name": "g_c_audit"}
    async with connect(grand) as alice, connect(grand) as bob:
        assert (await alice.complete(audit, "scope", ""))["values"] == ["all", "mine"]
        await alice.get_prompt("g_c_hide_prompts")  # alice's own rule, by the child's name
        with pytest.raises(RemoteError, match="Prompt 'g_c_audit' is disabled") as refused:
            await alice.complete(audit, "scope", "")
        assert refused.value.code == -32602
        assert (await bob.complete(audit, "scope", ""))["values"] == ["all", "mine"]
        kid.disable(tags={"admin"})  # the child's rule: every caller
        await settle()
        with pytest.raises(RemoteError, match="Prompt 'g_c_audit' is disabled"):
            await bob.complete(audit, "scope", "")
        with pytest.raises(RemoteError, match=r"'users://g/c/\{user\}' is disabled"):
            await bob.complete({"type": "ref/resource", "uri": "users://g/c/{user}"}, "user", "")


async def test_a_mounted_childs_prompt_sets_a_principals_rules_on_2026_07_28() -> None:
    parent = MCPServer("parent")
    parent.mount(hiding_child(), namespace="c")
    alice = AuthInfo(token="a", subject="alice", scopes=frozenset())
    bob = AuthInfo(token="b", subject="bob", scopes=frozenset())
    options: dict[str, Any] = {"protocol_version": "2026-07-28", "initialize": False}
    async with connect(parent, auth_info=alice, **options) as a:
        await a.get_prompt("c_hide_prompts")
    async with connect(parent, auth_info=alice, **options) as a:  # a later request, anew
        assert "c_search" not in await names(a)
        with pytest.raises(RemoteError, match="Prompt 'c_audit' is disabled"):
            await a.complete({"type": "ref/prompt", "name": "c_audit"}, "scope", "")
    async with connect(parent, auth_info=bob, **options) as b:
        assert "c_search" in await names(b)
