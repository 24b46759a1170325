"""Per-tool ``timeout=`` (cancels the handler, a clear tool error) and ``version=`` on tools
and resources."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from mcpkit import MCPServer, create_tool, mcp_resource, mcp_tool
from mcpkit.errors import RegistrationError, RemoteError
from mcpkit.testing import connect


async def test_an_async_tool_past_its_timeout_is_cancelled_with_a_clear_error() -> None:
    server = MCPServer("t")
    cancelled = asyncio.Event()

    @server.tool(timeout=0.05)
    async def slow() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    async with connect(server) as client:
        started = time.monotonic()
        result = await client.call_tool("slow")
        assert time.monotonic() - started < 5
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Tool 'slow' timed out after 0.05 s"
    assert cancelled.is_set()  # the handler itself was cancelled


async def test_a_sync_tool_answers_at_its_deadline() -> None:
    server = MCPServer("t")
    release = threading.Event()

    @server.tool(timeout=0.05)
    def blocking() -> str:
        release.wait(10)
        return "late"

    async with connect(server) as client:
        result = await client.call_tool("blocking")
    release.set()
    assert result["isError"] is True and "timed out after 0.05 s" in result["content"][0]["text"]


async def test_a_fast_tool_and_the_tools_own_timeout_error_are_unchanged() -> None:
    server = MCPServer("t")

    @server.tool(timeout=5)
    async def quick() -> str:
        return "done"

    @server.tool(timeout=5)
    async def own_timeout() -> str:
        raise TimeoutError("the database timed out")

    async with connect(server) as client:
        assert (await client.call_tool("quick"))["content"][0]["text"] == "done"
        result = await client.call_tool("own_timeout")
    assert result["isError"] is True and "timed out after" not in result["content"][0]["text"]


@pytest.mark.parametrize("bad", [0, -1, "5", float("inf")])
def test_a_bad_timeout_is_refused_at_registration(bad: object) -> None:
    with pytest.raises(RegistrationError, match="timeout must be a positive number"):
        create_tool(id="t", description="", execute=lambda: "", timeout=bad)  # type: ignore[arg-type]


def test_a_timeout_on_an_inline_tool_is_refused() -> None:
    def inline() -> str:
        return ""

    with pytest.raises(RegistrationError, match="cannot stop a tool run on the event loop"):
        MCPServer("t").tool(timeout=1, run_in_thread=False)(inline)


async def test_tool_versions_are_listed_and_chosen_by_the_call() -> None:
    server = MCPServer("t")

    @server.tool("convert", version="1")
    def convert_v1(x: int) -> str:
        return f"v1:{x}"

    @server.tool("convert", version="2")
    def convert_v2(x: int) -> str:
        return f"v2:{x}"

    async with connect(server) as client:
        (listed,) = await client.list_tools()  # one name, the latest version
        assert (listed["name"], listed["version"]) == ("convert", "2")
        latest = await client.call_tool("convert", {"x": 1})
        assert latest["content"][0]["text"] == "v2:1"
        chosen = await client.request(
            "tools/call", {"name": "convert", "arguments": {"x": 1}, "version": "1"}
        )
        assert chosen["content"][0]["text"] == "v1:1"
        with pytest.raises(RemoteError, match="Unknown version '3' of tool 'convert'"):
            await client.request("tools/call", {"name": "convert", "version": "3"})
    server.tools.remove("convert")  # every version goes
    assert server.tools.get("convert", "1") is None


async def test_resource_versions_are_listed_and_checked_on_read() -> None:
    server = MCPServer("t")

    @server.resource("data://schema", version="2024-01")
    def schema() -> str:
        return "{}"

    class Docs:
        @mcp_resource("docs://{page}", version="3")
        def page(self, page: str) -> str:
            return page

        @mcp_tool(version="7", timeout=1)
        def lookup(self) -> str:
            return "x"

    server.scan(Docs())
    async with connect(server) as client:
        (resource,) = await client.list_resources()
        assert resource["version"] == "2024-01"
        (template,) = await client.list_resource_templates()
        assert template["version"] == "3"
        ok = await client.request("resources/read", {"uri": "data://schema", "version": "2024-01"})
        assert ok["contents"][0]["text"] == "{}"
        with pytest.raises(RemoteError, match="has no version '1999'"):
            await client.request("resources/read", {"uri": "data://schema", "version": "1999"})
        with pytest.raises(RemoteError, match="has no version '2'"):
            await client.request("resources/read", {"uri": "docs://a", "version": "2"})
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["lookup"]["version"] == "7"
    assert server.tools.get("lookup", "7") is not None
    assert server.tools.by_name["lookup"].timeout == 1
