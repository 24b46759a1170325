"""Tool transformation: new tools made from local, mounted and proxied ones."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]

from mcpkit import Client, Context, MCPServer
from mcpkit.compose import ArgTransform, ToolTransform, proxy, transform_tool, transform_tools
from mcpkit.errors import RegistrationError, ToolError
from mcpkit.testing import connect

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_server.py"
HANDSHAKE = "2025-11-25"


def search_server() -> MCPServer:
    server = MCPServer(name="s", version="1.0.0")

    @server.tool
    async def search(
        q: str, limit: int = 10, api_key: str = "none", ctx: Context | None = None
    ) -> str:
        """Search the catalogue."""
        return f"{q}|{limit}|{api_key}"

    return server


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("era", [HANDSHAKE, "2026-07-28"])
async def test_a_local_tool_is_renamed_with_arguments_renamed_defaulted_and_hidden(
    era: str,
) -> None:
    server = search_server()
    transform_tools(
        server,
        {
            "search": ToolTransform(
                name="find",
                description="Find products.",
                arguments={
                    "q": ArgTransform(name="query", description="What to look for"),
                    "limit": ArgTransform(default=3),
                    "api_key": ArgTransform(value="secret"),
                },
            )
        },
    )
    async with Client(server=server, protocol_version=era) as client:
        (tool,) = await client.list_tools()
        assert tool["name"] == "find"
        assert tool["description"] == "Find products."
        schema = tool["inputSchema"]
        Draft202012Validator.check_schema(schema)
        assert list(schema["properties"]) == ["query", "limit"]
        assert schema["required"] == ["query"]
        assert schema["properties"]["query"]["description"] == "What to look for"
        assert schema["properties"]["query"]["title"] == "Query"  # not the old name's "Q"
        assert schema["properties"]["limit"]["default"] == 3
        assert text(await client.call_tool("find", {"query": "tea"})) == "tea|3|secret"
        assert text(await client.call_tool("find", {"query": "tea", "limit": 5})) == "tea|5|secret"
        # Validated against the new schema, errors in the new names.
        missing = await client.call_tool("find", {})
        assert missing["isError"] and "query" in text(missing)
        wrong = await client.call_tool("find", {"query": "tea", "limit": "many"})
        assert wrong["isError"] and "limit" in text(wrong)
        # The hidden argument's value is the transform's, not the caller's.
        forced = await client.call_tool("find", {"query": "tea", "api_key": "mine"})
        assert forced["isError"] and "api_key" in text(forced)
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("search", {"q": "tea"})


async def test_keep_originals_serves_both() -> None:
    server = search_server()
    transform_tools(server, {"search": ToolTransform(name="find")}, keep_originals=True)
    async with connect(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["search", "find"]
        assert text(await client.call_tool("search", {"q": "x"})) == "x|10|none"
        assert text(await client.call_tool("find", {"q": "x"})) == "x|10|none"


async def test_a_wrapper_validates_preprocesses_gets_the_context_and_postprocesses() -> None:
    server = search_server()
    original = server.tools.get("search")
    assert original is not None
    logged: list[Any] = []

    async def checked(forward: Any, query: str, ctx: Context) -> Any:
        if not query.strip():
            raise ToolError("say what to look for")
        await ctx.info(f"searching {query}")
        result = await forward(query=query.strip().lower())
        return text(result).upper()

    server.add_tool(
        transform_tool(
            original,
            name="checked_search",
            arguments={"q": ArgTransform(name="query")},
            wrap=checked,
        )
    )
    async with Client(
        server=server, log_handler=logged.append, protocol_version=HANDSHAKE
    ) as client:
        result = await client.call_tool("checked_search", {"query": "  Tea "})
        assert text(result) == "TEA|10|NONE"
        refused = await client.call_tool("checked_search", {"query": " "})
        assert refused["isError"] and text(refused) == "say what to look for"
    assert [entry["data"] for entry in logged] == ["searching   Tea "]


async def test_the_output_is_transformed_with_its_own_output_schema() -> None:
    server = MCPServer(name="s", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    def structured(result: dict[str, Any]) -> dict[str, Any]:
        return {"sum": int(text(result)), "even": int(text(result)) % 2 == 0}

    schema = {
        "type": "object",
        "properties": {"sum": {"type": "integer"}, "even": {"type": "boolean"}},
        "required": ["sum", "even"],
    }
    transform_tools(server, {"add": ToolTransform(output=structured, output_schema=schema)})
    async with connect(server) as client:
        (tool,) = await client.list_tools()
        assert tool["outputSchema"] == schema
        result = await client.call_tool("add", {"a": 2, "b": 2})
        assert result["structuredContent"] == {"sum": 4, "even": True}
        bad = await client.call_tool("add", {"a": "x", "b": 2})
        assert bad["isError"]  # the original's error passes, untransformed


async def test_output_without_a_schema_drops_the_originals() -> None:
    server = MCPServer(name="s", version="1.0.0")

    @server.tool
    def pair(a: int) -> dict[str, int]:
        return {"a": a}

    assert server.tools.get("pair").output_schema is not None  # type: ignore[union-attr]
    transform_tools(
        server, {"pair": ToolTransform(output=lambda r: f"a={r['structuredContent']['a']}")}
    )
    async with connect(server) as client:
        (tool,) = await client.list_tools()
        assert "outputSchema" not in tool
        assert text(await client.call_tool("pair", {"a": 4})) == "a=4"


def test_problems_are_named_at_once() -> None:
    server = search_server()
    with pytest.raises(RegistrationError) as exc:
        transform_tools(
            server,
            {
                "search": ToolTransform(
                    arguments={"nope": ArgTransform(name="x"), "q": ArgTransform(hide=True)}
                ),
                "absent": ToolTransform(name="y"),
            },
        )
    text_ = str(exc.value)
    assert "'nope' is not one of the tool's" in text_
    assert "'q' is required: hiding it needs value= or default=" in text_
    assert "tool 'absent' is not served" in text_
    assert "search" in server.tools  # nothing changed


async def test_a_mounted_tool_is_transformed() -> None:
    child = search_server()
    parent = MCPServer(name="p", version="1.0.0")
    parent.mount(child, namespace="shop")
    transform_tools(
        parent,
        {
            "shop_search": ToolTransform(
                name="shop_find", arguments={"q": ArgTransform(name="text")}
            )
        },
    )
    async with connect(parent) as client:
        assert [t["name"] for t in await client.list_tools()] == ["shop_find"]
        assert text(await client.call_tool("shop_find", {"text": "pen"})) == "pen|10|none"


async def test_a_proxied_stdio_tool_is_transformed() -> None:
    command = shlex.join([sys.executable, "-m", "mcpkit", "run", str(DEMO)])
    server = proxy(command, name="demo-proxy")

    async def doubled(forward: Any, x: int) -> str:
        return f"2x={text(await forward(x=x))}"

    transform_tools(
        server,
        {
            "add": ToolTransform(
                name="double",
                description="Twice x.",
                arguments={"a": ArgTransform(name="x"), "b": ArgTransform(hide=True, default=0)},
                wrap=doubled,
            ),
            "forecast": ToolTransform(arguments={"days": ArgTransform(value=3)}),
        },
    )
    async with Client(server=server, protocol_version=HANDSHAKE) as client:
        # Called before any listing: the session's entry is fetched first.
        assert text(await client.call_tool("double", {"x": 4})) == "2x=4"
        tools = {t["name"]: t for t in await client.list_tools()}
        assert "add" not in tools and {"double", "forecast", "count_slowly"} <= set(tools)
        double = tools["double"]
        Draft202012Validator.check_schema(double["inputSchema"])
        assert double["description"] == "Twice x."
        assert list(double["inputSchema"]["properties"]) == ["x"]
        assert double["inputSchema"]["required"] == ["x"]
        assert list(tools["forecast"]["inputSchema"]["properties"]) == ["city"]
        forecast = await client.call_tool("forecast", {"city": "Oslo"})
        assert forecast["structuredContent"]["temperature_c"] == 21.5  # 18.5 + 3 days
        invalid = await client.call_tool("double", {})
        assert invalid["isError"] and "x" in text(invalid)
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("add", {"a": 1, "b": 2})


@pytest.mark.parametrize("era", [HANDSHAKE, "2026-07-28"])
async def test_a_proxied_tool_lists_its_upstream_once_not_per_call(era: str) -> None:
    upstream = search_server()
    listings: list[str] = []

    async def count(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/list":
            listings.append(ctx.method)
        return await call_next(ctx)

    upstream.add_middleware(count)
    server = proxy(upstream, name="front")
    transform_tools(server, {"search": ToolTransform(arguments={"q": ArgTransform(name="text")})})
    async with Client(server=server, protocol_version=era) as client:
        for word in ("a", "b", "c"):
            result = await client.call_tool("search", {"text": word})
            assert text(result) == f"{word}|10|none"
        refused = await client.call_tool("search", {"q": "a"})
        assert refused["isError"]
    assert len(listings) == 1


async def test_sync_wrapper_and_output_and_a_new_meta() -> None:
    server = search_server()
    original = server.tools.get("search")
    assert original is not None

    def wrap(forward: Any, **arguments: Any) -> Any:
        return forward(**arguments)  # a sync wrapper may hand back the awaitable

    new = transform_tool(
        original,
        name="shout",
        wrap=wrap,
        output=lambda result: text(result).upper(),
        meta={"team": "search"},
    )
    server.add_tool(new)
    async with connect(server) as client:
        listed = {t["name"]: t for t in await client.list_tools()}
        assert listed["shout"]["_meta"] == {"team": "search"}
        assert text(await client.call_tool("shout", {"q": "tea"})) == "TEA|10|NONE"


def test_defaults_and_values_must_be_json() -> None:
    server = search_server()
    original = server.tools.get("search")
    assert original is not None
    with pytest.raises(RegistrationError, match=r"its value .* is not JSON"):
        transform_tool(original, arguments={"api_key": ArgTransform(value=object())})
