"""Tool-search mode: two tools listed, every tool found by BM25 and still callable."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from mcpkit import Client, MCPServer, ServerLimits
from mcpkit.auth.info import AuthInfo
from mcpkit.compose import proxy, tool_search
from mcpkit.compose.bm25 import BM25Index, tokens
from mcpkit.server.tools import create_tool
from mcpkit.testing import connect

ERAS = ["2025-11-25", "2026-07-28"]


def test_tokens_split_names_and_drop_plurals() -> None:
    assert tokens("getWeather_forecasts-v2.HTTPServer") == [
        "get",
        "weather",
        "forecast",
        "v",
        "2",
        "http",
        "server",
    ]
    assert tokens("the class of an address") == ["class", "address"]  # no plural, no "the"


def test_bm25_ranks_rare_terms_higher_and_ignores_documents_without_terms() -> None:
    texts = ("cat dog", "dog", "cat dog fish", "bird dog")
    index = BM25Index([Counter(tokens(t)) for t in texts])
    ranked = index.search(tokens("cat"), 10)
    assert [i for i, _ in ranked] == [0, 2]  # the shorter document first
    assert index.search(tokens("dog bird"), 1)[0][0] == 3  # 'bird' is rarer than 'dog'
    assert index.search(tokens("horse"), 5) == []


def catalogue() -> MCPServer:
    server = MCPServer(name="big", version="1.0.0")

    @server.tool
    def get_forecast(city: str, days: int = 1) -> str:
        """The weather of the coming days for a city."""
        return f"sunny in {city} for {days}"

    @server.tool
    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email message to someone."""
        return f"sent to {to}"

    @server.tool(meta={"tags": ["billing"]})
    def create_invoice(customer: str, amount: float) -> str:
        """Bill a customer."""
        return f"invoice for {customer}"

    @server.tool(scopes=["admin"])
    def delete_everything() -> str:
        """Delete every record in the database."""
        return "gone"

    for i in range(40):
        server.add_tool(
            create_tool(
                id=f"noise_{i}",
                description=f"Unrelated operation number {i} on the inventory database.",
                execute=lambda: "noise",
                input_schema={"type": "object", "properties": {}},
            )
        )
    return server


async def found(client: Any, query: str, limit: int = 3) -> list[str]:
    result = await client.call_tool("search_tools", {"query": query, "limit": limit})
    return [t["name"] for t in result["structuredContent"]["tools"]]


@pytest.mark.parametrize("era", ERAS)
async def test_the_listing_is_the_two_tools_and_every_tool_stays_callable(era: str) -> None:
    server = catalogue()
    tool_search(server)
    async with Client(server=server, protocol_version=era) as client:
        listed = await client.list_tools()
        assert [t["name"] for t in listed] == ["search_tools", "call_tool"]
        assert (await found(client, "weather tomorrow in Paris"))[0] == "get_forecast"
        assert (await found(client, "email"))[0] == "send_email"
        assert (await found(client, "billing"))[0] == "create_invoice"  # by its tag
        result = (await client.call_tool("search_tools", {"query": "weather"}))["structuredContent"]
        assert result["tools"][0]["inputSchema"]["required"] == ["city"]
        direct = await client.call_tool("get_forecast", {"city": "Oslo"})
        assert direct["content"][0]["text"] == "sunny in Oslo for 1"
        called = await client.call_tool(
            "call_tool", {"name": "get_forecast", "arguments": {"city": "Rome", "days": 2}}
        )
        assert called["content"][0]["text"] == "sunny in Rome for 2"
        unknown = await client.call_tool("call_tool", {"name": "nope", "arguments": {}})
        assert unknown["isError"] and "Unknown tool: nope" in unknown["content"][0]["text"]
        itself = await client.call_tool("call_tool", {"name": "call_tool"})
        assert itself["isError"]


async def test_a_search_finds_only_what_the_caller_may_see() -> None:
    server = catalogue()
    tool_search(server, pinned=["send_email", "delete_everything"])
    reader = AuthInfo(token="t", client_id="reader", scopes=frozenset({"read"}))
    admin = AuthInfo(token="t", client_id="root", scopes=frozenset({"admin"}))
    async with connect(server, auth_info=reader) as client:
        listed = [t["name"] for t in await client.list_tools()]
        assert listed == ["search_tools", "call_tool", "send_email"]
        assert "delete_everything" not in await found(client, "delete every record")
        refused = await client.call_tool("call_tool", {"name": "delete_everything"})
        assert refused["isError"]
        client.auth_info = admin
        assert (await found(client, "delete every record"))[0] == "delete_everything"
        listed = [t["name"] for t in await client.list_tools()]
        assert listed == ["search_tools", "call_tool", "send_email", "delete_everything"]


async def test_tools_added_later_are_found_and_mounted_ones_too() -> None:
    server = catalogue()
    child = MCPServer(name="maps", version="1.0.0")

    @child.tool
    def route(origin: str, destination: str) -> str:
        """Driving directions between two places."""
        return "left, then right"

    server.mount(child, namespace="maps")
    search = tool_search(server)
    async with connect(server) as client:
        assert (await found(client, "directions"))[0] == "maps_route"
        assert "translate" not in await found(client, "translate text")

        @server.tool
        def translate(text: str, language: str) -> str:
            """Translate text into another language."""
            return text

        assert (await found(client, "translate text"))[0] == "translate"
        assert len(search.indexes) == 2  # one index per distinct listing, kept


async def test_five_thousand_tools_are_searched() -> None:
    server = MCPServer(name="huge", version="1.0.0")
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    for i in range(5000):
        server.add_tool(
            create_tool(
                id=f"op_{i}",
                description=f"Operation {i}: {words[i % 8]} {words[(i // 8) % 8]} records.",
                execute=lambda: "ok",
                input_schema={"type": "object", "properties": {}},
            )
        )
    server.add_tool(
        create_tool(
            id="rotate_keys",
            description="Rotate the encryption keys of a vault.",
            execute=lambda: "rotated",
            input_schema={"type": "object", "properties": {}},
        )
    )
    tool_search(server)
    async with connect(server) as client:
        assert len(await client.list_tools()) == 2
        assert await found(client, "encryption vault", 1) == ["rotate_keys"]
        hits = await found(client, "alpha beta", 50)
        assert len(hits) == 50 and "op_8" in hits  # op_8: alpha beta
        result = await client.call_tool("call_tool", {"name": "op_4999", "arguments": {}})
        assert result["content"][0]["text"] == "ok"


async def test_a_paginated_listing_is_searched_whole() -> None:
    server = MCPServer(name="paged", version="1.0.0", limits=ServerLimits(page_size=7))
    for tool in catalogue().tools:
        server.add_tool(tool)
    tool_search(server)
    async with connect(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["search_tools", "call_tool"]
        assert (await found(client, "email someone"))[0] == "send_email"
        assert (await found(client, "bill customer"))[0] == "create_invoice"


@pytest.mark.parametrize("era", ERAS)
async def test_a_proxied_servers_tools_are_searched_and_called(era: str) -> None:
    server = proxy(catalogue(), name="front")
    tool_search(server)
    async with Client(server=server, protocol_version=era) as client:
        assert [t["name"] for t in await client.list_tools()] == ["search_tools", "call_tool"]
        assert (await found(client, "weather forecast"))[0] == "get_forecast"
        called = await client.call_tool(
            "call_tool", {"name": "get_forecast", "arguments": {"city": "Lima"}}
        )
        assert called["content"][0]["text"] == "sunny in Lima for 1"
        direct = await client.call_tool("send_email", {"to": "a", "subject": "b", "body": "c"})
        assert direct["content"][0]["text"] == "sent to a"
