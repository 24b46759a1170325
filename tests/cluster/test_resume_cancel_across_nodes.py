"""Resumption and cancellation of a call across nodes (issue 13), with both clients.

* ``pause_and_finish`` closes its own SSE stream mid-call (SEP-1699); the client
  resumes with ``Last-Event-ID``, a GET the proxy sends to another node, which replays
  the request's log and follows it until the result (``cluster.py``: resuming a request
  stream on another node): every event arrives once, in order, then the result.
* A slow ``guarded_wait`` cancelled by the client: the ``notifications/cancelled`` POST
  lands on another node, which broadcasts it; the node running the tool stops it (the
  tool records "cancelled" in Redis, never "completed").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from uuid import uuid4

import pytest

from tests.cluster.conftest import Cluster
from tests.cluster.drivers import DRIVERS, NAME, TIMEOUT, Driver, proxy_log
from tests.cluster.rr_proxy import Record
from tests.cluster.test_sessions_across_nodes import wrong_statuses

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.parametrize("driver", ["mcpkit", "sdk"]),
]


def only(cluster: Cluster, rpc: str) -> Record:
    found = [r for r in cluster.proxy.log if r.rpc == rpc]
    assert len(found) == 1, proxy_log(cluster)
    return found[0]


async def test_a_stream_closed_mid_call_resumes_on_another_node(
    cluster: Cluster, driver: str
) -> None:
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client
        assert await c.call("pause_and_finish", {"pause": 0.2}, progress=True) == "finished"
        await asyncio.sleep(0.05)
        assert c.events == [
            ("progress", "before the close"),
            ("log", "before the close"),
            ("progress", "after the close 2"),
            ("log", "after the close 2"),
            ("progress", "after the close 3"),
            ("log", "after the close 3"),
        ], proxy_log(cluster)
    call = only(cluster, "tools/call")
    resumed = [r for r in cluster.proxy.log if r.last_event_id is not None]
    assert resumed and all(r.method == "GET" for r in resumed), proxy_log(cluster)
    # The first resumption reached another node than the one running the tool.
    assert resumed[0].backend != call.backend and resumed[0].status == 200, proxy_log(cluster)
    assert not wrong_statuses(cluster), proxy_log(cluster)


async def test_a_question_asked_after_the_close_reaches_the_resumed_stream(
    cluster: Cluster, driver: str
) -> None:
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client

        async def listening() -> bool:
            return any(r.method == "GET" for r in cluster.proxy.log)

        # The client's standalone GET stream first, then the call: the round robin then
        # sends the call, its resumed stream and the answer to three different nodes
        # (a client may open that stream before or after its first call).
        await wait_for(cluster, "listening", listening)
        assert await c.call("pause_then_ask", {}) == f"resumed and asked {NAME}"
        await asyncio.sleep(0.05)
        assert c.events == [("log", "before the close"), ("log", "after the answer")]
    log = proxy_log(cluster)
    call = only(cluster, "tools/call")
    resumed = [r for r in cluster.proxy.log if r.last_event_id is not None]
    answers = [r for r in cluster.proxy.log if r.method == "POST" and r.rpc is None]
    assert resumed and resumed[0].backend != call.backend, log
    # The question came on the stream resumed on another node; the answer reached a third.
    assert len(answers) == 1 and answers[0].status in (202, 0), log  # 0: see TAKEN
    assert answers[0].backend not in (call.backend, resumed[0].backend), log
    assert not wrong_statuses(cluster), log


async def wait_for(
    cluster: Cluster, what: str, check: Callable[[], Awaitable[bool]], timeout: float = 5.0
) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(
                f"guarded_wait not {what} within {timeout} s:\n  " + proxy_log(cluster)
            )
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_a_cancelled_call_stops_on_the_node_running_it(
    cluster: Cluster, driver: str, how: str
) -> None:
    tag = uuid4().hex
    arguments = {"tag": tag, "seconds": 4}
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client

        async def started() -> bool:
            return await cluster.run_state(tag) is not None

        if how == "cancel":  # the caller cancels the task awaiting the call
            task = asyncio.create_task(c.call("guarded_wait", arguments))
            await wait_for(cluster, "started", started)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        else:  # the call's own timeout gives up on it
            with pytest.raises(Exception) as failed:
                await c.call("guarded_wait", arguments, timeout=1.5)
            # mcpkit: PeerTimeout; the SDK: an MCPError saying it timed out.
            named = type(failed.value).__name__ + " " + str(failed.value)
            assert "timeout" in named.lower() or "timed out" in named.lower(), repr(failed.value)
            assert await started()

        async def stopped() -> bool:
            return await cluster.run_state(tag) != "started"

        await wait_for(cluster, "stopped", stopped, timeout=3.0)
        assert await cluster.run_state(tag) == "cancelled", proxy_log(cluster)
        call = only(cluster, "tools/call")
        cancel = only(cluster, "notifications/cancelled")
        async with asyncio.timeout(2):  # its 202 may still be on its way
            while cancel.status == 0:
                await asyncio.sleep(0.02)
        assert cancel.backend != call.backend and cancel.status == 202, proxy_log(cluster)
        # The session goes on.
        assert await c.call("echo", {"text": "after"}) == "after"
    assert await cluster.run_state(tag) == "cancelled"


async def test_a_call_whose_node_dies_ends_with_an_error_on_the_resumed_stream(
    cluster: Cluster, driver: str
) -> None:
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        c: Driver = client
        task = asyncio.create_task(c.call("slow_count", {"n": 50, "delay": 0.1}, progress=True))
        await c.arrived("progress")
        running = only(cluster, "tools/call").backend
        assert running is not None
        cluster.kill(running)  # the proxy cuts the client's stream: the client resumes
        with pytest.raises(Exception) as failed:
            await task
        assert "stopped before answering" in str(failed.value), repr(failed.value)
        steps = [value for kind, value in c.events if kind == "progress"]
        # What the node sent before dying arrived once, in order (a gap-free prefix).
        assert steps == [f"step {i}" for i in range(1, len(steps) + 1)], steps
        resumed = [r for r in cluster.proxy.log if r.last_event_id is not None]
        assert resumed and all(r.backend != running for r in resumed), proxy_log(cluster)
        # The session goes on, on the nodes left.
        assert await c.call("echo", {"text": "after"}) == "after"
