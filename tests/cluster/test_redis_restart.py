"""Restarting Redis under a three-node cluster (issue 13, done-when item).

Several mcpkit clients call tools through the proxy (each request on the next node)
while ``redis-server`` is stopped (SIGTERM) for a few seconds and started again on the
same port. While it is down:

* every answer comes within ``BOUND`` seconds (the store fails fast: its
  ``connect_timeout`` / ``timeout``, no retry loop) -- nothing hangs;
* a call either succeeds (its session is cached on the node and the JSON answer needs
  no Redis command) or is refused with ``503`` (a node that has not seen the session
  cannot read its record) and the JSON-RPC error
  :data:`~mcpkit.errors.STORE_UNAVAILABLE_TEXT` (mcpkit's client raises it as
  :class:`~mcpkit.errors.HTTPErrorStatus` with ``status == 503``); a new session cannot
  be made (503 too);
* no node process exits.

Once Redis is back, every client's calls succeed again within ``RECOVERY`` seconds.
Without persistence the sessions are gone: each node answers ``404`` for them (a node
that cached one re-reads its record once its bus is back, and finds none), and mcpkit's
client then initializes a new session by itself and sends the call again (documented in
``mcpkit.client.transports.streamable_http`` and ``ClientSession.request``: once per
call). With an append-only file (``appendonly=True``) the same sessions go on. The
nodes answer as JSON, and in a third run on SSE streams (their events cannot be
recorded while Redis is down: delivered anyway, without ids).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx
import pytest

from mcpkit.client import Client
from mcpkit.errors import STORE_UNAVAILABLE_TEXT, HTTPErrorStatus
from tests.cluster.conftest import start_nodes
from tests.redis_server import RedisServer
from tests.transports.conftest import HTTPClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HANDSHAKE = "2025-11-25"
CLIENTS = 4
BOUND = 3.0  # seconds: the slowest answer allowed while Redis is down
DOWN = 2.5  # seconds Redis stays down
RECOVERY = 5.0  # seconds after Redis is back by which every client's calls succeed
TIMEOUT = 60.0


class Traffic:
    """One client calling ``echo`` in a loop; each outcome with its phase and duration."""

    def __init__(self, client: Client, index: int) -> None:
        self.client = client
        self.index = index
        self.phase = "up"
        self.outcomes: list[tuple[str, float, str]] = []  # (phase, seconds, "ok" or error)
        self.ended: list[float] = []  # loop time at which each outcome came
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        n = 0
        while True:
            n += 1
            text = f"{self.index}-{n}"
            started = loop.time()
            try:
                # The bound is checked below; this only keeps a hang from stalling the test.
                result = await asyncio.wait_for(
                    self.client.call_tool("echo", {"text": text}), BOUND + 5
                )
            except HTTPErrorStatus as exc:
                outcome = f"HTTP {exc.status}: {exc}"
            except TimeoutError:
                outcome = "hang"
            except Exception as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            else:
                ok = result["content"][0]["text"] == text
                outcome = "ok" if ok else f"wrong answer {result}"
            self.outcomes.append((self.phase, loop.time() - started, outcome))
            self.ended.append(loop.time())
            await asyncio.sleep(0.05)


def session_id(client: Client) -> str | None:
    sid: str | None = getattr(client.session.transport, "session_id", None)
    return sid


@pytest.mark.parametrize(
    ("appendonly", "json_response"),
    [(False, True), (True, True), (False, False)],
    ids=["no-persistence", "appendonly", "no-persistence-sse"],
)
async def test_redis_restart_under_traffic(
    tmp_path: Path, appendonly: bool, json_response: bool
) -> None:
    (tmp_path / "redis").mkdir()
    redis = RedisServer(tmp_path / "redis", appendonly=appendonly)
    redis.start()
    cluster = await start_nodes(redis, tmp_path, nodes=3, json_response=json_response)
    stack = contextlib.AsyncExitStack()
    loop = asyncio.get_running_loop()
    traffic: list[Traffic] = []
    try:
        async with asyncio.timeout(TIMEOUT):
            for i in range(CLIENTS):
                client = Client(
                    url=cluster.url,
                    protocol_version=HANDSHAKE,
                    supported_versions=(HANDSHAKE,),
                    timeout=BOUND + 2,
                    cache=False,
                )
                await stack.enter_async_context(client)
                traffic.append(Traffic(client, i))
            before = [session_id(t.client) for t in traffic]
            assert all(before) and len(set(before)) == CLIENTS
            for t in traffic:
                t.task = asyncio.ensure_future(t.run())
            await asyncio.sleep(1.0)
            assert all(any(o == "ok" for _, _, o in t.outcomes) for t in traffic)
            # A session only node 0 has seen: another node must read its record to serve it.
            http = await stack.enter_async_context(httpx.AsyncClient(timeout=BOUND + 2))
            lone = HTTPClient(http, cluster.urls[0])
            await lone.initialize()

            redis.stop()  # SIGTERM; returns once it exited
            for t in traffic:
                t.phase = "down"
            down_at = loop.time()
            # A new session cannot be recorded: refused at once, clearly.
            started = loop.time()
            with pytest.raises(HTTPErrorStatus) as refused:
                async with Client(
                    url=cluster.url,
                    protocol_version=HANDSHAKE,
                    supported_versions=(HANDSHAKE,),
                    timeout=BOUND + 2,
                ):
                    pass
            assert refused.value.status == 503, refused.value
            assert STORE_UNAVAILABLE_TEXT in str(refused.value)
            assert loop.time() - started < BOUND
            # The lone session on a node that never saw it: its record cannot be read.
            lone.url = cluster.urls[1]
            started = loop.time()
            ex = await lone.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
            assert ex.status == 503, ex
            assert ex.messages[0]["error"]["message"] == STORE_UNAVAILABLE_TEXT, ex.messages
            assert loop.time() - started < BOUND
            # ... while node 0, which holds it, still answers it (JSON: no Redis command; SSE:
            # events not recorded, so not resumable, but delivered).
            lone.url = cluster.urls[0]
            ex = await lone.request("tools/call", {"name": "echo", "arguments": {"text": "y"}})
            assert ex.status == 200 and ex.result["content"][0]["text"] == "y", ex
            await asyncio.sleep(max(0.0, DOWN - (loop.time() - down_at)))

            redis.start()
            back_at = loop.time()
            for t in traffic:
                t.phase = "back"
            # Traffic goes on for RECOVERY seconds; the calls of its second half must all
            # succeed (by then every node's bus is back and has re-read its sessions).
            await asyncio.sleep(RECOVERY)
            for t in traffic:
                assert t.task is not None
                t.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t.task
            late = [
                (t.index, o)
                for t in traffic
                for (p, _, o), at in zip(t.outcomes, t.ended, strict=True)
                if p == "back" and at > back_at + RECOVERY / 2 and o != "ok"
            ]
            assert not late, f"calls failing {RECOVERY / 2} s after Redis came back: {late}"
            first_ok = [
                min(
                    (
                        at
                        for (p, _, o), at in zip(t.outcomes, t.ended, strict=True)
                        if p == "back" and o == "ok"
                    ),
                    default=None,
                )
                for t in traffic
            ]
            assert all(first_ok), f"clients without a success after Redis came back: {first_ok}"
            recovered = max(at for at in first_ok if at is not None) - back_at
            slow = [
                (t.index, p, round(s, 2), o) for t in traffic for p, s, o in t.outcomes if s > BOUND
            ]
            assert not slow, f"answers slower than {BOUND} s: {slow}"
            down = [(t.index, o) for t in traffic for p, _, o in t.outcomes if p == "down"]
            assert down, "no call was made while Redis was down"
            unexpected = [
                (i, o)
                for i, o in down
                if o != "ok" and not (o.startswith("HTTP 503") and STORE_UNAVAILABLE_TEXT in o)
            ]
            assert not unexpected, f"while Redis was down: {unexpected}"
            # Before the recovery, a call may still fail (503, or the bus not back yet);
            # never anything but those, and never a hang.
            back = [(t.index, o) for t in traffic for p, _, o in t.outcomes if p == "back"]
            odd = [(i, o) for i, o in back if o != "ok" and not o.startswith("HTTP 503")]
            assert not odd, f"after Redis came back: {odd}"
            after = [session_id(t.client) for t in traffic]
            initializes = [r for r in cluster.proxy.log if r.rpc == "initialize"]
            if appendonly:
                assert after == before, "the sessions did not survive a persistent Redis"
                # CLIENTS sessions, plus the one refused while Redis was down.
                assert len(initializes) == CLIENTS + 1
            else:
                # Each client was told 404 once and made a new session by itself.
                assert all(after) and not set(after) & set(before), (before, after)
                assert len(initializes) == 2 * CLIENTS + 1
                gone = {r.session_id for r in cluster.proxy.log if r.status == 404}
                assert gone == set(before), gone
                # ... and no node serves the old sessions any more.
                async with httpx.AsyncClient(timeout=BOUND) as http:
                    for sid in before:
                        assert sid is not None
                        for url in cluster.urls:
                            c = HTTPClient(http, url)
                            c.session_id = sid
                            assert (await c.request("ping")).status == 404, (sid, url)
            for node in cluster.nodes:
                assert node.alive, f"node {node.index} exited:\n{node.log_text()}"
            summary = {
                t.index: [(p, round(d, 2), o[:40]) for p, d, o in t.outcomes if p != "up"]
                for t in traffic
            }
            print(f"recovered {recovered:.2f} s after Redis came back; {summary}")
    finally:
        for t in traffic:
            if t.task is not None:
                t.task.cancel()
        with contextlib.suppress(Exception):
            await stack.aclose()
        await cluster.aclose()
        print(cluster.logs())
        redis.stop()
