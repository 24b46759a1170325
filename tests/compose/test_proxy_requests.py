"""proxy(): the upstream's elicitation, sampling and roots requests reach the downstream client."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit import Client, Context, MCPServer
from mcpkit.compose import proxy

HANDSHAKE = "2025-11-25"


def asking_server() -> MCPServer:
    server = MCPServer(name="asker", version="1.0.0")

    @server.tool
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"{answer.action}: {answer.content}"

    @server.tool
    async def summarize(text: str, ctx: Context) -> str:
        result = await ctx.sample(f"Summarize: {text}", max_tokens=20)
        return str(result["content"]["text"])

    @server.tool
    async def where(ctx: Context) -> str:
        return ",".join(root.uri for root in await ctx.list_roots())

    @server.tool
    def capabilities(ctx: Context) -> str:
        return ",".join(sorted(ctx.client_capabilities))

    return server


async def test_elicitation_sampling_and_roots_are_answered_by_the_downstream_client() -> None:
    seen: list[dict[str, Any]] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        text = params["messages"][0]["content"]["text"]
        return {
            "role": "assistant",
            "content": {"type": "text", "text": f"short({text})"},
            "model": "m",
        }

    async with Client(
        server=proxy(asking_server()),
        protocol_version=HANDSHAKE,
        elicitation_handler=elicit,
        sampling_handler=sample,
        roots=["file:///work/a", "file:///work/b"],
    ) as client:
        named = await client.call_tool("ask_name", {})
        assert named["content"][0]["text"] == "accept: {'name': 'Ada'}"
        assert seen[0]["message"] == "Your name?"
        summary = await client.call_tool("summarize", {"text": "long"})
        assert summary["content"][0]["text"] == "short(Summarize: long)"
        roots = await client.call_tool("where", {})
        assert roots["content"][0]["text"] == "file:///work/a,file:///work/b"
        caps = await client.call_tool("capabilities", {})
        assert caps["content"][0]["text"] == "elicitation,roots,sampling"


async def test_the_upstream_sees_only_what_the_downstream_client_declared() -> None:
    async with Client(server=proxy(asking_server()), protocol_version=HANDSHAKE) as client:
        caps = await client.call_tool("capabilities", {})
        assert caps["content"][0]["text"] == ""
        refused = await client.call_tool("ask_name", {})
        assert refused["isError"] is True
        assert "elicitation" in refused["content"][0]["text"]


async def test_the_downstream_clients_roots_change_reaches_the_upstream() -> None:
    upstream = asking_server()
    changed = asyncio.Event()

    @upstream.on_roots_changed
    def heard(session: Any) -> None:
        changed.set()

    async with Client(
        server=proxy(upstream), protocol_version=HANDSHAKE, roots=["file:///a"]
    ) as client:
        await client.call_tool("where", {})  # the upstream session is open
        await client.set_roots(["file:///b"])
        await asyncio.wait_for(changed.wait(), 5)
        roots = await client.call_tool("where", {})
        assert roots["content"][0]["text"] == "file:///b"
