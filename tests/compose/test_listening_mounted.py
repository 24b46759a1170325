"""A 2026-07-28 listen on a server that mounts a proxy, one or two levels deep.

The upstream is an mcpkit server on uvicorn (a real socket), the proxy of it mounted
in a parent (and that parent in another), the outermost served on uvicorn too, and a
2026-07-28 client listening there; the proxy speaks either era upstream.
"""

from __future__ import annotations

import pytest

from mcpkit import Client, MCPServer
from mcpkit.compose import proxy
from tests.client.http_servers import serve
from tests.compose.test_listening import (
    HANDSHAKE,
    MODERN,
    URI,
    following,
    settle,
    upstream_server,
)


def mounted(upstream_url: str, era: str, depth: int) -> MCPServer:
    """The proxy of ``upstream_url`` mounted ``depth`` levels deep (namespaces l1, l2...)."""
    server = proxy(upstream_url, upstream_version=era)
    for level in range(1, depth + 1):
        parent = MCPServer(name=f"level{level}", version="1.0.0")
        parent.mount(server, namespace=f"l{level}")
        server = parent
    return server


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_listener_on_a_server_mounting_a_proxy_hears_the_upstream(
    era: str, depth: int
) -> None:
    upstream = upstream_server()
    updated: list[str] = []
    changed: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        async with serve(mounted(upstream_url, era, depth).http_app()) as url:
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
                # Followed upstream under the upstream's own name, on one connection.
                await settle(lambda: following(upstream) == [{URI}])
                await upstream.resources.notify_updated("notes://other")  # not asked for
                await upstream.resources.notify_updated(URI)
                # ... and heard under the name the listening client knows.
                await settle(lambda: updated == [namespaced])
                await upstream.tools.notify_list_changed()
                await settle(lambda: changed == ["tools"])
                assert updated == [namespaced]
            # The client went away: so did the upstream subscription and its connection.
            await settle(lambda: following(upstream) == [])


async def test_a_listener_on_a_server_mounting_a_gateway_hears_its_upstream() -> None:
    upstream = upstream_server()
    updated: list[str] = []
    changed: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        gateway = MCPServer.from_config({"mcpServers": {"up": {"url": upstream_url}}})
        hub = MCPServer(name="hub", version="1.0.0")
        hub.mount(gateway, namespace="gw")
        async with serve(hub.http_app()) as url:
            async with Client(
                url=url,
                protocol_version=MODERN,
                on_resource_updated=updated.append,
                on_list_changed=changed.append,
            ) as client:
                (namespaced,) = [
                    r["uri"] for r in await client.list_resources() if r["name"] == "today"
                ]
                await client.subscribe_resource(namespaced)
                await settle(lambda: following(upstream) == [{URI}])
                await upstream.resources.notify_updated(URI)
                await settle(lambda: updated == [namespaced])
                await upstream.tools.notify_list_changed()
                await settle(lambda: changed == ["tools"])
            await settle(lambda: following(upstream) == [])


@pytest.mark.parametrize("depth", [1, 2])
async def test_a_handshake_session_subscribed_through_a_mount_hears_the_upstream(
    depth: int,
) -> None:
    upstream = upstream_server()
    updated: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        async with serve(mounted(upstream_url, HANDSHAKE, depth).http_app()) as url:
            async with Client(
                url=url, protocol_version=HANDSHAKE, on_resource_updated=updated.append
            ) as client:
                (namespaced,) = [
                    r["uri"] for r in await client.list_resources() if r["name"] == "today"
                ]
                await client.subscribe_resource(namespaced)
                await settle(lambda: following(upstream) == [{URI}])
                await upstream.resources.notify_updated("notes://other")  # not asked for
                await upstream.resources.notify_updated(URI)
                await settle(lambda: updated == [namespaced])
                # Unsubscribed under the namespaced name: upstream too.
                await client.unsubscribe_resource(namespaced)
                await settle(lambda: following(upstream) == [])
