"""The cluster fixture itself: node processes on a shared Redis, the proxy in front.

What works without cross-node sessions: every node answers on its own, stateless
2026-07-28 requests spread over all nodes, a handshake-era session served by one
node (the proxy pinned or sticky), a killed node skipped and restarted, and the
app's tools (the ones the cross-node tests drive) on one node.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mcpkit.client import Client
from tests.cluster.conftest import Cluster
from tests.transports.conftest import HTTPClient

TIMEOUT = 10.0
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"


def text(result: dict[str, Any]) -> str:
    assert not result.get("isError"), result
    return str(result["content"][0]["text"])


async def test_three_nodes_each_answer_initialize_directly(cluster: Cluster) -> None:
    assert len(cluster.nodes) == 3 and len(set(cluster.pids)) == 3
    assert len(set(cluster.urls)) == 3
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        for pid, url in zip(cluster.pids, cluster.urls, strict=True):
            c = HTTPClient(http, url)
            init = await c.initialize()
            assert init.result["serverInfo"]["name"] == "cluster-node"
            assert text((await c.call_tool("whoami")).result) == str(pid)
            assert (await c.delete()).status_code == 204
    assert cluster.proxy.log == []  # nothing went through the proxy


async def test_stateless_2026_calls_through_the_proxy_reach_every_node(cluster: Cluster) -> None:
    async with Client(url=cluster.url, protocol_version=MODERN, timeout=TIMEOUT) as client:
        assert client.protocol_version == MODERN
        pids = [int(text(await client.call_tool("whoami", {}))) for _ in range(6)]
    assert set(pids) == set(cluster.pids)
    # Each call was answered by the node the proxy sent it to.
    calls = [r for r in cluster.proxy.log if r.rpc == "tools/call"]
    assert [cluster.pids[r.backend] for r in calls if r.backend is not None] == pids
    assert all(r.status == 200 and r.session_id is None for r in calls)


async def answer_elicitation(params: dict[str, Any]) -> dict[str, Any]:
    message = params["message"]
    if message.startswith("Pay"):
        return {"action": "accept", "content": {"ok": True}}
    if message.startswith("Where"):
        return {"action": "accept", "content": {"email": "ada@example.com"}}
    return {"action": "accept", "content": {"name": "Ada"}}


async def answer_sampling(params: dict[str, Any]) -> dict[str, Any]:
    prompt = params["messages"][0]["content"]["text"]
    return {
        "role": "assistant",
        "content": {"type": "text", "text": f"short: {prompt}"},
        "model": "test-model",
        "stopReason": "endTurn",
    }


def app_client(cluster: Cluster, version: str, **options: Any) -> Client:
    return Client(
        url=cluster.url,
        protocol_version=version,
        supported_versions=(version,),
        timeout=TIMEOUT,
        elicitation_handler=answer_elicitation,
        sampling_handler=answer_sampling,
        roots=["file:///work/a", "file:///work/b"],
        **options,
    )


async def test_a_handshake_session_works_with_the_proxy_pinned_to_its_node(
    cluster: Cluster,
) -> None:
    cluster.proxy.pin(1)
    changed: list[str] = []
    updated: list[str] = []
    progress: list[float] = []
    logs: list[Any] = []
    client = app_client(
        cluster,
        HANDSHAKE,
        on_list_changed=changed.append,
        on_resource_updated=updated.append,
        log_handler=lambda params: logs.append(params["data"]),
    )
    async with client:
        assert client.protocol_version == HANDSHAKE
        assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        assert text(await client.call_tool("whoami", {})) == str(cluster.pids[1])
        counted = await client.call_tool(
            "slow_count",
            {"n": 3, "delay": 0.01},
            progress=lambda p, total, message: progress.append(p),
        )
        assert text(counted) == "3" and progress == [1, 2, 3]
        assert text(await client.call_tool("ask_name", {})) == "Ada"
        assert text(await client.call_tool("summarize", {"text": "abc"})) == "short: Summarize: abc"
        roots = text(await client.call_tool("list_roots", {}))
        assert roots.splitlines() == ["file:///work/a", "file:///work/b"]
        await client.subscribe_resource("note://1")
        assert text(await client.call_tool("touch_resource", {"uri": "note://1"})) == (
            "touched note://1"
        )
        assert text(await client.call_tool("add_tool", {"name": "late"})) == "added late"
        assert text(await client.call_tool("late", {"text": "x"})) == "late: x"
        async with asyncio.timeout(TIMEOUT):
            while "tools" not in changed or "note://1" not in updated:
                await asyncio.sleep(0.01)
        paid = text(await client.call_tool("pay", {"amount": 5}))
        assert paid == "paid 5 (charge #1), receipt to ada@example.com"
    assert await cluster.paid() == 1
    assert logs[:3] == ["counted 1", "counted 2", "counted 3"]
    log = cluster.proxy.log
    sessions = {r.session_id for r in log if r.rpc != "initialize"}
    assert len(sessions) == 1 and None not in sessions
    assert {r.backend for r in log} == {1}
    assert all(r.status in (200, 202, 204) for r in log), log


async def test_sticky_sessions_spread_over_the_nodes(cluster: Cluster) -> None:
    cluster.proxy.sticky()
    clients = [app_client(cluster, HANDSHAKE) for _ in range(3)]
    for client in clients:  # one after another: each initialize takes the next node
        await client.connect()
    try:
        for _ in range(2):
            pids = [int(text(await c.call_tool("whoami", {}))) for c in clients]
            assert sorted(pids) == sorted(cluster.pids)
    finally:
        for client in clients:
            await client.aclose()
    by_session: dict[str, set[int | None]] = {}
    for record in cluster.proxy.log:
        if record.session_id is not None:
            by_session.setdefault(record.session_id, set()).add(record.backend)
    assert len(by_session) == 3 and all(len(b) == 1 for b in by_session.values())


@pytest.mark.cluster(nodes=2)
async def test_a_killed_node_is_skipped_and_a_restarted_one_serves_again(
    cluster: Cluster,
) -> None:
    async with Client(url=cluster.url, protocol_version=MODERN, timeout=TIMEOUT) as client:
        old = cluster.pids[0]
        cluster.kill(0)
        assert not cluster.nodes[0].alive
        pids = {int(text(await client.call_tool("whoami", {}))) for _ in range(3)}
        assert pids == {cluster.pids[1]}
        url = cluster.urls[0]
        new = await cluster.restart(0)
        assert new != old and cluster.urls[0] == url  # same port, a new process
        pids = {int(text(await client.call_tool("whoami", {}))) for _ in range(4)}
        assert pids == {new, cluster.pids[1]}


async def test_pay_charges_once_over_three_2026_rounds_on_one_node(cluster: Cluster) -> None:
    cluster.proxy.pin(2)
    async with app_client(cluster, MODERN) as client:
        assert client.protocol_version == MODERN
        paid = text(await client.call_tool("pay", {"amount": 7}))
    assert paid == "paid 7 (charge #1), receipt to ada@example.com"
    assert await cluster.paid() == 1
    rounds = [r for r in cluster.proxy.log if r.rpc == "tools/call"]
    assert len(rounds) == 3 and {r.backend for r in rounds} == {2}


async def test_a_get_stream_the_client_drops_at_the_proxy_ends_on_the_node(
    cluster: Cluster,
) -> None:
    # One GET stream per session (409 for a second one while the first is open): a new
    # GET succeeding soon after the client dropped the first shows the node saw it go.
    cluster.proxy.pin(0)
    async with asyncio.timeout(TIMEOUT), httpx.AsyncClient(timeout=TIMEOUT) as http:
        c = HTTPClient(http, cluster.url)
        await c.initialize()
        headers = c.headers("text/event-stream")
        async with http.stream("GET", cluster.url, headers=headers) as first:
            assert first.status_code == 200
            second = await http.get(cluster.url, headers=headers)
            assert second.status_code == 409  # the first one is open
        statuses = []
        while not statuses or statuses[-1] == 409:
            async with http.stream("GET", cluster.url, headers=headers) as again:
                statuses.append(again.status_code)
            assert len(statuses) < 20, statuses
            await asyncio.sleep(0.05)
        assert statuses[-1] == 200 and len(statuses) <= 3, statuses
    assert cluster.proxy.disconnects >= 1


@pytest.mark.cluster(nodes=1, json_response=True)
async def test_marker_options_reach_the_nodes(cluster: Cluster) -> None:
    assert len(cluster.nodes) == 1
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        c = HTTPClient(http, cluster.url)
        init = await c.initialize()
        assert init.headers["content-type"].startswith("application/json")
        assert text((await c.call_tool("whoami")).result) == str(cluster.pids[0])
