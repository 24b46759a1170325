"""server.tools: change listeners and renamed copies (the seams a live mount uses)."""

from __future__ import annotations

from mcpkit import MCPServer
from mcpkit.server.tools import ToolDefinition
from mcpkit.testing import connect


def test_listeners_hear_adds_and_removes_of_present_tools_in_order() -> None:
    server = MCPServer(name="s", version="1")
    heard: list[tuple[str, str, str | None]] = []

    def first(name: str, tool: ToolDefinition | None) -> None:
        heard.append(("first", name, tool.name if tool else None))

    def second(name: str, tool: ToolDefinition | None) -> None:
        heard.append(("second", name, tool.name if tool else None))

    server.tools.add_listener(first)
    server.tools.add_listener(second)

    @server.tool
    def ping() -> str:
        return "pong"

    server.tools.remove("ping")
    server.tools.remove("ping")  # absent: nothing to hear
    server.tools.remove_listener(first)
    server.tools.remove_listener(first)  # absent: no error
    server.add_tool(ping)
    assert heard == [
        ("first", "ping", "ping"),
        ("second", "ping", "ping"),
        ("first", "ping", None),
        ("second", "ping", None),
        ("second", "ping", "ping"),
    ]


async def test_a_renamed_copy_lists_and_calls_under_its_new_name() -> None:
    server = MCPServer(name="s", version="1")

    @server.tool(title="Add")
    async def add(a: int, b: int) -> int:
        return a + b

    original = server.tools.get("add")
    assert original is not None
    original.describe()  # the original's listing is cached before the copy is made
    server.tools.add(original.renamed("math_add"))
    async with connect(server) as client:
        listed = {t["name"]: t for t in await client.list_tools()}
        assert set(listed) == {"add", "math_add"}
        assert listed["math_add"]["inputSchema"] == listed["add"]["inputSchema"]
        assert listed["math_add"]["title"] == "Add"
        result = await client.call_tool("math_add", {"a": 2, "b": 3})
        assert result["content"][0]["text"] == "5"
    assert original.describe()["name"] == "add"
