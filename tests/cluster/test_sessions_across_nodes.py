"""Handshake-era sessions shared by the nodes (docs/design/scale-out.md § 15.2, sessions).

The proxy sends each request to the next node, so a session initialized on one node
is used on the others at once: every later request of the session must be served as
if it had reached the node that created it (the record read from Redis), a
``logging/setLevel`` on one node must filter the logs the others send, and a DELETE on
any node must end it everywhere. A change made on one node may take up to
``PROPAGATION`` (1 s) to reach the others (an invalidation message, design § 4.3).

They check the cross-node session work (issue 13): a node that knew only the
sessions it created would fail them with ``404 Session not found`` from the second
node, and the failure message names the request, the node and the node that created
the session. Run them alone with::

    PYTHONPATH=$PWD/src python3 -m pytest -q -p no:cacheprovider tests/cluster/test_sessions_across_nodes.py
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from mcpkit.client import Client
from tests.cluster.conftest import Cluster
from tests.cluster.rr_proxy import Record
from tests.transports.conftest import HTTPClient

TIMEOUT = 15.0
HANDSHAKE = "2025-11-25"
# Seconds for a change made on one node to reach the others (an invalidation message).
PROPAGATION = 1.0

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def describe(cluster: Cluster, record: Record) -> str:
    node = record.backend
    pid = cluster.pids[node] if node is not None else None
    return (
        f"{record.method} {record.path} ({record.rpc or 'no JSON-RPC method'}, "
        f"session {record.session_id}) -> {record.status} from node {node} (pid {pid})"
    )


def wrong_statuses(cluster: Cluster) -> list[str]:
    """A sentence per request the proxy saw refused (a 404 names the node that made it)."""
    made = [r.backend for r in cluster.proxy.log if r.rpc == "initialize"]
    problems = []
    for record in cluster.proxy.log:
        if record.status >= 400:
            why = ""
            if record.status == 404 and record.session_id is not None:
                why = (
                    f": Session not found (initialize was served by node(s) {made}; "
                    f"node {record.backend} does not know the session)"
                )
            problems.append(describe(cluster, record) + why)
    return problems


def check_log(cluster: Cluster) -> str:
    """The one session's id, after checking that its requests went round the nodes, all
    answered, each on another node than the one before."""
    problems = wrong_statuses(cluster)
    assert not problems, "requests of the session were refused:\n  " + "\n  ".join(problems)
    sessions = {r.session_id for r in cluster.proxy.log if r.session_id is not None}
    assert len(sessions) == 1, f"expected one session through the proxy, saw {sessions}"
    initializes = [r for r in cluster.proxy.log if r.rpc == "initialize"]
    assert len(initializes) == 1, "the client initialized again: " + ", ".join(
        describe(cluster, r) for r in initializes
    )
    served = [r.backend for r in cluster.proxy.log]
    assert all(a != b for a, b in itertools.pairwise(served)), "\n  ".join(
        describe(cluster, r) for r in cluster.proxy.log
    )
    assert set(served) == set(range(len(cluster.nodes))), served
    return sessions.pop()


@contextlib.asynccontextmanager
async def explained(cluster: Cluster) -> AsyncIterator[None]:
    """A client's failure re-raised with the refused requests the proxy logged."""
    try:
        async with asyncio.timeout(TIMEOUT):
            yield
    except Exception as exc:
        problems = wrong_statuses(cluster)
        if problems:
            raise AssertionError(
                f"the client failed ({type(exc).__name__}: {exc}) after refused requests:\n  "
                + "\n  ".join(problems)
            ) from exc
        raise


async def test_mcpkit_client_session_is_served_by_every_node(cluster: Cluster) -> None:
    pids: list[int] = []
    async with explained(cluster):
        async with Client(
            url=cluster.url,
            protocol_version=HANDSHAKE,
            supported_versions=(HANDSHAKE,),
            timeout=TIMEOUT,
        ) as client:
            assert client.protocol_version == HANDSHAKE
            names = {t["name"] for t in await client.list_tools()}
            assert {"echo", "whoami", "slow_count", "pay"} <= names
            echoed = await client.call_tool("echo", {"text": "across"})
            assert echoed["content"][0]["text"] == "across"
            for _ in range(3):
                result = await client.call_tool("whoami", {})
                pids.append(int(result["content"][0]["text"]))
    assert set(pids) == set(cluster.pids), (pids, cluster.pids)
    sid = check_log(cluster)
    # The client's DELETE (on closing) ended the session: unknown on every node.
    assert cluster.proxy.log[-1].method == "DELETE" and cluster.proxy.log[-1].status == 204
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        c = HTTPClient(http, cluster.url)
        c.session_id = sid
        for node in range(len(cluster.nodes)):
            await expect(cluster, c, node, 404, "ping", within=PROPAGATION)


async def test_sdk_client_session_is_served_by_every_node(cluster: Cluster) -> None:
    pids: list[int] = []
    async with explained(cluster):
        async with (
            streamable_http_client(cluster.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "cluster-node"
            tools = await session.list_tools()
            assert {"echo", "whoami", "slow_count", "pay"} <= {t.name for t in tools.tools}
            echoed = await session.call_tool("echo", {"text": "across"})
            assert isinstance(echoed.content[0], types.TextContent)
            assert echoed.content[0].text == "across" and not echoed.is_error
            for _ in range(3):
                result = await session.call_tool("whoami", {})
                assert isinstance(result.content[0], types.TextContent), result
                pids.append(int(result.content[0].text))
    assert set(pids) == set(cluster.pids), (pids, cluster.pids)
    check_log(cluster)


async def expect(
    cluster: Cluster,
    c: HTTPClient,
    node: int | None,
    status: int,
    what: str,
    *,
    within: float = 0.0,
    **params: Any,
) -> Any:
    """POST ``what`` with the session (to ``node`` directly, or through the proxy) and
    check its status; ``within`` seconds to get there (what another node learns through
    an invalidation message may take that long)."""
    c.url = cluster.urls[node] if node is not None else cluster.url
    deadline = asyncio.get_running_loop().time() + within
    while True:
        if what == "notifications/initialized":
            ex = await c.post({"jsonrpc": "2.0", "method": what})
        else:
            ex = await c.request(what, params or None)
        if ex.status == status or asyncio.get_running_loop().time() >= deadline:
            break
        await asyncio.sleep(0.02)
    where = f"node {node} (pid {cluster.pids[node]})" if node is not None else "the proxy"
    if ex.status != status:
        hint = " (Session not found: the node does not know it)" if ex.status == 404 else ""
        raise AssertionError(
            f"{what} with session {c.session_id} on {where}: {ex.status}{hint}, "
            f"expected {status}{f' within {within} s' if within else ''}; proxy log:\n  "
            + "\n  ".join(describe(cluster, r) for r in cluster.proxy.log)
        )
    return ex


async def initialize(cluster: Cluster, http: httpx.AsyncClient) -> HTTPClient:
    """A session initialized through the proxy (on node 0), initialized on node 1."""
    c = HTTPClient(http, cluster.url)
    init = await c.request(
        "initialize",
        {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "cluster-test", "version": "1"},
        },
    )
    assert init.status == 200
    c.session_id = init.headers["mcp-session-id"]
    assert cluster.proxy.log[0].backend == 0
    await expect(cluster, c, None, 202, "notifications/initialized")
    assert cluster.proxy.log[1].backend == 1
    return c


async def test_delete_on_one_node_ends_the_session_on_every_node(cluster: Cluster) -> None:
    async with asyncio.timeout(TIMEOUT), httpx.AsyncClient(timeout=TIMEOUT) as http:
        c = await initialize(cluster, http)
        # Usable on every node, the creator included (each now holds it).
        for node in range(len(cluster.nodes)):
            ex = await expect(cluster, c, node, 200, "tools/call", name="whoami", arguments={})
            assert ex.result["content"][0]["text"] == str(cluster.pids[node])
        c.url = cluster.url
        deleted = await c.delete()
        assert deleted.status_code == 204, describe(cluster, cluster.proxy.log[-1])
        assert cluster.proxy.log[-1].backend == 2  # not the node that created it
        # Ended everywhere: no node serves it any more, nor the proxy's next turns.
        for node in range(len(cluster.nodes)):
            await expect(cluster, c, node, 404, "ping", within=PROPAGATION)
        for _ in range(len(cluster.nodes)):
            await expect(cluster, c, None, 404, "ping")


def logged(ex: Any) -> list[Any]:
    return [m["params"]["data"] for m in ex.notifications("notifications/message")]


async def test_set_level_on_one_node_filters_the_logs_of_the_others(cluster: Cluster) -> None:
    count = {"name": "slow_count", "arguments": {"n": 2, "delay": 0}}
    async with asyncio.timeout(TIMEOUT), httpx.AsyncClient(timeout=TIMEOUT) as http:
        c = await initialize(cluster, http)
        for node in range(len(cluster.nodes)):  # info logs by default, on every node
            ex = await expect(cluster, c, node, 200, "tools/call", **count)
            assert logged(ex) == ["counted 1", "counted 2"]
        await expect(cluster, c, 0, 200, "logging/setLevel", level="warning")
        for node in (1, 2):
            deadline = asyncio.get_running_loop().time() + PROPAGATION
            while logged(ex := await expect(cluster, c, node, 200, "tools/call", **count)):
                assert asyncio.get_running_loop().time() < deadline, (
                    f"node {node} still sends info logs {PROPAGATION} s after "
                    "logging/setLevel warning on node 0"
                )
                await asyncio.sleep(0.02)
        await expect(cluster, c, 2, 200, "logging/setLevel", level="info")
        for node in (0, 1):
            deadline = asyncio.get_running_loop().time() + PROPAGATION
            while not logged(ex := await expect(cluster, c, node, 200, "tools/call", **count)):
                assert asyncio.get_running_loop().time() < deadline, (
                    f"node {node} sends no info logs {PROPAGATION} s after "
                    "logging/setLevel info on node 2"
                )
                await asyncio.sleep(0.02)
