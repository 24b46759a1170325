"""Server-to-client requests whose answers come back through another node (issue 13).

A tool on one node asks the client something (elicitation, sampling, roots); through
the round-robin proxy the client's answer (a POST carrying a JSON-RPC response)
reaches another node, which must hand it to the node running the tool (the request id
names it, ``cluster.py``: answers). In the SSE mode the question travels on the
``tools/call`` POST's own stream; in the JSON-response mode (``json_response=True``)
that POST waits for one JSON body, so the question travels on the session's
standalone GET stream, which a third node may hold. Driven by mcpkit's client and by
the official SDK client.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.cluster.conftest import Cluster
from tests.cluster.drivers import (
    DRIVERS,
    NAME,
    ROOTS,
    SUMMARY,
    TIMEOUT,
    proxy_log,
    standalone_stream,
)
from tests.cluster.rr_proxy import Record
from tests.cluster.test_sessions_across_nodes import wrong_statuses

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# tool, arguments, what it returns once the client answered
ROUND_TRIPS = [
    ("ask_name", {}, NAME),  # elicitation/create
    ("summarize", {"text": "a long text"}, SUMMARY),  # sampling/createMessage
    ("list_roots", {}, "\n".join(ROOTS)),  # roots/list
]


# The status of an answer POST: 202, or 0 when the client closed before that 202 arrived
# (the answer was taken: the result it unblocked can come back first, through the tool's
# node, and the client is then free to close).
TAKEN = (202, 0)


def call_answer_pairs(cluster: Cluster) -> list[tuple[Record, Record]]:
    """Each ``tools/call`` POST with the first answer POST (no JSON-RPC method) after it."""
    pairs: list[tuple[Record, Record]] = []
    call: Record | None = None
    for record in cluster.proxy.log:
        if record.method == "POST" and record.rpc == "tools/call":
            call = record
        elif record.method == "POST" and record.rpc is None and call is not None:
            pairs.append((call, record))
            call = None
    return pairs


@pytest.mark.parametrize(
    "json_response",
    [False, pytest.param(True, marks=pytest.mark.cluster(json_response=True))],
    ids=["sse", "json"],
)
@pytest.mark.parametrize("driver", ["mcpkit", "sdk"])
async def test_answers_to_server_requests_cross_nodes(
    cluster: Cluster, driver: str, json_response: bool
) -> None:
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        holder = None
        if json_response:
            # Both clients open the GET stream in the background after initializing; a
            # question asked before it is open fails at once ("... its GET stream, which is
            # not open on any node"), as it does on one process: wait for it.
            holder = await standalone_stream(cluster)
        for tool, arguments, expected in ROUND_TRIPS:
            if holder is not None and holder.backend is not None:
                # The call on the next node, the answer on the one after: three nodes.
                cluster.proxy.turn_to((holder.backend + 1) % 3)
            assert await client.call(tool, arguments) == expected, tool
    log = proxy_log(cluster)
    assert not wrong_statuses(cluster), log
    pairs = call_answer_pairs(cluster)
    assert len(pairs) == len(ROUND_TRIPS), log
    for call, answer in pairs:
        # The answer reached another node than the one running the tool, and was taken.
        assert call.backend != answer.backend, log
        assert answer.status in TAKEN and call.status == 200, log
    if json_response:
        # The questions went on the standalone stream, held by a third node.
        streams = [r for r in cluster.proxy.log if r.method == "GET" and r.status == 200]
        assert len(streams) == 1, log
        for call, answer in pairs:
            assert streams[0].backend not in (call.backend, answer.backend), log


@pytest.mark.parametrize("driver", ["mcpkit", "sdk"])
async def test_concurrent_round_trips_on_three_nodes_get_their_own_answers(
    cluster: Cluster, driver: str
) -> None:
    async with asyncio.timeout(TIMEOUT), DRIVERS[driver](cluster) as client:
        await standalone_stream(cluster)
        start = len(cluster.proxy.log)
        results = await asyncio.gather(
            *(client.call(tool, arguments) for tool, arguments, _ in ROUND_TRIPS * 2)
        )
    assert results == [expected for _, _, expected in ROUND_TRIPS * 2]
    log = proxy_log(cluster)
    calls = [r for r in cluster.proxy.log[start:] if r.rpc == "tools/call"]
    answers = [r for r in cluster.proxy.log[start:] if r.method == "POST" and r.rpc is None]
    assert {r.backend for r in calls} == {0, 1, 2}, log
    assert len(answers) == 6 and all(r.status in TAKEN for r in answers), log
    assert not wrong_statuses(cluster), log
