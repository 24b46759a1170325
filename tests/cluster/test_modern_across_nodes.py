"""The 2026-07-28 (stateless) era across nodes (issue 13), with mcpkit's client and the SDK's.

No session: every request stands alone, so through the round-robin proxy

* tool calls spread over the nodes (``whoami`` answers with each node's pid);
* an input round (elicitation, sampling, roots as ``input_required`` results) is
  answered by a retry that another node serves, replaying the handler from the
  ``requestState`` the first node signed;
* a ``subscriptions/listen`` stream held by one node receives the
  ``tools/list_changed`` raised by ``add_tool`` on another, and the
  ``resources/updated`` raised by ``touch_resource`` on a third, each once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import mcp
import pytest
from mcp import types
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from mcpkit.client import Client
from tests.cluster.conftest import Cluster
from tests.cluster.drivers import (
    NAME,
    ROOTS,
    SETTLE,
    SUMMARY,
    TIMEOUT,
    proxy_log,
)
from tests.cluster.rr_proxy import Record
from tests.cluster.test_sessions_across_nodes import wrong_statuses

MODERN = "2026-07-28"
ROUND_TRIPS = [
    ("ask_name", {}, NAME),  # elicitation
    ("summarize", {"text": "a long text"}, SUMMARY),  # sampling
    ("list_roots", {}, "\n".join(ROOTS)),  # roots
]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def calls_since(cluster: Cluster, start: int) -> list[Record]:
    return [r for r in cluster.proxy.log[start:] if r.rpc == "tools/call"]


async def listening(cluster: Cluster, start: int) -> Record:
    """The newest acknowledged ``subscriptions/listen`` stream opened after ``start``."""
    async with asyncio.timeout(5):
        while True:
            opened = [
                r
                for r in cluster.proxy.log[start:]
                if r.rpc == "subscriptions/listen" and r.status == 200
            ]
            if opened:
                return opened[-1]
            await asyncio.sleep(0.02)


# -- mcpkit's client -------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def mcpkit_client(cluster: Cluster, events: list[tuple[str, Any]]) -> AsyncIterator[Client]:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": NAME}}

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": SUMMARY}, "model": "m"}

    async with Client(
        url=cluster.url,
        protocol_version=MODERN,
        supported_versions=(MODERN,),
        timeout=TIMEOUT,
        elicitation_handler=elicit,
        sampling_handler=sample,
        roots=ROOTS,
        on_list_changed=lambda kind: events.append(("list_changed", kind)),
        on_resource_updated=lambda uri: events.append(("updated", uri)),
    ) as client:
        assert client.protocol_version == MODERN
        yield client


def text(result: dict[str, Any]) -> str:
    assert not result.get("isError"), result
    return str(result["content"][0]["text"])


async def test_mcpkit_calls_and_input_rounds_spread_over_nodes(cluster: Cluster) -> None:
    async with asyncio.timeout(TIMEOUT), mcpkit_client(cluster, []) as client:
        start = len(cluster.proxy.log)
        pids = {int(text(await client.call_tool("whoami", {}))) for _ in range(3)}
        assert pids == set(cluster.pids), proxy_log(cluster)
        for tool, arguments, expected in ROUND_TRIPS:
            start = len(cluster.proxy.log)
            assert text(await client.call_tool(tool, arguments)) == expected, tool
            rounds = calls_since(cluster, start)
            # Two rounds: the input request, then the retry with its answer on another node.
            assert len(rounds) == 2 and rounds[0].backend != rounds[1].backend, proxy_log(cluster)
    assert all(r.session_id is None for r in cluster.proxy.log), proxy_log(cluster)
    assert not wrong_statuses(cluster), proxy_log(cluster)


async def test_mcpkit_listen_stream_gets_changes_raised_on_other_nodes_once(
    cluster: Cluster,
) -> None:
    events: list[tuple[str, Any]] = []
    async with asyncio.timeout(TIMEOUT), mcpkit_client(cluster, events) as client:
        await client.subscribe_resource("note://1")  # returns once the new filter is acked
        holder = await listening(cluster, 0)
        assert holder.backend is not None
        cluster.proxy.turn_to((holder.backend + 1) % 3)
        assert text(await client.call_tool("add_tool", {"name": "added_2"})) == "added added_2"
        assert text(await client.call_tool("touch_resource", {"uri": "note://1"})) == (
            "touched note://1"
        )
        raisers = {r.backend for r in calls_since(cluster, 0)}
        assert raisers == {0, 1, 2} - {holder.backend}, proxy_log(cluster)
        async with asyncio.timeout(5):
            while len(events) < 2:
                await asyncio.sleep(0.02)
        await asyncio.sleep(SETTLE)
        assert sorted(events) == [("list_changed", "tools"), ("updated", "note://1")], events
        # No other listen stream was opened meanwhile: the one held by the holder carried both.
        assert await listening(cluster, 0) is holder, proxy_log(cluster)
    assert not wrong_statuses(cluster), proxy_log(cluster)


# -- the official SDK client ------------------------------------------------------------------


def sdk_client(cluster: Cluster) -> mcp.Client:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": NAME})

    async def sample(
        context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=SUMMARY), model="m"
        )

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in ROOTS])  # type: ignore[arg-type]

    return mcp.Client(
        cluster.url,
        read_timeout_seconds=TIMEOUT,
        elicitation_callback=elicit,
        sampling_callback=sample,
        list_roots_callback=roots,
    )


def sdk_text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent) and not result.is_error, result
    return block.text


async def test_sdk_calls_and_input_rounds_spread_over_nodes(cluster: Cluster) -> None:
    async with asyncio.timeout(TIMEOUT), sdk_client(cluster) as client:
        assert client.protocol_version == MODERN
        pids: set[int] = set()
        while len(calls_since(cluster, 0)) < 3:
            pids.add(int(sdk_text(await client.call_tool("whoami", {}))))
        served = {r.backend for r in calls_since(cluster, 0)}
        assert len(pids) == len(served) >= 2, proxy_log(cluster)
        for tool, arguments, expected in ROUND_TRIPS:
            start = len(cluster.proxy.log)
            assert sdk_text(await client.call_tool(tool, arguments)) == expected, tool
            rounds = calls_since(cluster, start)
            assert len(rounds) == 2 and rounds[0].backend != rounds[1].backend, proxy_log(cluster)
    assert all(r.session_id is None for r in cluster.proxy.log), proxy_log(cluster)
    assert not wrong_statuses(cluster), proxy_log(cluster)


async def test_sdk_listen_stream_gets_changes_raised_on_other_nodes_once(
    cluster: Cluster,
) -> None:
    # The SDK's Subscription coalesces identical events still waiting to be read (level
    # triggers), so a duplicate is seen here only if it arrives after the first was read;
    # mcpkit's client above counts every notification.
    async with (
        asyncio.timeout(TIMEOUT),
        sdk_client(cluster) as client,
        client.listen(tools_list_changed=True, resource_subscriptions=["note://1"]) as sub,
    ):
        holder = await listening(cluster, 0)
        assert holder.backend is not None
        stream = aiter(sub)
        cluster.proxy.turn_to((holder.backend + 1) % 3)
        start = len(cluster.proxy.log)
        assert sdk_text(await client.call_tool("add_tool", {"name": "added_2"})) == "added added_2"
        assert isinstance(await asyncio.wait_for(anext(stream), 5), ToolsListChanged)
        # The SDK client lists the tools again before its next call (its cached list was
        # dropped): list now, so that the turn set next goes to the touch_resource call.
        await client.list_tools()
        cluster.proxy.turn_to((holder.backend + 2) % 3)
        assert sdk_text(await client.call_tool("touch_resource", {"uri": "note://1"})) == (
            "touched note://1"
        )
        updated = await asyncio.wait_for(anext(stream), 5)
        assert isinstance(updated, ResourceUpdated) and updated.uri == "note://1", updated
        raisers = {r.backend for r in calls_since(cluster, start)}
        assert holder.backend not in raisers, proxy_log(cluster)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(stream), SETTLE)
    assert not wrong_statuses(cluster), proxy_log(cluster)


@pytest.mark.parametrize("driver", ["mcpkit", "sdk"])
async def test_a_cancelled_2026_call_stops_on_its_node(cluster: Cluster, driver: str) -> None:
    # 2026-07-28 has no session: cancelling a call closes its POST (the proxy passes the
    # disconnect on to the node running it), whichever node that is.
    tag = uuid4().hex
    arguments = {"tag": tag, "seconds": 4}
    async with contextlib.AsyncExitStack() as stack:
        if driver == "mcpkit":
            kit = await stack.enter_async_context(mcpkit_client(cluster, []))
            call = kit.call_tool("guarded_wait", arguments)
        else:
            sdk = await stack.enter_async_context(sdk_client(cluster))
            call = sdk.call_tool("guarded_wait", arguments)
        task = asyncio.ensure_future(call)
        async with asyncio.timeout(5):
            while await cluster.run_state(tag) is None:
                await asyncio.sleep(0.02)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        async with asyncio.timeout(3):
            while await cluster.run_state(tag) == "started":
                await asyncio.sleep(0.02)
    assert await cluster.run_state(tag) == "cancelled", proxy_log(cluster)


async def test_mcpkit_listen_stream_reopened_on_another_node_gets_changes_once(
    cluster: Cluster,
) -> None:
    # The SDK's listen() ends (or raises SubscriptionLost) when its stream goes, and does
    # not reopen it ("no replay: re-listen"), so only mcpkit's client is driven here.
    events: list[tuple[str, Any]] = []
    async with asyncio.timeout(TIMEOUT), mcpkit_client(cluster, events) as client:
        first = await listening(cluster, 0)
        assert first.backend is not None
        start = len(cluster.proxy.log)
        cluster.stop(first.backend)  # graceful: its streams end
        holder = await listening(cluster, start)
        assert holder.backend not in (None, first.backend), proxy_log(cluster)
        cluster.proxy.turn_to(({0, 1, 2} - {first.backend, holder.backend}).pop())
        assert text(await client.call_tool("add_tool", {"name": "added_4"})) == "added added_4"
        assert calls_since(cluster, start)[-1].backend != holder.backend, proxy_log(cluster)
        async with asyncio.timeout(5):
            while not events:
                await asyncio.sleep(0.02)
        await asyncio.sleep(SETTLE)
        assert events == [("list_changed", "tools")], proxy_log(cluster)
