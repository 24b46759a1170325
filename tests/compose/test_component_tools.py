"""Resources and prompts as tools: a tools-only client reaches them all, on both eras."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.compose import prompts_as_tools, proxy, resources_as_tools

ERAS = ["2025-11-25", "2026-07-28"]
PIXEL = base64.b64encode(b"\x89PNG fake").decode()


def library() -> MCPServer:
    server = MCPServer(name="library", version="1.0.0")

    @server.resource("notes://readme", mime_type="text/plain", description="The readme")
    def readme() -> str:
        return "read me first"

    @server.resource("notes://{name}", mime_type="text/plain")
    def note(name: str) -> str:
        return f"note {name}"

    @server.resource("img://logo", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG fake"

    @server.prompt
    def greeting(name: str, style: str = "friendly") -> str:
        """Greet someone."""
        return f"Say hello to {name}, {style}."

    return server


def upstream() -> MCPServer:
    server = MCPServer(name="upstream", version="1.0.0")

    @server.resource("remote://fact", mime_type="text/plain")
    def fact() -> str:
        return "proxied fact"

    @server.prompt
    def summary(topic: str) -> str:
        return f"Summarize {topic}."

    return server


def served() -> MCPServer:
    # A proxy of an upstream, with the library mounted on it: own, mounted and proxied.
    server = proxy(upstream(), name="front")
    server.mount(library(), namespace="lib")
    resources_as_tools(server)
    prompts_as_tools(server)
    return server


@pytest.mark.parametrize("era", ERAS)
async def test_resources_are_listed_and_read_through_tools(era: str) -> None:
    async with Client(server=served(), protocol_version=era) as client:
        names = {t["name"] for t in await client.list_tools()}
        assert {"list_resources", "read_resource", "list_prompts", "get_prompt"} <= names
        listing = (await client.call_tool("list_resources", {}))["structuredContent"]
        uris = {r["uri"] for r in listing["resources"]}
        assert uris == {"notes://lib/readme", "img://lib/logo", "remote://fact"}
        assert [t["uriTemplate"] for t in listing["resourceTemplates"]] == ["notes://lib/{name}"]

        async def read(uri: str) -> dict[str, Any]:
            return await client.call_tool("read_resource", {"uri": uri})

        assert (await read("notes://lib/readme"))["content"] == [
            {"type": "text", "text": "read me first"}
        ]
        assert (await read("notes://lib/today"))["content"][0]["text"] == "note today"
        assert (await read("remote://fact"))["content"][0]["text"] == "proxied fact"
        image = (await read("img://lib/logo"))["content"][0]
        assert image == {"type": "image", "data": PIXEL, "mimeType": "image/png"}
        missing = await read("nothing://here")
        assert missing["isError"]
        assert "cannot read 'nothing://here'" in missing["content"][0]["text"]


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_are_listed_and_got_through_tools(era: str) -> None:
    async with Client(server=served(), protocol_version=era) as client:
        listing = (await client.call_tool("list_prompts", {}))["structuredContent"]
        assert {p["name"] for p in listing["prompts"]} == {"summary", "lib_greeting"}
        got = await client.call_tool(
            "get_prompt", {"name": "lib_greeting", "arguments": {"name": "Ada", "style": "warm"}}
        )
        (message,) = got["structuredContent"]["messages"]
        assert message["content"]["text"] == "Say hello to Ada, warm."
        proxied = await client.call_tool(
            "get_prompt", {"name": "summary", "arguments": {"topic": "MCP"}}
        )
        assert "Summarize MCP." in proxied["content"][0]["text"]
        bad = await client.call_tool("get_prompt", {"name": "lib_greeting"})
        assert bad["isError"] and "lib_greeting" in bad["content"][0]["text"]
        invalid = await client.call_tool("get_prompt", {"name": "x", "arguments": {"a": 1}})
        assert invalid["isError"]  # arguments are strings (the tool's input schema)


async def test_the_tools_names_can_be_changed() -> None:
    server = library()
    resources_as_tools(server, list_name="resources", read_name="read")
    async with Client(server=server, protocol_version=ERAS[0]) as client:
        names = [t["name"] for t in await client.list_tools()]
        assert names == ["resources", "read"]
        read = await client.call_tool("read", {"uri": "notes://readme"})
        assert read["content"][0]["text"] == "read me first"
