"""A 2026-07-28 client's subscriptions/listen on a proxy, followed on the upstream.

Everything over real sockets: the upstream and the proxy each served on uvicorn (the
upstream in a process of its own in the first test), the client speaking 2026-07-28 to
the proxy, and the proxy speaking either era upstream (a subscriptions/listen of its
own, or resources/subscribe on a handshake session).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.compose import proxy
from mcpkit.server.middleware import CallNext, MiddlewareContext
from tests.cli.test_run import _running
from tests.client.http_servers import serve
from tests.transports.stdio_peer import TIMEOUT

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
URI = "notes://today"


# The upstream process: a resource it updates, and a tool it adds, when told to.
NOTES = """
from mcpkit import MCPServer

server = MCPServer(name="notes", version="1.0.0")


@server.resource("notes://today", mime_type="text/plain")
def today() -> str:
    return "sunny"


@server.tool
async def touch() -> str:
    \"\"\"Update notes://today.\"\"\"
    await server.resources.notify_updated("notes://today")
    return "touched"


@server.tool
async def grow() -> str:
    \"\"\"Add a tool.\"\"\"
    server.tool(lambda: "new", name="fresh", description="new")
    await server.tools.notify_list_changed()
    return "grown"
"""


async def _banner_url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stderr is not None
    line = (await asyncio.wait_for(proc.stderr.readline(), 3 * TIMEOUT)).decode()
    prefix = "mcpkit: serving 'notes' on http://127.0.0.1:"
    assert line.startswith(prefix), line
    return f"http://127.0.0.1:{int(line[len(prefix) :].split('/')[0])}/mcp"


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_2026_listener_on_the_proxy_hears_an_upstream_process(
    era: str, tmp_path: Path
) -> None:
    script = tmp_path / "notes.py"
    script.write_text(NOTES)
    updated: list[str] = []
    changed: list[str] = []
    async with _running(str(script), "-t", "http", "--port", "0") as proc:
        upstream_url = await _banner_url(proc)
        async with serve(proxy(upstream_url, upstream_version=era).http_app()) as url:
            async with Client(
                url=url,
                protocol_version=MODERN,
                on_resource_updated=updated.append,
                on_list_changed=changed.append,
            ) as client:
                await client.subscribe_resource(URI)
                # Called through the proxy, run by the upstream process, heard by the listen.
                await client.call_tool("touch", {})
                await settle(lambda: updated == [URI])
                await client.call_tool("grow", {})
                await settle(lambda: "tools" in changed)
                assert "fresh" in {t["name"] for t in await client.list_tools()}


def upstream_server() -> MCPServer:
    server = MCPServer(name="notes", version="1.0.0")

    @server.resource(URI, mime_type="text/plain")
    def today() -> str:
        return "sunny"

    @server.resource("notes://other", mime_type="text/plain")
    def other() -> str:
        return "cloudy"

    @server.tool
    def ping() -> str:
        return "pong"

    return server


def following(server: MCPServer) -> list[set[str]]:
    """The subscriptions of the upstream's live sessions that follow something."""
    return [set(s.subscriptions) for s in server.sessions() if s.subscriptions]


async def settle(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_an_upstream_resource_update_and_list_change_reach_a_2026_listener(
    era: str,
) -> None:
    upstream = upstream_server()
    updated: list[str] = []
    changed: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        async with serve(proxy(upstream_url, upstream_version=era).http_app()) as url:
            async with Client(
                url=url,
                protocol_version=MODERN,
                on_resource_updated=updated.append,
                on_list_changed=changed.append,
            ) as client:
                assert client.protocol_version == MODERN
                await client.subscribe_resource(URI)
                # The proxy follows the URI upstream, on one connection of the stream's own.
                await settle(lambda: following(upstream) == [{URI}])
                await upstream.resources.notify_updated("notes://other")  # not asked for
                await upstream.resources.notify_updated(URI)
                await settle(lambda: updated == [URI])
                await upstream.tools.notify_list_changed()
                await settle(lambda: changed == ["tools"])
                assert updated == [URI]
            # The client went away: so did the upstream subscription and its connection.
            await settle(lambda: following(upstream) == [])


async def test_the_upstream_listen_asks_for_what_the_downstream_one_was_granted() -> None:
    upstream = upstream_server()
    filters: list[dict[str, Any]] = []

    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "subscriptions/listen":
            filters.append(ctx.params.get("notifications") or {})
        return await call_next(ctx)

    upstream.add_middleware(record)
    updated: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        async with serve(proxy(upstream_url, upstream_version=MODERN).http_app()) as url:
            # No list_changed callback nor cache: the listen asks for resource updates alone.
            async with Client(
                url=url, protocol_version=MODERN, on_resource_updated=updated.append, cache=False
            ) as client:
                await client.subscribe_resource(URI)
                await settle(lambda: following(upstream) == [{URI}])
                await upstream.resources.notify_updated(URI)
                await settle(lambda: updated == [URI])
    # Only what the downstream stream asked for: no list changes, one URI.
    assert filters == [{"resourceSubscriptions": [URI]}]


async def test_each_listen_has_one_upstream_connection_closed_when_it_ends() -> None:
    upstream = upstream_server()
    async with serve(upstream.http_app()) as upstream_url:
        async with serve(proxy(upstream_url, upstream_version=HANDSHAKE).http_app()) as url:
            clients: list[Any] = []
            for _ in range(3):
                client = Client(url=url, protocol_version=MODERN, on_resource_updated=print)
                await client.connect()
                await client.subscribe_resource(URI)
                clients.append(client)
            await settle(lambda: following(upstream) == [{URI}] * 3)
            # Changing a listen's filter replaces the stream: still one upstream each.
            await clients[0].subscribe_resource("notes://other")
            await settle(lambda: sorted(map(len, following(upstream))) == [1, 1, 2])
            for client in clients:
                await client.aclose()
            await settle(lambda: following(upstream) == [])


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_list_change_heard_by_every_pooled_connection_reaches_a_listener_once(
    era: str,
) -> None:
    upstream = upstream_server()
    entered: list[int] = []
    release = asyncio.Event()

    @upstream.tool
    async def hold() -> str:
        entered.append(1)
        await release.wait()
        return "held"

    changed: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        async with serve(proxy(upstream_url, upstream_version=era).http_app()) as url:
            async with Client(
                url=url, protocol_version=MODERN, on_list_changed=changed.append
            ) as client:
                # Two calls at once: two pooled connections, each hearing the upstream.
                calls = [asyncio.create_task(client.call_tool("hold", {})) for _ in range(2)]
                await settle(lambda: len(entered) == 2)
                release.set()
                await asyncio.gather(*calls)
                await upstream.tools.notify_list_changed()
                await settle(lambda: changed == ["tools"])
                await asyncio.sleep(0.3)  # a second copy would have arrived by now
                assert changed == ["tools"]


async def test_a_gateway_listener_hears_its_upstreams_under_their_namespaces() -> None:
    upstream = upstream_server()
    updated: list[str] = []
    changed: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        gateway = MCPServer.from_config({"mcpServers": {"up": {"url": upstream_url}}})
        async with serve(gateway.http_app()) as url:
            async with Client(
                url=url,
                protocol_version=MODERN,
                on_resource_updated=updated.append,
                on_list_changed=changed.append,
            ) as client:
                (namespaced,) = [
                    r["uri"] for r in await client.list_resources() if r["name"] == "today"
                ]
                assert namespaced != URI
                await client.subscribe_resource(namespaced)
                await settle(lambda: following(upstream) == [{URI}])
                await upstream.resources.notify_updated(URI)
                await settle(lambda: updated == [namespaced])
                await upstream.tools.notify_list_changed()
                await settle(lambda: "tools" in changed)
            await settle(lambda: following(upstream) == [])


async def test_a_listen_on_the_proxys_own_resource_opens_no_upstream_connection() -> None:
    upstream = upstream_server()
    subscribed: list[str] = []

    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method in ("subscriptions/listen", "resources/subscribe"):
            subscribed.append(ctx.method)
        return await call_next(ctx)

    upstream.add_middleware(record)
    updated: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        server = proxy(upstream_url)

        @server.resource("local://status", mime_type="text/plain")
        def status() -> str:
            return "ok"

        async with serve(server.http_app()) as url:
            async with Client(
                url=url, protocol_version=MODERN, on_resource_updated=updated.append, cache=False
            ) as client:
                await client.subscribe_resource("local://status")
                await server.resources.notify_updated("local://status")
                await settle(lambda: updated == ["local://status"])
    assert subscribed == []
    assert following(upstream) == []
