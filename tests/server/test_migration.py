"""Porting from FastMCP and the official SDK: positional names, a default version, and
one clear error for each keyword mcpkit spells differently."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.server.migration import FOREIGN_OPTIONS
from mcpkit.server.server import DEFAULT_VERSION
from mcpkit.testing import connect


async def test_a_server_takes_its_name_first_and_has_a_default_version() -> None:
    server = MCPServer("Demo")
    assert (server.name, server.version, DEFAULT_VERSION) == ("Demo", "0.1.0", "0.1.0")
    async with connect(server) as client:
        info = client.initialize_result["serverInfo"]
        assert (info["name"], info["version"]) == ("Demo", "0.1.0")
    assert MCPServer(name="Kw", version="2.0").version == "2.0"  # the keyword form stays


async def test_tool_and_prompt_take_their_name_first() -> None:
    server = MCPServer("names")

    @server.tool("search", description="Find things")
    def find(q: str) -> str:
        return q

    @server.prompt("review")
    def make_review(code: str) -> str:
        return f"review {code}"

    async with connect(server) as client:
        (tool,) = await client.list_tools()
        assert (tool["name"], tool["description"]) == ("search", "Find things")
        result = await client.call_tool("search", {"q": "x"})
        assert result["content"][0]["text"] == "x"
        (prompt,) = await client.list_prompts()
        assert prompt["name"] == "review"
    assert find("y") == "y"  # the decorator returns the function


@pytest.mark.parametrize(
    ("where", "keyword", "spelling"),
    [
        ("MCPServer", "mask_error_details", "debug="),
        ("MCPServer", "list_page_size", "limits=ServerLimits(page_size=...)"),
        ("MCPServer", "cache_ttl", "cache=CacheOptions(ttl_ms=...)"),
        ("MCPServer", "log_level", "default_log_level="),
        ("tool", "auth", "scopes=[...]"),
        ("resource", "auth", "scopes=[...]"),
        ("prompt", "auth", "scopes=[...]"),
    ],
)
def test_a_foreign_keyword_names_mcpkits_spelling_in_one_line(
    where: str, keyword: str, spelling: str
) -> None:
    options: dict[str, Any] = {keyword: True}
    server = MCPServer("s")

    def fn() -> str:
        return ""

    with pytest.raises(TypeError) as info:
        if where == "MCPServer":
            MCPServer("s", **options)
        elif where == "tool":
            server.tool(**options)(fn)
        elif where == "resource":
            server.resource("data://x", **options)(fn)
        else:
            server.prompt(**options)(fn)
    message = str(info.value)
    assert "\n" not in message
    assert f"{where}({keyword}=...)" in message and spelling in message


def test_every_foreign_keyword_is_refused_where_it_is_listed() -> None:
    for keyword in FOREIGN_OPTIONS["MCPServer"]:
        with pytest.raises(TypeError, match="not mcpkit's spelling"):
            MCPServer("s", **{keyword: None})
    for keyword in FOREIGN_OPTIONS["tool"]:
        with pytest.raises(TypeError, match="not mcpkit's spelling"):
            MCPServer("s").tool(**{keyword: None})


def test_an_unknown_keyword_is_still_a_plain_type_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        MCPServer("s").tool(colour="blue")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        MCPServer("s", **{"colour": "blue"})
