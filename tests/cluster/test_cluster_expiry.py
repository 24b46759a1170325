"""Sessions of a cluster expire completely (issue 13, done-when item).

100 sessions, each made through the proxy (so on all three nodes in turn), each with a
``tools/call`` answered on an SSE stream (its events go to the session's log in Redis)
and left idle. With ``session_idle_timeout`` of 2 s, each session's record lives
``2 + 0.5`` s after its last refresh; after that and a margin, Redis holds none of their
keys -- no ``session:*`` record and no ``events:*`` log -- only the nodes' liveness keys
(``node:*``) and the cluster's ``requestState`` key (``rsk``); and every node answers
``404`` for every one of them (a node that cached a session drops it once idle, and
finds no record to rebuild it from).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from redis.asyncio import Redis

from tests.cluster.conftest import Cluster
from tests.transports.conftest import HTTPClient

SESSIONS = 100
IDLE = 2.0
# The record's ttl is idle + min(60, idle / 4); a node's sweep and Redis's own expiry
# (lazy, plus its active cycle ten times a second) take a little longer.
GONE_WITHIN = IDLE + IDLE / 4 + 3.0
TIMEOUT = 60.0


async def keys_of(cluster: Cluster) -> list[str]:
    client = Redis.from_url(cluster.redis.url)
    try:
        found = [
            key.decode()[len(cluster.prefix) :]
            async for key in client.scan_iter(match=cluster.prefix + "*", count=1000)
        ]
        return sorted(found)
    finally:
        await client.aclose()


def leftovers(keys: list[str]) -> list[str]:
    return [k for k in keys if not (k.startswith("node:") or k == "rsk")]


@pytest.mark.cluster(nodes=3, session_idle_timeout=IDLE)
async def test_idle_sessions_leave_nothing_in_redis_and_are_unknown_everywhere(
    cluster: Cluster,
) -> None:
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(TIMEOUT), httpx.AsyncClient(timeout=10) as http:
        sids: list[str] = []
        limit = asyncio.Semaphore(10)

        async def one(i: int) -> None:
            async with limit:
                c = HTTPClient(http, cluster.url)
                await c.initialize()
                ex = await c.request(
                    "tools/call", {"name": "slow_count", "arguments": {"n": 2, "delay": 0}}
                )
                assert ex.status == 200 and ex.result["content"][0]["text"] == "2", ex
                assert ex.events[-1].id, "the answer was not logged (no event id)"
                assert c.session_id is not None
                sids.append(c.session_id)

        await asyncio.gather(*(one(i) for i in range(SESSIONS)))
        last_use = loop.time()
        assert len(set(sids)) == SESSIONS
        keys = await keys_of(cluster)
        assert {f"session:{sid}" for sid in sids} <= set(keys)
        assert {f"events:{sid}" for sid in sids} <= set(keys)

        while left := leftovers(await keys_of(cluster)):
            waited = loop.time() - last_use
            assert waited < GONE_WITHIN, (
                f"{len(left)} keys left {waited:.1f} s after the sessions' last use "
                f"(idle timeout {IDLE} s): {left[:6]}..."
            )
            await asyncio.sleep(0.2)
        for node in range(len(cluster.nodes)):
            for sid in sids:
                c = HTTPClient(http, cluster.urls[node])
                c.session_id = sid
                ex = await c.request("ping")
                assert ex.status == 404, f"node {node} answered {ex.status} for session {sid}"
        # Asking for them made nothing either.
        assert leftovers(await keys_of(cluster)) == []
