"""Scale-out soak: what N idle sessions and their buffered events cost, and that it all goes.

Three node processes (``tests/cluster/node.py`` serving ``tests/cluster/app.py:server``
on one ``RedisStore``, as the multi-node tests start them) share a ``redis-server``
this script starts (no persistence, ``tests/redis_server.py``). Then:

1. **Baseline**: Redis's ``INFO memory`` ``used_memory`` and ``DBSIZE`` (the nodes'
   liveness keys and the ``requestState`` key), each node's ``VmRSS``.
2. **Idle sessions**: N sessions (default 10,000), ``concurrency`` at a time; each
   ``initialize`` on node i % 3, ``notifications/initialized`` on the next node and
   one ``tools/call`` of ``echo`` answered as JSON on the one after (each session is
   used on every node: two of them rebuild it from its record). Then the same
   figures: **bytes of Redis per idle session** (data memory growth / N, checked
   against ``DBSIZE`` growing by N) and **node RSS per session** (the three nodes'
   RSS growth / N; each node caches the sessions it served).
3. **Buffered events**: a subset (``--sse-fraction``, default 20 %) makes one
   ``tools/call`` of ``slow_count(n=4)`` answered on an SSE stream: 4 progress and 4
   log notifications and the response, each appended to the session's event log
   (``events:<sid>``, one Redis stream per session). The events are counted in Redis
   (``XLEN`` of every log); **bytes per buffered event** = data memory growth / events
   (it includes each new log's own overhead; the per-log figure is printed too).
4. **Expiry**: nothing more is sent. After ``session_idle_timeout`` (``--idle``)
   the records expire in Redis (``idle + min(60, idle / 4)`` after their last write)
   and the event logs with them (a node caps a log's ttl at its session record's);
   the script polls ``DBSIZE`` until only the baseline keys are left (bounded: the
   record ttl plus a margin), then compares ``used_memory`` with the baseline
   (target: within 5 % of the peak growth, so nothing stays behind). A node drops
   the sessions it caches on its next request (sweeping is done on the request
   path); one ``ping`` of an expired session to each node then gets ``404`` and the
   nodes' RSS after it is printed (Python rarely hands freed memory back: read it,
   don't gate on it).

Run alone: ``python benchmarks/bench_cluster_soak.py [--quick] [--sessions N] [--idle S]``.
``--quick`` (the smoke test): 500 sessions, idle 10 s. The default idle is 180 s, longer
than making 10,000 sessions takes here (~100 s on the 2-core VM: sessions made first must
not expire before the measurement; the script warns when it comes close).

Redis's memory is read as ``used_memory`` less ``mem_clients_normal`` (the buffers of
client connections, which grow with the nodes' connection pools under load and stay
while the connections do, whatever is stored); both raw figures are printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import orjson
from _util import HERE, PROTOCOL_VERSION, child_env, emit, rss_kib, stop

sys.path.insert(0, str(HERE.parent / "tests"))
from redis_server import RedisServer

ROOT = HERE.parent
NODE = ROOT / "tests" / "cluster" / "node.py"
TARGET = "tests/cluster/app.py:server"
NODES = 3
BANNER = re.compile(r"mcpkit: serving .* on (http://127\.0\.0\.1:\d+/mcp)")
ACCEPT_JSON = "application/json"
ACCEPT_SSE = "application/json, text/event-stream"
STEPS = 4  # slow_count(n=STEPS): 2 * STEPS notifications and the response per SSE call
MARGIN = 10.0  # seconds past the record ttl for Redis to expire every key
# INFO memory / MEMORY STATS fields printed after the expiry, as changes since the baseline.
BREAKDOWN = (
    "used_memory",
    "used_memory_dataset",
    "used_memory_overhead",
    "mem_clients_normal",
    "stats.keys.count",
    "stats.overhead.hashtable.main",
)
GROWTH_LEFT = 0.05  # used_memory after expiry: within this share of the peak growth


class Node:
    def __init__(self, index: int, redis_url: str, prefix: str, idle: float, log: Path) -> None:
        self.index = index
        self.log = log
        command = [
            sys.executable,
            str(NODE),
            TARGET,
            "--port",
            "0",
            "--redis",
            redis_url,
            "--redis-prefix",
            prefix,
            "--node-ttl",
            "2",
            "--session-idle-timeout",
            str(idle),
        ]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=child_env(),
            )
        self.url = ""

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            found = BANNER.search(self.log.read_text(errors="replace"))
            if found:
                self.url = found.group(1)
                return
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"node {self.index} did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    @property
    def rss(self) -> int:
        return rss_kib(self.process.pid) * 1024


class Redis:
    """INFO / DBSIZE / XLEN through redis-py (the store's own client library)."""

    def __init__(self, url: str, prefix: str) -> None:
        from redis.asyncio import Redis as Client

        self.client = Client.from_url(url)
        self.prefix = prefix

    async def used_memory(self) -> int:
        """``used_memory`` less the client connections' buffers (``mem_clients_normal``):
        the nodes' pools open more connections under load, and each costs Redis ~20 KiB
        of buffers for as long as it stays open, whatever it stores."""
        info = await self.client.info("memory")
        return int(info["used_memory"]) - int(info["mem_clients_normal"])

    async def memory_info(self) -> dict[str, int]:
        """The numeric fields of ``INFO memory`` and ``MEMORY STATS`` (for the breakdown)."""
        info = await self.client.info("memory")
        stats = await self.client.memory_stats()
        found = {k: int(v) for k, v in info.items() if isinstance(v, int)}
        found.update({f"stats.{k}": int(v) for k, v in stats.items() if isinstance(v, int)})
        return found

    async def clients(self) -> tuple[int, int]:
        """(``connected_clients``, ``mem_clients_normal``)."""
        info = {**await self.client.info("clients"), **await self.client.info("memory")}
        return int(info["connected_clients"]), int(info["mem_clients_normal"])

    async def dbsize(self) -> int:
        return int(await self.client.dbsize())

    async def event_counts(self) -> tuple[int, int]:
        """(logs, events): the session event logs and their entries."""
        keys = [k async for k in self.client.scan_iter(match=self.prefix + "events:*", count=1000)]
        total = 0
        for i in range(0, len(keys), 500):
            async with self.client.pipeline(transaction=False) as pipe:
                for key in keys[i : i + 500]:
                    pipe.xlen(key)
                total += sum(await pipe.execute())
        return len(keys), total

    async def aclose(self) -> None:
        await self.client.aclose()


class Session:
    """One raw session over HTTP (no MCP client library: the cost measured is the server's)."""

    def __init__(self, http: httpx.AsyncClient, urls: list[str], index: int) -> None:
        self.http = http
        self.urls = urls
        self.index = index
        self.sid: str | None = None
        self.turn = index

    def _url(self) -> str:
        url = self.urls[self.turn % len(self.urls)]
        self.turn += 1
        return url

    async def post(self, message: dict[str, Any], accept: str = ACCEPT_JSON) -> httpx.Response:
        headers = {"accept": accept, "content-type": "application/json"}
        if self.sid is not None:
            headers["mcp-session-id"] = self.sid
            headers["mcp-protocol-version"] = PROTOCOL_VERSION
        return await self.http.post(self._url(), content=orjson.dumps(message), headers=headers)

    async def open(self) -> None:
        resp = await self.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "soak", "version": "1"},
                },
            }
        )
        check(resp, 200, "initialize")
        self.sid = resp.headers["mcp-session-id"]
        check(await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}), 202, "")
        call = {"name": "echo", "arguments": {"text": f"s{self.index}"}}
        resp = await self.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        check(resp, 200, "tools/call echo")
        assert resp.json()["result"]["content"][0]["text"] == f"s{self.index}", resp.text

    async def stream(self) -> None:
        call = {
            "name": "slow_count",
            "arguments": {"n": STEPS, "delay": 0},
            "_meta": {"progressToken": self.index},
        }
        message = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}
        resp = await self.post(message, ACCEPT_SSE)
        check(resp, 200, "tools/call slow_count")
        assert resp.headers["content-type"].startswith("text/event-stream"), resp.headers
        assert f'"text":"{STEPS}"' in resp.text, resp.text


def check(resp: httpx.Response, status: int, what: str) -> None:
    if resp.status_code != status:
        raise RuntimeError(f"{what}: HTTP {resp.status_code}: {resp.text[:300]}")


async def in_parallel(work: list[Any], concurrency: int) -> float:
    """Run the coroutines ``concurrency`` at a time; the seconds it took."""
    limit = asyncio.Semaphore(concurrency)
    started = time.monotonic()

    async def one(coro: Any) -> None:
        async with limit:
            await coro

    await asyncio.gather(*(one(c) for c in work))
    return time.monotonic() - started


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


async def soak(args: argparse.Namespace, redis_url: str, nodes: list[Node], prefix: str) -> int:
    store = Redis(redis_url, prefix)
    urls = [n.url for n in nodes]
    limits = httpx.Limits(
        max_connections=args.concurrency, max_keepalive_connections=args.concurrency
    )
    failures = 0
    try:
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            # Before the baseline: every node joined the cluster (its first request does
            # it), and every command of the run was called once (Redis 7 keeps a latency
            # histogram per command used, some 30 KB each, from its first call on) by a
            # session used like the others, then deleted with its log.
            for url in urls:
                await http.get(url)
            warm = Session(http, urls, 0)
            await warm.open()
            await warm.stream()
            await store.event_counts()
            await store.memory_info()
            await store.clients()
            for url in urls:
                gone = await http.delete(
                    url,
                    headers={
                        "mcp-session-id": warm.sid or "",
                        "mcp-protocol-version": PROTOCOL_VERSION,
                    },
                )
                if gone.status_code == 204:
                    break
            else:
                raise RuntimeError("could not delete the warm-up session")
            await asyncio.sleep(0.5)
            base_keys = await store.dbsize()
            base_mem = await store.used_memory()
            base_rss = [n.rss for n in nodes]
            base_info = await store.memory_info()
            emit(
                f"baseline: DBSIZE {base_keys}, data memory {mib(base_mem)}, "
                f"node RSS {', '.join(mib(r) for r in base_rss)}"
            )

            sessions = [Session(http, urls, i) for i in range(args.sessions)]
            took = await in_parallel([s.open() for s in sessions], args.concurrency)
            emit(
                f"{args.sessions:,} sessions made and used in {took:.1f} s "
                f"({3 * args.sessions / took:,.0f} requests/s)"
            )
            if took > args.idle * 0.75:
                emit(
                    f"  WARNING: that is more than 3/4 of the idle timeout ({args.idle} s): "
                    "the first sessions may expire before the measurement; raise --idle"
                )
            keys = await store.dbsize()
            mem = await store.used_memory()
            rss = [n.rss for n in nodes]
            per_session = (mem - base_mem) / args.sessions
            rss_per_session = (sum(rss) - sum(base_rss)) / args.sessions
            emit(f"idle sessions: DBSIZE {keys} (+{keys - base_keys:,}), data memory {mib(mem)}")
            emit(f"  Redis bytes per idle session: {per_session:,.0f} B")
            emit(
                f"  node RSS per session (3 nodes together): {rss_per_session:,.0f} B "
                f"(nodes: {', '.join(mib(r) for r in rss)})"
            )
            if keys - base_keys != args.sessions:
                emit(f"  FAILED: expected {args.sessions} session keys, found {keys - base_keys}")
                failures += 1

            streaming = sessions[: max(1, int(args.sessions * args.sse_fraction))]
            took = await in_parallel([s.stream() for s in streaming], args.concurrency)
            logs, events = await store.event_counts()
            mem2 = await store.used_memory()
            peak_rss = [n.rss for n in nodes]
            per_event = (mem2 - mem) / events if events else float("nan")
            per_log = (mem2 - mem) / logs if logs else float("nan")
            emit(
                f"{len(streaming):,} SSE calls in {took:.1f} s: {logs:,} event logs, "
                f"{events:,} events buffered, data memory {mib(mem2)}"
            )
            emit(
                f"  Redis bytes per buffered event: {per_event:,.0f} B "
                f"({per_log:,.0f} B per session log of {events / max(1, logs):.1f} events)"
            )
            if logs != len(streaming) or events < len(streaming) * (2 * STEPS + 1):
                emit(f"  FAILED: expected {len(streaming)} logs of >= {2 * STEPS + 1} events")
                failures += 1

            last_use = time.monotonic()
            record_ttl = args.idle + min(60.0, args.idle / 4)
            deadline = last_use + record_ttl + MARGIN
            while (keys := await store.dbsize()) > base_keys and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            waited = time.monotonic() - last_use
            mem3 = await store.used_memory()
            left = mem3 - base_mem
            grown = mem2 - base_mem
            emit(
                f"after expiry ({waited:.1f} s after the last use; idle timeout {args.idle} s): "
                f"DBSIZE {keys} (baseline {base_keys}), data memory {mib(mem3)} "
                f"({left:+,} B against the baseline; peak growth {grown:,} B)"
            )
            conns, buffers = await store.clients()
            emit(f"  (Redis: {conns} clients, their buffers {buffers:,} B, not counted)")
            now_info = await store.memory_info()
            changed = {k: now_info[k] - base_info.get(k, 0) for k in BREAKDOWN if k in now_info}
            emit(f"  INFO memory / MEMORY STATS, change since the baseline: {changed}")
            if keys != base_keys:
                emit(f"  FAILED: {keys - base_keys} keys left after the sessions expired")
                failures += 1
            if left > GROWTH_LEFT * grown:
                emit(
                    f"  FAILED: data memory {left:,} B above the baseline "
                    f"(more than {GROWTH_LEFT:.0%} of the peak growth)"
                )
                failures += 1
            # A node sweeps its cached sessions on its next request.
            probe = sessions[0]
            for _ in nodes:
                resp = await probe.post({"jsonrpc": "2.0", "id": 9, "method": "ping"})
                if resp.status_code != 404:
                    emit(f"  FAILED: an expired session got HTTP {resp.status_code}, not 404")
                    failures += 1
            await asyncio.sleep(0.2)
            after_rss = [n.rss for n in nodes]
            emit(
                f"  node RSS after expiry and one request each: "
                f"{', '.join(mib(r) for r in after_rss)} (peak {', '.join(mib(r) for r in peak_rss)})"
            )
    finally:
        await store.aclose()
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 sessions, idle 10 s")
    parser.add_argument("--sessions", type=int)
    parser.add_argument("--idle", type=float, help="session_idle_timeout of the nodes, seconds")
    parser.add_argument("--sse-fraction", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    if args.sessions is None:
        args.sessions = 500 if args.quick else 10_000
    if args.idle is None:
        args.idle = 10.0 if args.quick else 180.0
    emit(
        f"== scale-out soak: {args.sessions:,} sessions over {NODES} nodes, "
        f"idle timeout {args.idle} s =="
    )
    with tempfile.TemporaryDirectory(prefix="mcpkit-soak-") as tmp:
        directory = Path(tmp)
        redis = RedisServer(directory)
        redis.start()
        nodes: list[Node] = []
        try:
            prefix = f"soak-{uuid4().hex[:8]}:"
            nodes = [
                Node(i, redis.url, prefix, args.idle, directory / f"node-{i}.log")
                for i in range(NODES)
            ]
            for node in nodes:
                node.wait_ready()
            failures = asyncio.run(soak(args, redis.url, nodes, prefix))
            for node in nodes:
                if node.process.poll() is not None:
                    emit(f"  FAILED: node {node.index} exited:\n{node.log.read_text()}")
                    failures += 1
        finally:
            for node in nodes:
                stop(node.process)
            redis.stop()
    emit("soak: " + ("ok" if failures == 0 else f"FAILED ({failures} problems)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
