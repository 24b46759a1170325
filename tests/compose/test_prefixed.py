"""A proxy mounted under a namespace: its upstream's components, middleware and roots follow."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, Context, MCPServer
from mcpkit.compose.prefixed import namespace_of, own_params, prefixed_entries, prefixed_read
from mcpkit.errors import RemoteError
from mcpkit.server.middleware import CallNext, MiddlewareContext

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_server.py"


async def test_a_mounted_stdio_proxy_serves_its_upstream_under_the_namespace() -> None:
    front = MCPServer.proxy(shlex.join([sys.executable, str(DEMO)]), name="front")
    seen: list[tuple[str, Any]] = []

    @front.add_middleware
    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        seen.append((ctx.method, ctx.params.get("name") or ctx.params.get("uri")))
        return await call_next(ctx)

    @front.tool
    def local() -> str:
        return "the proxy's own"

    hub = MCPServer(name="hub", version="1.0.0")

    @hub.tool
    def demo_mine() -> str:  # the parent's own tool under the namespace: not the child's
        return "hub's"

    hub.mount(front, namespace="demo")
    async with Client(server=hub, protocol_version="2025-11-25") as client:
        names = {t["name"] for t in await client.list_tools()}
        assert {"demo_add", "demo_forecast", "demo_local", "demo_mine"} <= names
        added = await client.call_tool("demo_add", {"a": 4, "b": 5})
        assert added["content"][0]["text"] == "9"
        assert (await client.call_tool("demo_mine"))["content"][0]["text"] == "hub's"
        read = await client.read_resource("config://demo/app")
        assert read["contents"][0]["uri"] == "config://demo/app"
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["notes://demo/{name}"]
        prompt = await client.get_prompt("demo_greeting", {"name": "Ann"})
        assert prompt["messages"][0]["content"]["text"] == "Write a friendly greeting for Ann."
        styles = await client.complete(
            {"type": "ref/prompt", "name": "demo_greeting"}, "style", "f"
        )
        assert styles["values"] == ["friendly", "formal"]
        with pytest.raises(RemoteError, match="Unknown tool"):
            await client.call_tool("demo_nothing")
    # The proxy's middleware saw its own requests under its own names, and nothing else.
    assert ("tools/call", "add") in seen
    assert ("resources/read", "config://app") in seen
    assert ("prompts/get", "greeting") in seen
    assert ("tools/call", "mine") not in seen and ("tools/call", "demo_mine") not in seen


async def test_a_roots_change_reaches_the_upstream_of_a_mounted_proxy() -> None:
    upstream = MCPServer(name="upstream", version="1.0.0")
    changed = asyncio.Event()

    @upstream.on_roots_changed
    def roots_changed(session: Any) -> None:
        changed.set()

    @upstream.tool
    async def roots(ctx: Context) -> list[str]:
        return [r.uri for r in await ctx.list_roots()]

    hub = MCPServer(name="hub", version="1.0.0")
    hub.mount(MCPServer.proxy(upstream), namespace="up")
    async with Client(server=hub, protocol_version="2025-11-25", roots=["file:///work"]) as client:
        listed = await client.call_tool("up_roots")
        assert "file:///work" in listed["content"][0]["text"], listed
        await client.notify("notifications/roots/list_changed")
        await asyncio.wait_for(changed.wait(), 5)


def test_names_and_uris_are_routed_back_to_the_namespace() -> None:
    assert namespace_of("tools/call", {"name": "gh_search"}) == "gh"
    assert namespace_of("tools/call", {"name": "plain"}) is None
    assert namespace_of("resources/read", {"uri": "repo://gh/x"}) == "gh"
    assert namespace_of("resources/read", {"uri": "repo://gh"}) is None
    ref = {"type": "ref/resource", "uri": "repo://gh/{id}"}
    assert namespace_of("completion/complete", {"ref": ref}) == "gh"
    assert own_params("gh", "prompts/get", {"name": "gh_review", "arguments": {}}) == {
        "name": "review",
        "arguments": {},
    }
    assert own_params("gh", "completion/complete", {"ref": ref}) == {
        "ref": {"type": "ref/resource", "uri": "repo://{id}"}
    }
    assert own_params("gh", "tools/call", {"name": "other_x"}) is None
    entries = [{"uri": "repo://x"}, {"uri": "urn:no-scheme"}]
    assert prefixed_entries("gh", "resources", entries) == [{"uri": "repo://gh/x"}]
    read = {"contents": [{"uri": "repo://x", "text": "t"}]}
    assert prefixed_read("gh", read) == {"contents": [{"uri": "repo://gh/x", "text": "t"}]}
