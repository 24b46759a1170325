"""mount(include_tags=..., exclude_tags=...): which of a child's components the parent serves."""

from __future__ import annotations

import pytest

from mcpkit import MCPServer
from mcpkit.errors import RegistrationError
from mcpkit.testing import connect


def child() -> MCPServer:
    server = MCPServer("child")

    @server.tool(tags={"public"})
    def shown() -> str:
        return "shown"

    @server.tool(tags={"internal"})
    def hidden() -> str:
        return "hidden"

    @server.tool
    def untagged() -> str:
        return "untagged"

    @server.resource("data://public", tags={"public"})
    def public() -> str:
        return "p"

    @server.prompt(tags={"internal"})
    def internal() -> str:
        return "i"

    return server


async def test_include_tags_serves_only_the_tagged_components() -> None:
    parent = MCPServer("parent")
    kid = child()
    parent.mount(kid, namespace="c", include_tags={"public"})
    async with connect(parent) as client:
        assert [t["name"] for t in await client.list_tools()] == ["c_shown"]
        assert [r["uri"] for r in await client.list_resources()] == ["data://c/public"]
        assert await client.list_prompts() == []

    # The filter holds for what the child registers later.
    @kid.tool(tags={"public"})
    def later() -> str:
        return "later"

    @kid.tool
    def later_untagged() -> str:
        return "no"

    assert "c_later" in parent.tools and "c_later_untagged" not in parent.tools


async def test_exclude_tags_leaves_the_tagged_components_out() -> None:
    parent = MCPServer("parent")
    parent.mount(child(), namespace="c", exclude_tags={"internal"})
    async with connect(parent) as client:
        assert {t["name"] for t in await client.list_tools()} == {"c_shown", "c_untagged"}
        assert await client.list_prompts() == []


async def test_mounted_copies_keep_their_tags_for_the_parents_rules() -> None:
    parent = MCPServer("parent")
    parent.mount(child(), namespace="c")
    parent.disable(tags={"internal"})
    async with connect(parent) as client:
        assert {t["name"] for t in await client.list_tools()} == {"c_shown", "c_untagged"}
        assert await client.list_prompts() == []


def test_a_filtered_out_component_does_not_collide() -> None:
    parent = MCPServer("parent")

    @parent.tool
    def c_hidden() -> str:
        return "the parent's own"

    with pytest.raises(RegistrationError, match="'c_hidden' is already served"):
        parent.mount(child(), namespace="c")
    parent.mount(child(), namespace="c", exclude_tags={"internal"})
    assert parent.tools.get("c_hidden") is not None
