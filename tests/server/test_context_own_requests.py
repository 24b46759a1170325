"""ctx.read_resource and ctx.get_prompt: a handler reads its own server's resources and prompts.

The server here is a proxy of the demo example run as a real stdio process, with a
server mounted on it and a resource of its own: a tool reads all three kinds through
the same dispatch a client's request takes (middleware, scopes), on both eras.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo
from mcpkit.errors import FORBIDDEN, RemoteError, ResourceNotFound
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.testing import connect

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_server.py"
ERAS = ["2025-11-25", "2026-07-28"]


def hub() -> MCPServer:
    """A proxy of the demo server (stdio), a mounted server and a resource of its own."""
    server = MCPServer.proxy(shlex.join([sys.executable, str(DEMO)]), name="hub")
    child = MCPServer(name="child", version="1.0.0")

    @child.resource("mem://hello", mime_type="text/plain")
    def hello() -> str:
        return "hello from the child"

    @child.prompt
    def greet(who: str) -> str:
        return f"Greet {who}."

    server.mount(child, namespace="kid")

    @server.resource("own://motto", scopes=["motto:read"])
    def motto() -> str:
        return "compose, don't stack"

    @server.tool
    async def gather(ctx: Context) -> dict[str, Any]:
        mounted = await ctx.read_resource("mem://kid/hello")
        proxied = await ctx.read_resource("config://app")
        mounted_prompt = await ctx.get_prompt("kid_greet", {"who": "Ada"})
        proxied_prompt = await ctx.get_prompt("greeting", {"name": "Bob", "style": "formal"})
        return {
            "mounted": mounted["contents"][0]["text"],
            "proxied": proxied["contents"][0]["text"],
            "mounted_prompt": mounted_prompt["messages"][0]["content"]["text"],
            "proxied_prompt": proxied_prompt["messages"][0]["content"]["text"],
        }

    @server.tool
    async def motto_of_the_day(ctx: Context) -> str:
        text: str = (await ctx.read_resource("own://motto"))["contents"][0]["text"]
        return text

    @server.tool
    def sync_read(ctx: Context) -> str:  # run in a worker thread: the read blocks it
        text: str = ctx.read_resource("mem://kid/hello")["contents"][0]["text"]
        return text

    @server.tool
    async def missing(ctx: Context) -> str:
        try:
            await ctx.read_resource("own://nothing")
        except ResourceNotFound as exc:
            return f"not found: {exc}"
        return "found?"

    return server


@pytest.mark.parametrize("version", ERAS)
async def test_a_tool_reads_mounted_and_proxied_resources_and_prompts(version: str) -> None:
    server = hub()
    async with connect(
        server, protocol_version=version, initialize=version != "2026-07-28"
    ) as client:
        result = await client.call_tool("gather", {})
    assert not result.get("isError"), result
    assert result["structuredContent"] == {
        "mounted": "hello from the child",
        "proxied": '{"theme":"dark","language":"en"}',
        "mounted_prompt": "Greet Ada.",
        "proxied_prompt": "Write a formal greeting for Bob.",
    }


async def test_the_read_passes_through_the_middleware_with_the_calling_request_id() -> None:
    server = hub()
    seen: list[tuple[str, Any]] = []

    @server.add_middleware
    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        seen.append((ctx.method, ctx.request_id))
        return await call_next(ctx)

    async with connect(server) as client:
        await client.call_tool("gather", {})
    calls = [(m, i) for m, i in seen if m != "initialize"]
    ((_, call_id),) = [(m, i) for m, i in calls if m == "tools/call"]
    assert [m for m, _ in calls] == [
        "tools/call",
        "resources/read",
        "resources/read",
        "prompts/get",
        "prompts/get",
    ]
    assert {i for _, i in calls} == {call_id}


async def test_the_callers_scopes_apply_to_what_a_tool_reads() -> None:
    server = hub()
    weak = AuthInfo(token="t", subject="eve", scopes=frozenset())
    strong = AuthInfo(token="t", subject="ann", scopes=frozenset({"motto:read"}))
    async with connect(server, auth_info=weak) as client:
        # The resource's insufficient-scope error is the call's, as if the client read it.
        with pytest.raises(RemoteError, match=r"needs the scope\(s\) motto:read") as exc:
            await client.call_tool("motto_of_the_day", {})
    assert exc.value.code == FORBIDDEN
    async with connect(server, auth_info=strong) as client:
        allowed = await client.call_tool("motto_of_the_day", {})
    assert allowed["content"][0]["text"] == "compose, don't stack"


async def test_a_missing_resource_raises_resource_not_found_in_the_tool() -> None:
    async with connect(hub()) as client:
        result = await client.call_tool("missing", {})
    assert result["content"][0]["text"].startswith("not found:")


async def test_a_sync_tool_reads_by_blocking_its_worker_thread() -> None:
    async with connect(hub()) as client:
        result = await client.call_tool("sync_read", {})
    assert result["content"][0]["text"] == "hello from the child"
