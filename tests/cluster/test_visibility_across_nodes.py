"""Per-caller visibility across two nodes on one Redis, over real HTTP (issue 20).

A caller's own rules (``ctx.disable_components``) set through node A hold on node B,
for its listing and its calls: a handshake session's (kept in its session record,
``set`` on the bus for the nodes that cached it), and on 2026-07-28 a principal's
(kept in the store's ``visibility``, ``v`` on the bus). The client hears
``tools/list_changed`` on the stream another node holds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from mcpkit.client import Client
from mcpkit.errors import RemoteError
from tests.cluster.conftest import Cluster
from tests.cluster.drivers import TIMEOUT, proxy_log, standalone_stream

TARGET = "tests/cluster/visibility_app.py:server"

pytestmark = [
    pytest.mark.cluster(nodes=2, target=TARGET),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


@contextlib.asynccontextmanager
async def client_of(
    cluster: Cluster, token: str, version: str, events: list[str]
) -> AsyncIterator[Client]:
    async with Client(
        url=cluster.url,
        protocol_version=version,
        supported_versions=(version,),
        timeout=TIMEOUT,
        headers={"Authorization": f"Bearer {token}"},
        on_list_changed=events.append,
    ) as client:
        yield client


async def names_on(cluster: Cluster, node: int, client: Client) -> set[str]:
    cluster.proxy.pin(node)
    return {t["name"] for t in await client.list_tools()}


async def call_on(cluster: Cluster, node: int, client: Client, tool: str) -> str:
    cluster.proxy.pin(node)
    result = await client.call_tool(tool, {})
    assert cluster.proxy.log[-1].backend == node, proxy_log(cluster)
    return str(result["content"][0]["text"])


async def heard(events: list[str], count: int) -> None:
    async with asyncio.timeout(5):
        while events.count("tools") < count:
            await asyncio.sleep(0.02)


async def test_a_sessions_rules_set_on_one_node_hold_on_the_other(cluster: Cluster) -> None:
    events: list[str] = []
    async with asyncio.timeout(TIMEOUT):
        cluster.proxy.pin(0)
        async with client_of(cluster, "alice-token", "2025-11-25", events) as alice:
            await standalone_stream(cluster)
            # Node 1 first sees the session after the change: rebuilt from its record.
            assert await call_on(cluster, 0, alice, "hide_admin") == "hidden"
            await heard(events, 1)
            assert "purge" not in await names_on(cluster, 1, alice)
            with pytest.raises(RemoteError, match="Tool 'purge' is disabled"):
                await call_on(cluster, 1, alice, "purge")
            # Node 0 has the session cached: the reset made on node 1 reaches it.
            assert await call_on(cluster, 1, alice, "reset") == "reset"
            await heard(events, 2)
            assert "purge" in await names_on(cluster, 0, alice)
            assert await call_on(cluster, 0, alice, "purge") == "purged"
            assert await call_on(cluster, 0, alice, "hide_admin") == "hidden"
            assert "purge" not in await names_on(cluster, 1, alice)
        async with client_of(cluster, "alice-token", "2025-11-25", []) as again:
            # Another session of the same principal: the rules were the session's own.
            assert "purge" in await names_on(cluster, 1, again)


async def test_a_principals_rules_set_on_one_node_hold_on_the_other(cluster: Cluster) -> None:
    events: list[str] = []
    modern = "2026-07-28"
    async with (
        asyncio.timeout(TIMEOUT),
        client_of(cluster, "alice-token", modern, events) as alice,
        client_of(cluster, "bob-token", modern, []) as bob,
    ):
        await alice.subscribe_resource("none://x")  # opens the listen stream, acknowledged
        cluster.proxy.unpin()
        assert "purge" in await names_on(cluster, 1, alice)  # node 1 remembers: no rules
        assert await call_on(cluster, 0, alice, "hide_admin") == "hidden"
        await heard(events, 1)
        assert "purge" not in await names_on(cluster, 1, alice)
        with pytest.raises(RemoteError, match="Tool 'purge' is disabled"):
            await call_on(cluster, 1, alice, "purge")
        assert "purge" in await names_on(cluster, 1, bob)
        assert await call_on(cluster, 1, bob, "purge") == "purged"
        assert await call_on(cluster, 1, alice, "reset") == "reset"
        assert "purge" in await names_on(cluster, 0, alice)
        assert await call_on(cluster, 0, alice, "purge") == "purged"
