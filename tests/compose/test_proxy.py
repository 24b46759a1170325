"""proxy(): another server's components served locally, one upstream session per downstream one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import Client, Context, MCPServer
from mcpkit.compose import proxy
from mcpkit.compose.proxy import ProxySource, client_options
from mcpkit.errors import ConfigurationError, RemoteError, ToolError
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.testing import connect


class Upstream:
    """An upstream server that counts the handshakes it answers."""

    def __init__(self) -> None:
        self.initializes = 0
        server = self.server = MCPServer(name="weather", version="2.0.0", middleware=[self.count])

        @server.tool
        def forecast(city: str) -> str:
            """The forecast for a city."""
            return f"sunny in {city}"

        @server.tool
        async def slow(ctx: Context) -> str:
            await ctx.progress(1, 2, "half way")
            await ctx.info("working on it")
            await ctx.progress(2, 2, "done")
            return "finished"

        @server.tool
        def fails() -> str:
            raise ToolError("no forecast today")

        @server.resource("weather://stations", mime_type="text/plain")
        def stations() -> str:
            return "paris,oslo"

        @server.resource("weather://city/{name}")
        def city(name: str) -> str:
            return f"city {name}"

        @server.prompt
        def report(city: str) -> str:
            return f"Write a weather report for {city}"

        @server.completion(prompt="report", argument="city")
        def cities(value: str) -> list[str]:
            return [c for c in ("paris", "oslo") if c.startswith(value)]

    async def count(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "initialize":
            self.initializes += 1
        return await call_next(ctx)


async def settle(condition: Any, *, within: float = 2.0) -> None:
    """Wait until ``condition()`` holds (a notification or a close is delivered by a task)."""
    for _ in range(int(within / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


async def test_the_proxy_serves_every_kind_of_the_upstreams_components() -> None:
    up = Upstream()
    async with connect(proxy(up.server)) as client:
        assert [t["name"] for t in await client.list_tools()] == ["forecast", "slow", "fails"]
        result = await client.call_tool("forecast", {"city": "Oslo"})
        assert result["content"][0]["text"] == "sunny in Oslo"
        assert [r["uri"] for r in await client.list_resources()] == ["weather://stations"]
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["weather://city/{name}"]
        read = await client.read_resource("weather://city/rome")
        assert read["contents"][0]["text"] == "city rome"
        assert [p["name"] for p in await client.list_prompts()] == ["report"]
        got = await client.get_prompt("report", {"city": "Oslo"})
        assert got["messages"][0]["content"]["text"] == "Write a weather report for Oslo"
        done = await client.complete({"type": "ref/prompt", "name": "report"}, "city", "o")
        assert done["values"] == ["oslo"]
        caps = client.initialize_result["capabilities"] if client.initialize_result else {}
        assert {"tools", "resources", "prompts", "completions"} <= set(caps)


async def test_one_upstream_handshake_per_downstream_session_opened_on_first_use() -> None:
    up = Upstream()
    server = MCPServer.proxy(up.server, name="front")
    async with connect(server) as one, connect(server) as two:
        assert up.initializes == 0  # nothing is opened before a request needs it
        for i in range(10):
            await one.call_tool("forecast", {"city": f"c{i}"})
        await one.list_tools()
        await one.read_resource("weather://stations")
        assert up.initializes == 1
        await asyncio.gather(*(two.call_tool("forecast", {"city": "x"}) for _ in range(5)))
        assert up.initializes == 2  # concurrent first requests share one handshake


async def test_the_upstream_session_ends_with_the_downstream_one() -> None:
    up = Upstream()
    server = proxy(up.server)
    async with connect(up.server):  # keeps the upstream's lifespan up between sessions
        async with connect(server) as client:
            await client.call_tool("forecast", {"city": "Oslo"})
            assert len(up.server.sessions()) == 2
        await settle(lambda: len(up.server.sessions()) == 1)


async def test_the_upstreams_list_changed_reaches_the_downstream_session() -> None:
    up = Upstream()
    async with connect(proxy(up.server)) as client:
        await client.list_tools()

        @up.server.tool
        def added() -> str:
            return "new"

        await up.server.tools.notify_list_changed()
        await settle(
            lambda: any(
                n["method"] == "notifications/tools/list_changed" for n in client.notifications
            )
        )
        assert "added" in [t["name"] for t in await client.list_tools()]


async def test_progress_and_logs_of_an_upstream_call_reach_the_downstream_request() -> None:
    up = Upstream()
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[Any] = []
    async with Client(
        server=proxy(up.server), log_handler=logs.append, protocol_version="2025-11-25"
    ) as client:
        result = await client.call_tool(
            "slow", {}, progress=lambda p, t, m: progress.append((p, t, m))
        )
    assert result["content"][0]["text"] == "finished"
    assert progress == [(1, 2, "half way"), (2, 2, "done")]
    assert [entry["data"] for entry in logs] == ["working on it"]


async def test_upstream_errors_keep_their_codes() -> None:
    up = Upstream()
    async with connect(proxy(up.server)) as client:
        with pytest.raises(RemoteError, match="Unknown tool") as unknown:
            await client.call_tool("nope", {})
        assert unknown.value.code == -32602
        with pytest.raises(RemoteError) as missing:
            await client.read_resource("other://thing")
        assert missing.value.code == -32002
        failed = await client.call_tool("fails", {})  # a tool error stays a result
        assert failed["isError"] is True
        assert failed["content"][0]["text"] == "no forecast today"


async def test_the_proxys_own_tools_come_first() -> None:
    up = Upstream()
    server = proxy(up.server)

    @server.tool
    def forecast(city: str) -> str:
        return f"local forecast for {city}"

    async with connect(server) as client:
        names = [t["name"] for t in await client.list_tools()]
        assert names[0] == "forecast"
        result = await client.call_tool("forecast", {"city": "Oslo"})
        assert result["content"][0]["text"] == "local forecast for Oslo"


async def test_an_unreachable_upstream_is_a_clear_error_and_is_tried_again() -> None:
    server = proxy("/nonexistent/mcp-server-binary --flag")
    async with connect(server) as client:
        for _ in range(2):  # no connection is kept from the failed attempt
            with pytest.raises(RemoteError, match=r"upstream server .* is unavailable") as exc:
                await client.call_tool("anything", {})
            assert exc.value.code == -32603
            assert exc.value.data == {"upstream": "'/nonexistent/mcp-server-binary --flag'"}


async def test_sequential_stateless_downstream_requests_share_one_upstream() -> None:
    up = Upstream()
    server = proxy(up.server)
    async with connect(server):  # the proxy's lifespan, which closes the pooled upstreams
        for _ in range(3):
            async with connect(server, protocol_version="2026-07-28", initialize=False) as c:
                result = await c.call_tool("forecast", {"city": "Oslo"})
                assert result["content"][0]["text"] == "sunny in Oslo"
        assert up.initializes == 1
    sources = [s for s in server.component_sources if isinstance(s, ProxySource)]
    assert sources and not sources[0].pool.members


def test_targets_are_read_as_client_options() -> None:
    assert client_options("https://example.com/mcp") == {"url": "https://example.com/mcp"}
    assert client_options("python -m srv --port '8 0'") == {
        "command": "python",
        "args": ["-m", "srv", "--port", "8 0"],
    }
    entry = client_options({"type": "sse", "url": "http://h/sse", "headers": {"A": "b"}})
    assert entry["url"] == "http://h/sse" and entry["http_transport"] == "sse"
    assert entry["headers"] == {"A": "b"}
    stdio = client_options({"command": "node", "args": ["s.js"], "env": {"K": "v"}})
    assert (stdio["command"], stdio["args"], stdio["env"]) == ("node", ("s.js",), {"K": "v"})
    with pytest.raises(ConfigurationError, match="unknown type"):
        client_options({"type": "carrier-pigeon", "url": "http://h"})
    with pytest.raises(ConfigurationError, match="empty"):
        client_options("  ")
    with pytest.raises(ConfigurationError, match="not int"):
        proxy(3)  # type: ignore[arg-type]


async def test_a_cancelled_downstream_call_is_cancelled_upstream() -> None:
    up = Upstream()
    started, stopped = asyncio.Event(), asyncio.Event()

    @up.server.tool
    async def wait() -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "never"

    async with Client(server=proxy(up.server), protocol_version="2025-11-25") as client:
        call = asyncio.create_task(client.call_tool("wait", {}))
        await asyncio.wait_for(started.wait(), 5)
        call.cancel()
        await asyncio.wait_for(stopped.wait(), 5)
        after = await client.call_tool("forecast", {"city": "Oslo"})  # the session goes on
        assert after["content"][0]["text"] == "sunny in Oslo"


async def test_a_subscription_follows_the_upstream_resource() -> None:
    up = Upstream()
    async with connect(proxy(up.server)) as client:
        await client.subscribe_resource("weather://stations")
        (upstream_session,) = up.server.sessions()
        assert upstream_session.subscriptions == {"weather://stations"}
        await up.server.resources.notify_updated("weather://stations")
        await settle(
            lambda: any(
                n["method"] == "notifications/resources/updated"
                and n["params"] == {"uri": "weather://stations"}
                for n in client.notifications
            )
        )
        await client.unsubscribe_resource("weather://stations")
        assert upstream_session.subscriptions == set()


async def test_the_downstream_log_level_is_passed_up_before_and_after_connecting() -> None:
    up = Upstream()

    @up.server.tool
    async def chatty(ctx: Context) -> str:
        await ctx.debug("fine detail")
        await ctx.warning("careful")
        return "ok"

    async with connect(proxy(up.server)) as client:
        await client.set_logging_level("debug")  # before any upstream connection
        await client.call_tool("chatty", {})
        await client.set_logging_level("warning")  # while connected
        await client.call_tool("chatty", {})
    logged = [n["params"]["data"] for n in client.notifications if n["method"].endswith("message")]
    assert logged == ["fine detail", "careful", "careful"]


async def test_a_pooled_upstreams_logs_and_progress_reach_the_request_leasing_it() -> None:
    up = Upstream()
    logs: list[Any] = []
    progress: list[float] = []
    async with Client(server=proxy(up.server), log_handler=logs.append) as client:
        assert client.protocol_version == "2026-07-28"  # stateless: a pooled upstream
        result = await client.call_tool("slow", {}, progress=lambda p, t, m: progress.append(p))
    assert result["content"][0]["text"] == "finished"
    assert progress == [1, 2]
    # A log message names no request; the pooled connection carried this call alone.
    assert [entry["data"] for entry in logs] == ["working on it"]


async def test_the_envelope_of_a_stateless_call_is_not_passed_up() -> None:
    up = Upstream()
    seen: list[dict[str, Any]] = []

    @up.server.tool
    def meta(ctx: Context) -> str:
        seen.append(dict(ctx.meta))
        return "ok"

    async with connect(proxy(up.server), protocol_version="2026-07-28", initialize=False) as c:
        await c.request("tools/call", {"name": "meta", "_meta": {"trace": "t1"}})
    assert seen == [{"trace": "t1"}]
