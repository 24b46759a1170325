"""A resource hidden on the way (by the serving server, or by a mounted server's own
rules) is not followed on the upstream, and its updates never reach the subscriber,
whether it was hidden before the subscription or while it was open; a proxy, a proxy
mounted two levels deep, and mounted servers two levels deep. Both eras downstream and
upstream, over real sockets.
"""

from __future__ import annotations

import pytest

from mcpkit import Client, MCPServer
from mcpkit.compose import proxy
from tests.client.http_servers import serve
from tests.compose.test_listening import HANDSHAKE, MODERN, URI, following, settle

OTHER = "notes://other"
TAGGED = "notes://tagged"


def upstream_server() -> MCPServer:
    server = MCPServer(name="notes", version="1.0.0")

    @server.resource(URI, mime_type="text/plain")
    def today() -> str:
        return "sunny"

    @server.resource(OTHER, mime_type="text/plain")
    def other() -> str:
        return "cloudy"

    # Proxied components' tags are their _meta's (server/sourced_visibility.py).
    @server.resource(TAGGED, mime_type="text/plain", meta={"tags": ["secret"]})
    def tagged() -> str:
        return "hush"

    return server


def uris(listing: list[dict[str, str]]) -> dict[str, str]:
    """The upstream's URI (by its last part) -> the URI the client knows it by."""
    return {"notes://" + r["uri"].rsplit("/", 1)[-1]: r["uri"] for r in listing}


@pytest.mark.parametrize("down", [MODERN, HANDSHAKE])
@pytest.mark.parametrize("up", [MODERN, HANDSHAKE])
async def test_a_resource_the_proxy_hides_is_not_followed_nor_heard(up: str, down: str) -> None:
    upstream = upstream_server()
    updated: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        served = proxy(upstream_url, upstream_version=up)
        served.disable(URI)
        served.disable(tags={"secret"})
        async with serve(served.http_app()) as url:
            async with Client(
                url=url, protocol_version=down, on_resource_updated=updated.append
            ) as client:
                assert {r["uri"] for r in await client.list_resources()} == {OTHER}
                for uri in (URI, TAGGED, OTHER):  # accepted, as an unknown URI is
                    await client.subscribe_resource(uri)
                await settle(lambda: following(upstream) == [{OTHER}])
                for uri in (URI, TAGGED, OTHER):
                    await upstream.resources.notify_updated(uri)
                await settle(lambda: OTHER in updated)
                assert updated == [OTHER]


@pytest.mark.parametrize("down", [MODERN, HANDSHAKE])
@pytest.mark.parametrize("up", [MODERN, HANDSHAKE])
async def test_a_proxy_mounted_two_deep_follows_only_what_every_level_shows(
    up: str, down: str
) -> None:
    upstream = upstream_server()
    updated: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        inner = proxy(upstream_url, upstream_version=up)
        inner.disable(TAGGED)  # the proxy's own rules, two levels down
        middle = MCPServer(name="middle", version="1.0.0")
        middle.mount(inner, namespace="l1")
        outer = MCPServer(name="outer", version="1.0.0")
        outer.mount(middle, namespace="l2")
        async with serve(outer.http_app()) as url:
            async with Client(
                url=url, protocol_version=down, on_resource_updated=updated.append
            ) as client:
                known = uris(await client.list_resources())
                assert set(known) == {URI, OTHER}
                hidden = known[URI].replace("today", "tagged")  # under the same namespaces
                for uri in (hidden, known[URI], known[OTHER]):
                    await client.subscribe_resource(uri)
                await settle(lambda: following(upstream) == [{URI, OTHER}])
                # The outermost server hides one while the subscription is open.
                outer.disable(known[URI])
                for uri in (TAGGED, URI, OTHER):
                    await upstream.resources.notify_updated(uri)
                await settle(lambda: known[OTHER] in updated)
                assert updated == [known[OTHER]]
                outer.enable(known[URI])  # shown again: heard again
                updated.clear()
                await upstream.resources.notify_updated(URI)
                await settle(lambda: updated == [known[URI]])


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_resource_a_mounted_server_hides_mid_subscription_is_heard_no_more(
    era: str,
) -> None:
    child = MCPServer(name="child", version="1.0.0")

    @child.resource(URI)
    def today() -> str:
        return "sunny"

    @child.resource(OTHER)
    def other() -> str:
        return "cloudy"

    middle = MCPServer(name="middle", version="1.0.0")
    middle.mount(child, namespace="l1")
    outer = MCPServer(name="outer", version="1.0.0")
    outer.mount(middle, namespace="l2")
    updated: list[str] = []
    async with serve(outer.http_app()) as url:
        async with Client(url=url, protocol_version=era, on_resource_updated=updated.append) as c:
            known = uris(await c.list_resources())
            for uri in known.values():
                await c.subscribe_resource(uri)
            child.disable(URI)  # the child's own rules, two levels down
            await child.resources.notify_updated(URI)
            await child.resources.notify_updated(OTHER)
            await settle(lambda: known[OTHER] in updated)
            assert updated == [known[OTHER]]


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_resource_a_gateway_hides_is_not_followed_on_its_upstream(era: str) -> None:
    upstream = upstream_server()
    updated: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        gateway = MCPServer.from_config({"mcpServers": {"up": {"url": upstream_url}}})
        async with serve(gateway.http_app()) as url:
            async with Client(
                url=url, protocol_version=era, on_resource_updated=updated.append
            ) as client:
                known = uris(await client.list_resources())
                gateway.disable(known[URI])
                for uri in known.values():
                    await client.subscribe_resource(uri)
                await settle(lambda: following(upstream) == [{TAGGED, OTHER}])
                for uri in (URI, OTHER):
                    await upstream.resources.notify_updated(uri)
                await settle(lambda: known[OTHER] in updated)
                assert updated == [known[OTHER]]


@pytest.mark.parametrize("down", [MODERN, HANDSHAKE])
@pytest.mark.parametrize("up", [MODERN, HANDSHAKE])
async def test_a_resource_a_mounted_proxy_hides_mid_subscription_is_heard_no_more(
    up: str, down: str
) -> None:
    upstream = upstream_server()
    updated: list[str] = []
    async with serve(upstream.http_app()) as upstream_url:
        inner = proxy(upstream_url, upstream_version=up)
        middle = MCPServer(name="middle", version="1.0.0")
        middle.mount(inner, namespace="l1")
        outer = MCPServer(name="outer", version="1.0.0")  # no rules of its own
        outer.mount(middle, namespace="l2")
        async with serve(outer.http_app()) as url:
            async with Client(
                url=url, protocol_version=down, on_resource_updated=updated.append
            ) as client:
                known = uris(await client.list_resources())
                for uri in (known[URI], known[OTHER]):
                    await client.subscribe_resource(uri)
                await settle(lambda: following(upstream) == [{URI, OTHER}])
                inner.disable(URI)  # the proxy's own rules, two levels down, meanwhile
                for uri in (URI, OTHER):
                    await upstream.resources.notify_updated(uri)
                await settle(lambda: known[OTHER] in updated)
                assert updated == [known[OTHER]]
