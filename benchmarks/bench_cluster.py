"""Part 2d: scale-out on Redis: what the Redis store costs a server, and how many commands.

Issue 13's two figures, for stateful Streamable HTTP ``tools/call`` (the echo
tool of every part), answered on an SSE stream and as JSON:

1. **Efficiency**: calls per second of the *server process's* CPU with
   ``MCPServer(store=RedisStore(url))`` against ``store=MemoryStore()`` (the
   **baseline**: the same features, resumable SSE streams included, in
   process). Each store and response mode is its own server process on the
   settings of ``bench_http.py`` (``servers/http_server.py mcpkit-memory`` /
   ``mcpkit-redis``; one worker, uvloop, httptools), loaded by wrk with one
   session per run (``initialize`` + ``notifications/initialized`` first, its
   ``Mcp-Session-Id`` on every request, as ``bench_http.py`` does) at 1 and 16
   connections. Memory and Redis are measured back to back for each response
   mode and concurrency, their order swapped every repetition. The
   ``redis-server`` this script starts (on a free port, no persistence) is
   reported beside it, CPU per call, but not counted: it scales separately.
   Target: Redis >= 0.6x memory per server CPU-second.
2. **Commands per call**, from Redis's own ``INFO commandstats``: a fresh
   session is opened (the commands of ``initialize`` + ``initialized`` and of
   its first call are printed apart: they are paid once per session), then
   ``CONFIG RESETSTAT``, then M sequential calls (one keep-alive connection);
   the ``calls`` of every command but ``INFO`` / ``CONFIG`` are summed and divided
   by M, and shown per command. The wrk runs of part 1 give the same figure
   under load (slightly high: requests still in flight when wrk stops are
   served but not counted as answered). Target: <= 2 commands per call.

Before any load each server must answer one correct echo (parsed from the SSE
stream or the JSON body), and every wrk run must see only 2xx answers.

The code keeps a server as a :class:`Deployment` (the processes behind one
address, CPU summed over them) so that several nodes behind a proxy can be
measured the same way.

Run alone: ``python benchmarks/bench_cluster.py [--quick] [--reps N] [--duration S] [--calls M]``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from _util import (
    HERE,
    Options,
    Row,
    add_common_args,
    child_env,
    cpu_seconds,
    emit,
    fmt,
    median,
    options_from,
    spread,
    stop,
    summary_table,
)
from bench_http import (
    Client,
    HTTPFailure,
    Load,
    Target,
    echo_body,
    prepare,
    start_server,
    wrk,
)

# The real redis-server helper of the Redis store's tests (a child process on a free port).
sys.path.insert(0, str(HERE.parent / "tests"))
from redis_server import RedisServer

STORES = ("memory", "redis")
RESPONSES = ("sse", "json")
CONCURRENCY = (1, 16)
TARGET_RATIO = 0.6
TARGET_COMMANDS = 2.0


@dataclass
class Deployment:
    """One store and response mode: the server process(es) behind one address.

    ``nodes`` are the processes whose CPU is counted; ``entry`` is the address wrk
    loads (today the one node itself; with several nodes, a proxy in front).
    """

    store: str
    response: str
    nodes: list[Target]
    loads: dict[int, list[Load]] = field(default_factory=dict)
    redis_cpu: dict[int, list[float]] = field(default_factory=dict)  # redis-server s per call
    commands: dict[int, list[float]] = field(default_factory=dict)  # Redis commands per call
    error: str | None = None

    @property
    def entry(self) -> Target:
        return self.nodes[0]

    @property
    def pids(self) -> list[int]:
        return [t.proc.pid for t in self.nodes]

    @property
    def name(self) -> str:
        return f"{self.store}/{self.response}"


@dataclass
class Count:
    """Commands Redis counted over some calls (``INFO commandstats``)."""

    calls: int
    by_command: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_command.values())

    @property
    def per_call(self) -> float:
        return self.total / self.calls if self.calls else math.nan

    def detail(self) -> str:
        parts = sorted(self.by_command.items(), key=lambda kv: (-kv[1], kv[0]))
        each = ", ".join(f"{name} {n / self.calls:.3f}" for name, n in parts) or "none"
        return f"{self.per_call:.3f} per call over {self.calls} calls ({each})"


def start(store: str, response: str, redis: RedisServer, opts: Options, log: Path) -> Deployment:
    env = child_env()
    env["BENCH_RESPONSE"] = response
    env["BENCH_REDIS_URL"] = redis.url
    node = start_server(f"mcpkit-{store}", "stateful", opts.server_cpu, log, env=env)
    return Deployment(store, response, [node])


def commands_since_reset(redis: RedisServer) -> dict[str, int]:
    return {name: n for name, n in redis.command_counts().items() if n}


def count_commands(d: Deployment, redis: RedisServer, calls: int) -> tuple[Count, Count, Count]:
    """Commands of opening a session, of its first call, and per call over ``calls`` more."""
    client = Client(d.entry.port)
    try:
        redis.reset_stats()
        client.initialize()
        setup = Count(1, commands_since_reset(redis))
        redis.reset_stats()
        _call(client, 1)
        first = Count(1, commands_since_reset(redis))
        redis.reset_stats()
        for i in range(calls):
            _call(client, i + 2)
        steady = Count(calls, commands_since_reset(redis))
    finally:
        client.close()
    return setup, first, steady


def _call(client: Client, rid: int) -> None:
    status, _, body = client.post(None, raw=echo_body(rid))
    if status != 200 or b'"isError":true' in body or b"hello from the bench" not in body:
        raise HTTPFailure(f"tools/call {rid} answered {status}: {body[:200]!r}")


def load(
    d: Deployment, c: int, redis: RedisServer, opts: Options, body: Path
) -> tuple[Load, float, float]:
    """One wrk run on ``d``: the load, redis-server CPU seconds per call, commands per call."""
    assert redis.process is not None
    commands_before = sum(redis.command_counts().values())
    redis_before = cpu_seconds(redis.process.pid)
    result = wrk(d.entry, c, opts.duration, body, opts.driver_cpu, pids=d.pids)
    redis_cpu = cpu_seconds(redis.process.pid) - redis_before
    # INFO itself is not counted (command_counts leaves it out).
    commands = sum(redis.command_counts().values()) - commands_before
    return result, redis_cpu / result.requests, commands / result.requests


def run(opts: Options, calls: int | None = None) -> list[Row]:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get update && apt-get install -y wrk")
    reps = opts.reps(3)
    calls = calls or (200 if opts.quick else 2000)
    emit(
        f"== cluster: stateful tools/call echo, RedisStore vs MemoryStore, SSE and JSON answers, "
        f"wrk -t1, {opts.duration} s per run, reps={reps}, {calls} counted calls, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="mcpkit-bench-cluster-"))
    body = workdir / "echo.json"
    body.write_bytes(echo_body("__ID__"))
    log = workdir / "servers.log"
    redis = RedisServer(workdir)
    redis.start()
    assert redis.process is not None
    if opts.pin and hasattr(os, "sched_setaffinity"):
        # Redis away from the CPU that the server and wrk share (its CPU is not counted).
        os.sched_setaffinity(redis.process.pid, {0})
    deployments = [start(s, r, redis, opts, log) for r in RESPONSES for s in STORES]
    counts: dict[str, tuple[Count, Count, Count]] = {}
    try:
        for d in deployments:
            try:
                for node in d.nodes:
                    prepare(node)  # wait, open the session wrk will use, check one echo
                d.loads = {c: [] for c in CONCURRENCY}
                d.redis_cpu = {c: [] for c in CONCURRENCY}
                d.commands = {c: [] for c in CONCURRENCY}
                if not opts.quick:  # warm-up: first-request imports, caches, the pool
                    wrk(d.entry, CONCURRENCY[-1], 1, body, opts.driver_cpu)
            except (HTTPFailure, RuntimeError) as exc:
                d.error = str(exc)
                emit(f"  {d.name}: FAILED before load: {exc}")
        for d in deployments:
            if d.store == "redis" and not d.error:
                counts[d.response] = count_commands(d, redis, calls)
        for rep in range(reps):
            for response in RESPONSES:
                pair = [d for d in deployments if d.response == response]
                if rep % 2:
                    pair.reverse()
                for c in CONCURRENCY:
                    for d in pair:
                        if d.error:
                            continue
                        try:
                            result, redis_s, commands = load(d, c, redis, opts, body)
                        except HTTPFailure as exc:
                            d.error = str(exc)
                            emit(f"  {d.name}: FAILED under load: {exc}")
                            continue
                        d.loads[c].append(result)
                        d.redis_cpu[c].append(redis_s)
                        d.commands[c].append(commands)
    finally:
        for d in deployments:
            for node in d.nodes:
                stop(node.proc)
        redis.stop()
    if any(d.error for d in deployments):
        emit(f"  (server logs: {log}, Redis's: {workdir / 'redis.log'})")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return report(deployments, counts)


def report(
    deployments: list[Deployment], counts: dict[str, tuple[Count, Count, Count]]
) -> list[Row]:
    rows: list[Row] = []
    by_key = {(d.store, d.response): d for d in deployments}
    for response in RESPONSES:
        for c in CONCURRENCY:
            med: dict[str, dict[str, float | None]] = {"rps": {}, "per_cpu": {}}
            for store in STORES:
                d = by_key[(store, response)]
                loads = d.loads.get(c, []) if not d.error else []
                for attr in ("rps", "per_cpu"):
                    values = [getattr(x, attr) for x in loads]
                    med[attr][store] = median(values) if values else None
                    unit = "calls/s" if attr == "rps" else "calls per server CPU-s"
                    shown = spread(values) if values else "FAILED"
                    emit(f"  {response:<4} c={c:<2} {store:<6} {shown:>30} {unit}")
                if store == "redis" and loads:
                    us = [1e6 * x for x in d.redis_cpu[c]]
                    emit(
                        f"  {response:<4} c={c:<2} redis  {spread(us):>30} us of redis-server "
                        f"CPU per call (not counted); {spread(d.commands[c])} commands per call"
                    )
            mem, red = by_key[("memory", response)], by_key[("redis", response)]
            if not mem.error and not red.error:
                per_rep = [
                    r.per_cpu / m.per_cpu
                    for m, r in zip(mem.loads[c], red.loads[c], strict=True)
                    if m.per_cpu
                ]
                emit(
                    f"  {response:<4} c={c:<2} redis/memory per CPU-s, each repetition: "
                    + " ".join(f"{x:.2f}x" for x in per_rep)
                )
            for attr, what, unit, target in (
                ("per_cpu", "calls per server CPU-s", "/cpu-s", TARGET_RATIO),
                ("rps", "calls/s", "/s", None),
            ):
                ours, base = med[attr]["redis"], med[attr]["memory"]
                ratio = ours / base if ours and base else None
                rows.append(
                    Row(
                        metric=f"Redis store {response.upper()} c={c} {what}",
                        mcpkit=ours,
                        baseline=base,
                        unit=unit,
                        baseline_name="MemoryStore",
                        target=f">= {target}x" if target else "-",
                        ok=(ratio >= target if ratio is not None else False) if target else None,
                    )
                )
    for response in RESPONSES:
        if response not in counts:
            emit(f"  commands, {response}: FAILED")
            rows.append(_commands_row(response, None))
            continue
        setup, first, steady = counts[response]
        emit(f"  commands, {response}: initialize + initialized: {setup.detail()}")
        emit(f"  commands, {response}: the session's first call: {first.detail()}")
        emit(f"  commands, {response}: steady state: {steady.detail()}")
        rows.append(_commands_row(response, steady.per_call))
    return rows


def _commands_row(response: str, per_call: float | None) -> Row:
    return Row(
        metric=f"Redis commands per tools/call ({response.upper()})",
        mcpkit=per_call,
        baseline=None,
        unit="cmd",
        baseline_name="-",
        target=f"<= {fmt(TARGET_COMMANDS)}",
        ok=per_call <= TARGET_COMMANDS if per_call is not None else False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(parser)
    parser.add_argument(
        "--calls", type=int, default=None, help="sequential calls counted (default 2000, quick 200)"
    )
    args = parser.parse_args(argv)
    rows = run(options_from(args), args.calls)
    emit()
    emit(summary_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
