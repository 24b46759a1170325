"""Notifications of a session spread over nodes (issue 13), with mcpkit's client and the SDK's.

* A call's progress and log notifications arrive in order, each once.
* ``tools/list_changed`` raised (by ``add_tool``) on one node, and ``resources/updated``
  for a subscription made on another node, reach the client's standalone GET stream,
  held by a third node, exactly once (``cluster.py``: broadcasts are delivered by the
  node holding the GET only); the client's tool list then shows the new tool.
* ``logging/setLevel`` sent through one node filters the logs of calls the others serve.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.cluster.conftest import Cluster
from tests.cluster.drivers import DRIVERS, SETTLE, TIMEOUT, Driver, proxy_log, standalone_stream
from tests.cluster.rr_proxy import Record
from tests.cluster.test_sessions_across_nodes import wrong_statuses

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    # The SDK client warns that resources/subscribe and logging/setLevel left 2026-07-28.
    pytest.mark.filterwarnings("ignore:.*removed as of 2026-07-28"),
    pytest.mark.filterwarnings("ignore:.*deprecated as of 2026-07-28"),
    pytest.mark.parametrize("driver", ["mcpkit", "sdk"]),
]


def last(cluster: Cluster, rpc: str) -> Record:
    return [r for r in cluster.proxy.log if r.rpc == rpc][-1]


async def test_progress_and_logs_of_a_call_arrive_in_order_once(
    cluster: Cluster, driver: str
) -> None:
    n = 6
    expected = [
        event
        for i in range(1, n + 1)
        for event in (("progress", f"step {i}"), ("log", f"counted {i}"))
    ]
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        # Calls until every node served one (the SDK client lists the tools after its
        # first call, which shifts the turns).
        while len({r.backend for r in cluster.proxy.log if r.rpc == "tools/call"}) < 3:
            client.events.clear()
            assert await client.call("slow_count", {"n": n, "delay": 0.02}, progress=True) == str(n)
            await asyncio.sleep(0.05)  # nothing more may come after the result
            assert client.events == expected
    assert sum(r.rpc == "tools/call" for r in cluster.proxy.log) <= 4, proxy_log(cluster)
    assert not wrong_statuses(cluster), proxy_log(cluster)


async def test_change_notifications_reach_the_stream_another_node_holds_once(
    cluster: Cluster, driver: str
) -> None:
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client
        holder = await standalone_stream(cluster)
        assert holder.backend is not None
        assert "added_1" not in await c.tool_names()
        cluster.proxy.turn_to((holder.backend + 1) % 3)
        # tools/list_changed, raised by the node that serves add_tool.
        assert await c.call("add_tool", {"name": "added_1"}) == "added added_1"
        adder = last(cluster, "tools/call")
        assert adder.backend != holder.backend, proxy_log(cluster)
        await c.arrived("list_changed")
        await asyncio.sleep(SETTLE)
        assert c.events == [("list_changed", "tools")], proxy_log(cluster)
        # The tool exists on the node that added it (the others never ran add_tool): the
        # client's next list, served there, shows it.
        lists = sum(r.rpc == "tools/list" for r in cluster.proxy.log)
        assert adder.backend is not None
        cluster.proxy.pin(adder.backend)
        try:
            assert "added_1" in await c.tool_names()
        finally:
            cluster.proxy.unpin()
        assert sum(r.rpc == "tools/list" for r in cluster.proxy.log) == lists + 1

        # resources/updated: subscribed through one node, touched through another.
        c.events.clear()
        cluster.proxy.turn_to((holder.backend + 1) % 3)
        await c.subscribe("note://1")
        subscribed = last(cluster, "resources/subscribe")
        assert await c.call("touch_resource", {"uri": "note://1"}) == "touched note://1"
        toucher = last(cluster, "tools/call")
        assert len({subscribed.backend, toucher.backend, holder.backend}) == 3, proxy_log(cluster)
        await c.arrived("updated")
        await asyncio.sleep(SETTLE)
        assert c.events == [("updated", "note://1")], proxy_log(cluster)
        # Unsubscribed through another node: a touch on a third one notifies nobody.
        await c.unsubscribe("note://1")
        assert await c.call("touch_resource", {"uri": "note://1"}) == "touched note://1"
        unsubscribed = last(cluster, "resources/unsubscribe")
        assert unsubscribed.backend != subscribed.backend, proxy_log(cluster)
        assert last(cluster, "tools/call").backend != unsubscribed.backend, proxy_log(cluster)
        await asyncio.sleep(SETTLE)
        assert c.events == [("updated", "note://1")], proxy_log(cluster)
    assert await standalone_stream(cluster) is holder  # the same GET carried both
    assert not wrong_statuses(cluster), proxy_log(cluster)


async def test_set_level_through_one_node_filters_the_logs_of_calls_on_others(
    cluster: Cluster, driver: str
) -> None:
    count = {"n": 2, "delay": 0}

    async def logs_of_three_calls(c: Driver) -> list[list[object]]:
        seen = []
        for _ in range(3):
            c.events.clear()
            await c.call("slow_count", count)
            seen.append([value for kind, value in c.events if kind == "log"])
        return seen

    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client
        assert await logs_of_three_calls(c) == [["counted 1", "counted 2"]] * 3
        await c.set_level("warning")
        at = last(cluster, "logging/setLevel").backend
        start = len(cluster.proxy.log)
        assert await logs_of_three_calls(c) == [[], [], []], proxy_log(cluster)
        served = {r.backend for r in cluster.proxy.log[start:] if r.rpc == "tools/call"}
        assert served - {at}, proxy_log(cluster)  # calls on nodes other than setLevel's
        await c.set_level("info")
        assert await logs_of_three_calls(c) == [["counted 1", "counted 2"]] * 3
    assert not wrong_statuses(cluster), proxy_log(cluster)


async def test_changes_reach_the_get_stream_another_node_took_over_once(
    cluster: Cluster, driver: str
) -> None:
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client
        first = await standalone_stream(cluster)
        assert first.backend is not None
        cluster.stop(first.backend)  # graceful: its streams end with a retry hint
        start = len(cluster.proxy.log)
        async with asyncio.timeout(5):
            while True:
                again = [
                    r for r in cluster.proxy.log[start:] if r.method == "GET" and r.status == 200
                ]
                if again:
                    break
                await asyncio.sleep(0.02)
        holder = again[0]
        assert holder.backend not in (None, first.backend), proxy_log(cluster)
        # The new holder found the previous one dead: it sent the hints of what may have
        # been missed meanwhile (scale-out.md § 6.4) once; from now on, each change once.
        await c.arrived("list_changed")
        await asyncio.sleep(SETTLE)
        assert c.events.count(("list_changed", "tools")) == 1, c.events
        c.events.clear()
        live = {0, 1, 2} - {first.backend, holder.backend}
        cluster.proxy.turn_to(live.pop())
        assert await c.call("add_tool", {"name": "added_3"}) == "added added_3"
        assert last(cluster, "tools/call").backend != holder.backend, proxy_log(cluster)
        await c.arrived("list_changed")
        await asyncio.sleep(SETTLE)
        assert c.events == [("list_changed", "tools")], proxy_log(cluster)


async def test_a_change_raised_while_the_get_holder_is_gone_reaches_the_client(
    cluster: Cluster, driver: str
) -> None:
    # Broadcasts are logged for a session only by the node holding (or last holding) its
    # GET stream: one raised after that node stopped and before the client's GET came back
    # on another node reached no log. The new holder finds the previous one dead and sends
    # the hints (scale-out.md § 6.4), so the client's tool list does not stay stale.
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client
        first = await standalone_stream(cluster)
        assert first.backend is not None
        cluster.proxy.turn_to((first.backend + 1) % 3)
        assert await c.call("add_tool", {"name": "added_5"}) == "added added_5"
        await c.arrived("list_changed")
        # stop() blocks this loop until the node exited: the client sees its GET end only
        # afterwards, and waits the retry hint (0.1 s) before coming back, so the next
        # call raises its change while no node holds the GET.
        cluster.stop(first.backend)
        start = len(cluster.proxy.log)
        assert await c.call("add_tool", {"name": "added_6"}) == "added added_6"
        holder = await standalone_stream(cluster, start)
        assert holder.backend != first.backend, proxy_log(cluster)
        # The change was raised in the gap: its call came before the GET did.
        raised = last(cluster, "tools/call")
        log = cluster.proxy.log
        assert log.index(raised) < log.index(holder), proxy_log(cluster)
        async with asyncio.timeout(5):
            while c.events.count(("list_changed", "tools")) < 2:
                await asyncio.sleep(0.02)
        await asyncio.sleep(SETTLE)
        assert c.events.count(("list_changed", "tools")) == 2, (c.events, proxy_log(cluster))
