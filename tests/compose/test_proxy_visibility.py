"""Proxied components answer to the proxy's visibility: by name, by the tags of their ``_meta``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo
from mcpkit.compose import proxy
from mcpkit.errors import RemoteError
from mcpkit.testing import InMemoryClient, connect
from tests.compose.test_gateway import entry, upstream  # noqa: F401  # a fixture

TOOLS_CHANGED = "notifications/tools/list_changed"


def upstream_server() -> MCPServer:
    server = MCPServer("upstream")

    # Tags in _meta, as FastMCP publishes them (``_meta._fastmcp.tags``) and as
    # mcpkit.compose.gateway.entry_tags reads them (``_meta.tags`` too).
    @server.tool(meta={"_fastmcp": {"tags": ["admin"]}})
    def purge() -> str:
        """Remove everything."""
        return "purged"

    @server.tool(meta={"tags": ["read"]})
    def search() -> str:
        """Find things."""
        return "found"

    @server.resource("data://notes", meta={"tags": ["admin"]})
    def notes() -> str:
        return "notes"

    @server.resource("data://open")
    def open_notes() -> str:
        return "open"

    @server.resource("users://{user}", meta={"tags": ["people"]})
    def user(user: str) -> str:
        return user

    @server.prompt(meta={"_fastmcp": {"tags": ["admin"]}})
    def review(topic: str) -> str:
        return f"review {topic}"

    @server.completion(prompt="review", argument="topic")
    def topics(value: str) -> list[str]:
        return [t for t in ("tests", "types") if t.startswith(value)]

    @server.completion(resource_template="users://{user}", argument="user")
    def users(value: str) -> list[str]:
        return ["bob", "ann"]

    return server


async def names(client: InMemoryClient) -> set[str]:
    return {t["name"] for t in await client.list_tools()}


async def settle() -> None:
    for _ in range(3):  # list_changed is sent from a task
        await asyncio.sleep(0)


async def test_a_proxied_tool_the_proxy_disables_is_absent_and_refused() -> None:
    front = proxy(upstream_server())
    async with connect(front) as client:
        assert await names(client) == {"purge", "search"}
        client.notifications.clear()
        front.disable("purge", components={"tools"})
        await settle()
        assert await names(client) == {"search"}
        with pytest.raises(RemoteError, match="Tool 'purge' is disabled"):
            await client.call_tool("purge")
        assert [n["method"] for n in client.notifications] == [TOOLS_CHANGED]
        front.enable("purge")
        assert (await client.call_tool("purge"))["content"][0]["text"] == "purged"


async def test_tags_of_the_upstreams_meta_hide_and_refuse_even_before_a_listing() -> None:
    front = proxy(upstream_server())
    front.disable(tags={"admin"})
    async with connect(front) as client:
        # Called first: the proxy lists the upstream's tools to learn their tags.
        with pytest.raises(RemoteError, match="Tool 'purge' is disabled"):
            await client.call_tool("purge")
        assert await names(client) == {"search"}
        assert [r["uri"] for r in await client.list_resources()] == ["data://open"]
        with pytest.raises(RemoteError, match="'data://notes' is disabled"):
            await client.read_resource("data://notes")
        assert (await client.read_resource("data://open"))["contents"][0]["text"] == "open"


async def test_proxied_prompts_and_resources_are_hidden_by_name() -> None:
    front = proxy(upstream_server())
    front.disable("review", "data://open")
    async with connect(front) as client:
        assert await client.list_prompts() == []
        with pytest.raises(RemoteError, match="Prompt 'review' is disabled"):
            await client.get_prompt("review", {"topic": "x"})
        assert [r["uri"] for r in await client.list_resources()] == ["data://notes"]


@pytest.mark.parametrize("rule", [{"tags": {"people"}}, {"keys": ("users://{user}",)}])
async def test_a_read_through_a_hidden_proxied_template_is_refused(rule: dict[str, Any]) -> None:
    front = proxy(upstream_server())
    front.disable(*rule.get("keys", ()), tags=rule.get("tags", ()))
    async with connect(front) as client:
        # Read first: the proxy lists the upstream's resources and templates to know it.
        with pytest.raises(RemoteError, match="'users://bob' is disabled"):
            await client.read_resource("users://bob")
        assert await client.list_resource_templates() == []
        with pytest.raises(RemoteError, match="'users://ann' is disabled"):
            await client.read_resource("users://ann")
        front.enable(*rule.get("keys", ()), tags=rule.get("tags", ()))
        assert (await client.read_resource("users://bob"))["contents"][0]["text"] == "bob"


async def test_a_session_hides_proxied_tools_for_itself_only() -> None:
    front = proxy(upstream_server())

    @front.tool
    async def hide_search(ctx: Context) -> str:
        """Hide search from this caller."""
        await ctx.disable_components("search")
        return "hidden"

    async with connect(front) as alice, connect(front) as bob:
        await alice.call_tool("hide_search")
        assert "search" not in await names(alice) and "search" in await names(bob)
        with pytest.raises(RemoteError, match="Tool 'search' is disabled"):
            await alice.call_tool("search")
        assert (await bob.call_tool("search"))["content"][0]["text"] == "found"


async def test_a_principal_hides_proxied_tools_on_2026_07_28() -> None:
    front = proxy(upstream_server())
    alice = AuthInfo(token="a", subject="alice", scopes=frozenset())
    bob = AuthInfo(token="b", subject="bob", scopes=frozenset())
    await front.disable_for(alice.principal, tags={"read"})
    options = {"protocol_version": "2026-07-28", "initialize": False}
    async with connect(front, auth_info=alice, **options) as a:
        assert await names(a) == {"purge"}
        with pytest.raises(RemoteError, match="Tool 'search' is disabled"):
            await a.call_tool("search")
    async with connect(front, auth_info=bob, **options) as b:
        assert await names(b) == {"purge", "search"}


async def test_a_mounted_proxy_keeps_its_rules_on_the_parent() -> None:
    front = proxy(upstream_server())
    parent = MCPServer("parent")
    parent.mount(front, namespace="up")
    front.disable("purge")
    async with connect(parent) as client:
        assert await names(client) == {"up_search"}
        with pytest.raises(RemoteError, match="Tool 'up_purge' is disabled"):
            await client.call_tool("up_purge")
        client.notifications.clear()
        front.enable("purge", components={"tools"})
        await settle()
        assert await names(client) == {"up_purge", "up_search"}
        assert [n["method"] for n in client.notifications] == [TOOLS_CHANGED]
        parent.disable(tags={"admin"})  # the parent's rules see the upstream's tags too
        assert await names(client) == {"up_search"}


async def test_a_gateways_upstream_tools_answer_to_its_rules(
    upstream: Path,  # noqa: F811  # the fixture
) -> None:
    gateway = MCPServer.from_config({"mcpServers": {"good": entry(upstream)}})
    gateway.disable("good_search_all", tags={"write"})
    async with connect(gateway) as client:
        assert await names(client) == {"good_search", "good_touch"}
        with pytest.raises(RemoteError, match="Tool 'good_delete' is disabled"):
            await client.call_tool("good_delete", {"q": "x"})
        with pytest.raises(RemoteError, match="Tool 'good_search_all' is disabled"):
            await client.call_tool("good_search_all")


REVIEW = {"type": "ref/prompt", "name": "review"}
USERS = {"type": "ref/resource", "uri": "users://{user}"}


async def test_completions_of_proxied_prompts_and_templates_hidden_by_tag_are_refused() -> None:
    front = proxy(upstream_server())
    front.disable(tags={"admin", "people"})  # _meta._fastmcp.tags and _meta.tags
    async with connect(front) as client:
        # Completed first: the proxy lists the upstream's prompts and templates to know them.
        with pytest.raises(RemoteError, match="Prompt 'review' is disabled") as refused:
            await client.complete(REVIEW, "topic", "t")
        assert refused.value.code == -32602  # as an invalid prompt name (completion spec)
        with pytest.raises(RemoteError, match=r"template 'users://\{user\}' is disabled"):
            await client.complete(USERS, "user", "")
        front.enable(tags={"admin", "people"})
        assert (await client.complete(REVIEW, "topic", "t"))["values"] == ["tests", "types"]
        assert (await client.complete(USERS, "user", ""))["values"] == ["bob", "ann"]


async def test_a_session_hides_proxied_completions_for_itself_only() -> None:
    front = proxy(upstream_server())

    @front.tool
    async def hide_review(ctx: Context) -> str:
        """Hide the review prompt from this caller."""
        await ctx.disable_components("review", "users://{user}")
        return "hidden"

    async with connect(front) as alice, connect(front) as bob:
        await alice.call_tool("hide_review")
        with pytest.raises(RemoteError, match="Prompt 'review' is disabled"):
            await alice.complete(REVIEW, "topic", "t")
        with pytest.raises(RemoteError, match="is disabled"):
            await alice.complete(USERS, "user", "")
        assert (await bob.complete(REVIEW, "topic", "t"))["values"] == ["tests", "types"]


async def test_an_upstream_refuses_completions_of_what_it_hides_itself() -> None:
    served = upstream_server()
    served.disable("review")
    async with connect(proxy(served)) as client:
        with pytest.raises(RemoteError, match="Prompt 'review' is disabled") as refused:
            await client.complete(REVIEW, "topic", "t")
        assert refused.value.code == -32602


async def test_a_mounted_proxys_completions_follow_its_rules_and_the_parents() -> None:
    front = proxy(upstream_server())
    parent = MCPServer("parent")
    parent.mount(front, namespace="up")
    front.disable("review")
    up_users = {"type": "ref/resource", "uri": "users://up/{user}"}
    async with connect(parent) as client:
        with pytest.raises(RemoteError, match="Prompt 'up_review' is disabled"):
            await client.complete({"type": "ref/prompt", "name": "up_review"}, "topic", "t")
        assert (await client.complete(up_users, "user", ""))["values"] == ["bob", "ann"]
        parent.disable(tags={"people"})  # the parent's rules see the upstream's tags too
        with pytest.raises(RemoteError, match=r"'users://up/\{user\}' is disabled"):
            await client.complete(up_users, "user", "")
        front.enable("review")
        done = await client.complete({"type": "ref/prompt", "name": "up_review"}, "topic", "t")
        assert done["values"] == ["tests", "types"]


async def test_a_gateways_upstream_completions_answer_to_its_rules(
    upstream: Path,  # noqa: F811  # the fixture
) -> None:
    # A real upstream process over stdio: its review prompt has completions.
    gateway = MCPServer.from_config({"mcpServers": {"good": entry(upstream)}})
    gateway.disable("good_review")
    good_review = {"type": "ref/prompt", "name": "good_review"}
    async with connect(gateway) as client:
        with pytest.raises(RemoteError, match="Prompt 'good_review' is disabled"):
            await client.complete(good_review, "topic", "t")
        gateway.enable("good_review")
        assert (await client.complete(good_review, "topic", "t"))["values"] == ["tests", "types"]


async def test_a_principal_hides_proxied_completions_on_2026_07_28() -> None:
    front = proxy(upstream_server())
    alice = AuthInfo(token="a", subject="alice", scopes=frozenset())
    bob = AuthInfo(token="b", subject="bob", scopes=frozenset())
    await front.disable_for(alice.principal, tags={"people"})
    options = {"protocol_version": "2026-07-28", "initialize": False}
    async with connect(front, auth_info=alice, **options) as a:
        with pytest.raises(RemoteError, match=r"template 'users://\{user\}' is disabled"):
            await a.complete(USERS, "user", "")
        assert (await a.complete(REVIEW, "topic", "t"))["values"] == ["tests", "types"]
    async with connect(front, auth_info=bob, **options) as b:
        assert (await b.complete(USERS, "user", ""))["values"] == ["bob", "ann"]
