"""Typed hooks (Hooks) with mcpkit's client, in memory and over Streamable HTTP, both eras."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import (
    CallNext,
    Client,
    Context,
    Forbidden,
    MCPServer,
    MiddlewareContext,
    RemoteError,
    Text,
    ToolResult,
)
from mcpkit.middleware import (
    CallToolParams,
    CallToolResult,
    GetPromptParams,
    GetPromptResult,
    HookContext,
    HookNext,
    Hooks,
    InitializeParams,
    InitializeResult,
    ListParams,
    ReadResourceParams,
)
from mcpkit.testing import connect
from tests.fixtures.middleware_server import Name
from tests.middleware.conftest import demo
from tests.transports.conftest import TIMEOUT, run_app

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CASES = [("memory", LEGACY), ("memory", MODERN), ("http", LEGACY), ("http", MODERN)]

Defs = list[dict[str, Any]]


class Policy(Hooks):
    """Every typed hook at work, recording what it saw."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.done = asyncio.Event()

    async def on_initialize(
        self,
        context: HookContext[InitializeParams],
        call_next: HookNext[InitializeParams, InitializeResult],
    ) -> InitializeResult:
        self.seen.append(f"initialize {context.params['clientInfo'].get('name')}")
        result = await call_next(context)
        return {**result, "instructions": "hooked instructions"}

    async def on_call_tool(
        self,
        context: HookContext[CallToolParams],
        call_next: HookNext[CallToolParams, CallToolResult],
    ) -> CallToolResult:
        params = context.params
        self.seen.append(f"call {params['name']} {context.era}")
        if params["name"] == "other":
            raise Forbidden("other is off limits")
        arguments = params.get("arguments", {})
        if arguments.get("text") == "canned":
            made: CallToolResult = ToolResult([Text("from the hook")]).to_dict()  # type: ignore[assignment]
            return made  # short-circuit: the handler never runs
        context.params = {**params, "arguments": {"text": arguments["text"].upper()}}
        result = await call_next(context)
        assert not result.get("isError")
        return {**result, "content": [*result["content"], {"type": "text", "text": "checked"}]}

    async def on_list_tools(
        self, context: HookContext[ListParams], call_next: HookNext[ListParams, Defs]
    ) -> Defs:
        assert "cursor" not in context.params
        tools = await call_next(context)
        return [t for t in tools if t["name"] != "other"]

    async def on_read_resource(
        self,
        context: HookContext[ReadResourceParams],
        call_next: HookNext[ReadResourceParams, Defs],
    ) -> Defs:
        self.seen.append(f"read {context.params['uri']}")
        contents = await call_next(context)
        return [{**c, "text": c["text"] + " (hooked)"} for c in contents]

    async def on_get_prompt(
        self,
        context: HookContext[GetPromptParams],
        call_next: HookNext[GetPromptParams, GetPromptResult],
    ) -> GetPromptResult:
        name = context.params.get("arguments", {})["name"]
        context.params = {**context.params, "arguments": {"name": name + "!"}}
        result = await call_next(context)
        return {**result, "description": "hooked prompt"}

    async def on_list_prompts(
        self, context: HookContext[ListParams], call_next: HookNext[ListParams, Defs]
    ) -> Defs:
        return [{**p, "title": "Greeting"} for p in await call_next(context)]

    async def on_list_resources(
        self, context: HookContext[ListParams], call_next: HookNext[ListParams, Defs]
    ) -> Defs:
        self.seen.append("resources")
        return await call_next(context)

    async def on_notification(
        self, context: HookContext[dict[str, Any]], call_next: HookNext[dict[str, Any], None]
    ) -> None:
        self.seen.append(context.method)
        await call_next(context)
        self.done.set()


@contextlib.asynccontextmanager
async def client_for(server: MCPServer, transport: str, revision: str) -> AsyncIterator[Client]:
    options: dict[str, Any] = {"protocol_version": revision, "timeout": TIMEOUT}
    if transport == "memory":
        async with Client(server=server, **options) as client:
            yield client
        return
    async with run_app(server.http_app()) as base:
        async with Client(url=f"{base}/mcp", **options) as client:
            yield client


@pytest.mark.parametrize(("transport", "revision"), CASES, ids=[f"{t}-{r}" for t, r in CASES])
async def test_typed_hooks_change_requests_and_results(transport: str, revision: str) -> None:
    policy = Policy()
    server = demo(middleware=[policy])
    async with client_for(server, transport, revision) as client:
        result = await client.call_tool("echo", {"text": "hi"})
        assert [c["text"] for c in result["content"]] == ["HI", "checked"]
        canned = await client.call_tool("echo", {"text": "canned"})
        assert canned["content"] == [{"type": "text", "text": "from the hook"}]
        with pytest.raises(RemoteError) as refused:
            await client.call_tool("other", {})
        assert refused.value.code == -31403
        assert [t["name"] for t in await client.list_tools()] == ["echo"]
        read = await client.read_resource("demo://readme")
        assert read["contents"][0]["text"] == "read 1 (hooked)"
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert prompt["description"] == "hooked prompt"
        assert prompt["messages"][0]["content"]["text"] == "Hello Ada!"
        assert (await client.list_prompts())[0]["title"] == "Greeting"
        await client.list_resources()
        if revision == LEGACY:
            assert client.session.instructions == "hooked instructions"
            await asyncio.wait_for(policy.done.wait(), TIMEOUT)  # notifications/initialized
    era = "handshake" if revision == LEGACY else "stateless"
    calls = [f"call echo {era}", f"call echo {era}", f"call other {era}"]
    expected = [*calls, "read demo://readme", "resources"]
    if revision == LEGACY:
        # on_initialize: the handshake era only (2026-07-28 has no initialize).
        expected = ["initialize mcpkit", "notifications/initialized", *expected]
    assert sorted(policy.seen) == sorted(expected)
    assert server.reads == ["readme"]  # type: ignore[attr-defined]


def tagging(name: str, trail: list[str]) -> Any:
    async def mw(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        trail.append(f"{name}>")
        try:
            return await call_next(ctx)
        finally:
            trail.append(f"<{name}")

    return mw


class Tagged(Hooks):
    def __init__(self, trail: list[str]) -> None:
        self.trail = trail

    async def on_request(
        self,
        context: HookContext[dict[str, Any]],
        call_next: HookNext[dict[str, Any], dict[str, Any]],
    ) -> dict[str, Any]:
        self.trail.append(f"request {context.method}>")
        result = await call_next(context)
        self.trail.append("<request")
        return result

    async def on_call_tool(
        self,
        context: HookContext[CallToolParams],
        call_next: HookNext[CallToolParams, CallToolResult],
    ) -> CallToolResult:
        self.trail.append("call_tool>")
        result = await call_next(context)
        self.trail.append("<call_tool")
        return result


@pytest.mark.parametrize("revision", [LEGACY, MODERN])
async def test_hooks_nest_with_plain_middleware_in_the_list_order(revision: str) -> None:
    trail: list[str] = []
    server = demo(middleware=[tagging("a", trail), Tagged(trail), tagging("b", trail)])
    async with Client(server=server, protocol_version=revision, timeout=TIMEOUT) as client:
        trail.clear()
        await client.call_tool("echo", {"text": "x"})
        assert trail == [
            "a>",
            "request tools/call>",
            "call_tool>",
            "b>",
            "<b",
            "<call_tool",
            "<request",
            "<a",
        ]
        trail.clear()
        await client.list_prompts()  # no typed hook: on_request alone
        assert trail == ["a>", "request prompts/list>", "b>", "<b", "<request", "<a"]


class OnlyCalls(Hooks):
    async def on_call_tool(
        self,
        context: HookContext[CallToolParams],
        call_next: HookNext[CallToolParams, CallToolResult],
    ) -> CallToolResult:
        return await call_next(context)


async def test_a_method_without_a_hook_gets_no_step() -> None:
    server = demo(middleware=[OnlyCalls()])
    assert set(server.middleware_chains.requests) == {"tools/call"}
    assert server.wrapped_methods["tools/list"] is server.methods["tools/list"]
    assert server.middleware_chains.notification("notifications/initialized") is None


async def test_a_result_passed_on_unchanged_is_the_handlers_own_dict() -> None:
    results: list[dict[str, Any]] = []

    async def capture(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        result = await call_next(ctx)
        results.append(result)
        return result

    server = demo(middleware=[capture, OnlyCalls(), capture])
    async with connect(server) as client:
        await client.call_tool("echo", {"text": "same"})
    outer, inner = results[1], results[0]  # the inner capture returns first
    assert outer is inner


async def test_a_hook_returning_the_wrong_type_is_an_internal_error() -> None:
    class Broken(Hooks):
        async def on_list_tools(self, context: Any, call_next: Any) -> Any:
            return {"tools": []}  # a dict, not the list of definitions

    async with connect(demo(middleware=[Broken()])) as client:
        with pytest.raises(RemoteError) as caught:
            await client.list_tools()
    assert caught.value.code == -32603


async def test_a_tool_hook_returning_a_result_object_is_an_internal_error() -> None:
    class Unconverted(Hooks):
        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            return ToolResult(structured_content={"n": 1})  # not .to_dict()

    async with connect(demo(middleware=[Unconverted()])) as client:
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("echo", {"text": "x"})
    assert caught.value.code == -32603


async def test_a_mounted_servers_hooks_see_its_own_names_and_change_its_arguments() -> None:
    seen: list[str] = []

    class Child(Hooks):
        async def on_call_tool(self, context: Any, call_next: Any) -> CallToolResult:
            seen.append(context.params["name"])
            context.params = {**context.params, "arguments": {"text": "from the child's hook"}}
            return await call_next(context)  # type: ignore[no-any-return]

    child = demo(middleware=[Child()])
    parent = MCPServer(name="parent", version="1")
    parent.mount(child, namespace="kid")
    async with connect(parent) as client:
        result = await client.call_tool("kid_echo", {"text": "hi"})
        await client.list_tools()
    assert result["content"][0]["text"] == "from the child's hook"
    assert seen == ["echo"]
    # The child watches tools/call only: the parent's other methods get no step.
    assert set(parent.middleware_chains.requests) == {"tools/call"}


async def test_a_hooks_called_as_a_plain_middleware_runs_the_methods_hook() -> None:
    class Shout(Hooks):
        async def on_call_tool(self, context: Any, call_next: Any) -> CallToolResult:
            context.params = {**context.params, "arguments": {"text": "LOUD"}}
            return await call_next(context)  # type: ignore[no-any-return]

    shout = Shout()

    async def wrapper(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        return await shout(ctx, call_next)  # whole, as code outside the server's chain may

    async with connect(demo(middleware=[wrapper])) as client:
        result = await client.call_tool("echo", {"text": "quiet"})
        assert len(await client.list_tools()) == 2  # no hook: passed on
    assert result["content"][0]["text"] == "LOUD"


@pytest.mark.parametrize("revision", [LEGACY, MODERN])
async def test_a_tool_hook_sees_each_input_round_on_the_stateless_era(revision: str) -> None:
    rounds: list[str] = []

    class Rounds(Hooks):
        async def on_call_tool(self, context: Any, call_next: Any) -> CallToolResult:
            result: CallToolResult = await call_next(context)
            rounds.append(result.get("resultType", "-"))
            return result

    server = MCPServer(name="ask", version="1", middleware=[Rounds()])

    @server.tool
    async def ask(ctx: Context) -> str:
        """Elicit a name."""
        answer = await ctx.elicit("Your name?", Name)
        return f"hello {answer.content.name}" if answer.content is not None else answer.action

    options: dict[str, Any] = {
        "protocol_version": revision,
        "timeout": TIMEOUT,
        "capabilities": {"elicitation": {}},
        "elicitation_handler": lambda params: {"action": "accept", "content": {"name": "Ada"}},
    }
    async with Client(server=server, **options) as client:
        result = await client.call_tool("ask", {})
    assert result["content"][0]["text"] == "hello Ada"
    # 2026-07-28: the round asking for input, then the retry that completes.
    assert rounds == (["-"] if revision == LEGACY else ["input_required", "complete"])
