"""mount(): the mounted server's middleware runs inside the parent's, for its components only."""

from __future__ import annotations

from typing import Any

from mcpkit import Client, MCPServer
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.testing import connect


def recorder(label: str, seen: list[str]) -> Any:
    async def mw(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        target = ctx.params.get("name") or ctx.params.get("uri") or ""
        seen.append(f"{label} > {ctx.method} {target}")
        result = await call_next(ctx)
        seen.append(f"{label} <")
        return result

    return mw


def child_with(seen: list[str]) -> MCPServer:
    child = MCPServer(name="child", version="1.0.0", middleware=[recorder("child", seen)])

    @child.tool
    def hello() -> str:
        seen.append("hello runs")
        return "hi"

    @child.prompt
    def greet() -> str:
        return "Say hi"

    @child.resource("mem://note")
    def note() -> str:
        return "a note"

    return child


async def test_the_childs_middleware_runs_inside_the_parents_with_the_childs_names() -> None:
    seen: list[str] = []
    parent = MCPServer(name="parent", version="1.0.0", middleware=[recorder("parent", seen)])

    @parent.tool
    def local() -> str:
        return "here"

    parent.mount(child_with(seen), namespace="kid")
    async with connect(parent) as client:
        seen.clear()
        await client.call_tool("kid_hello")
        assert seen == [
            "parent > tools/call kid_hello",
            "child > tools/call hello",
            "hello runs",
            "child <",
            "parent <",
        ]
        seen.clear()
        await client.call_tool("local")
        assert seen == ["parent > tools/call local", "parent <"]
        seen.clear()
        await client.get_prompt("kid_greet")
        await client.read_resource("mem://kid/note")
        assert seen == [
            "parent > prompts/get kid_greet",
            "child > prompts/get greet",
            "child <",
            "parent <",
            "parent > resources/read mem://kid/note",
            "child > resources/read mem://note",
            "child <",
            "parent <",
        ]
        seen.clear()
        await client.list_tools()  # a listing is the parent's: the child's chain stays out
        assert seen == ["parent > tools/list ", "parent <"]


async def test_a_childs_middleware_can_refuse_a_call_to_its_tool() -> None:
    async def deny(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "tools/call" and ctx.params.get("name") == "secret":
            return {"content": [{"type": "text", "text": "denied by child"}], "isError": True}
        return await call_next(ctx)

    child = MCPServer(name="child", version="1.0.0", middleware=[deny])

    @child.tool
    def secret() -> str:
        return "the secret"

    parent = MCPServer(name="parent", version="1.0.0")
    parent.mount(child, namespace="kid")
    async with connect(parent) as client:
        result = await client.call_tool("kid_secret")
    assert result["content"][0]["text"] == "denied by child"


async def test_middleware_of_every_level_runs_for_a_tool_mounted_two_levels_deep() -> None:
    seen: list[str] = []
    top = MCPServer(name="top", version="1.0.0", middleware=[recorder("top", seen)])
    middle = MCPServer(name="middle", version="1.0.0", middleware=[recorder("middle", seen)])
    middle.mount(child_with(seen), namespace="kid")
    top.mount(middle, namespace="mid")
    async with connect(top) as client:
        seen.clear()
        await client.call_tool("mid_kid_hello")
    assert seen == [
        "top > tools/call mid_kid_hello",
        "middle > tools/call kid_hello",
        "child > tools/call hello",
        "hello runs",
        "child <",
        "middle <",
        "top <",
    ]


def test_a_child_without_middleware_adds_none_to_the_parent() -> None:
    parent = MCPServer(name="parent", version="1.0.0")
    parent.mount(MCPServer(name="plain", version="1.0.0"), namespace="plain")
    assert parent.middleware == ()


async def test_the_childs_middleware_runs_on_the_stateless_era_too() -> None:
    seen: list[str] = []
    parent = MCPServer(name="parent", version="1.0.0")
    parent.mount(child_with(seen), namespace="kid")
    async with Client(server=parent, protocol_version="2026-07-28") as client:
        seen.clear()
        result = await client.call_tool("kid_hello")
    assert result["content"][0]["text"] == "hi"
    assert seen == ["child > tools/call hello", "hello runs", "child <"]


async def test_a_completion_of_a_mounted_prompt_passes_the_childs_chain_with_its_name() -> None:
    refs: list[Any] = []

    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "completion/complete":
            refs.append(ctx.params["ref"])
        return await call_next(ctx)

    child = MCPServer(name="child", version="1.0.0", middleware=[record])

    @child.prompt
    def greet(who: str) -> str:
        return f"Say hi to {who}"

    @child.completion(prompt="greet", argument="who")
    def people(value: str) -> list[str]:
        return ["ada", "alan"]

    parent = MCPServer(name="parent", version="1.0.0")
    parent.mount(child, namespace="kid")
    async with connect(parent) as client:
        done = await client.complete({"type": "ref/prompt", "name": "kid_greet"}, "who", "a")
    assert done["values"] == ["ada", "alan"]
    assert refs == [{"type": "ref/prompt", "name": "greet"}]
