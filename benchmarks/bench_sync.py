"""Part: what a sync (``def``) tool costs over stdio, against the raw stdlib loop.

Sequential ``tools/call`` echo round trips (20-byte argument), the same driver
as the stdio part (``stdio_client.py``), to four server processes measured in
rotation in the same run: the hand-written stdlib JSON-RPC loop
(``servers/minimal_stdio.py``, the **baseline**) and mcpkit with the tool
written three ways (``servers/mcpkit_stdio_sync.py``): ``async def`` (for
reference), a plain ``def`` (the default: run off the event loop, in a worker
thread) and ``def`` with ``@server.tool(run_in_thread=False)`` (called on the
event loop). Each loop (``--loops uvloop,asyncio``) is one leg with its own
baseline. Figures: round trips per second of wall time and per second of the
server process's own CPU time (all its threads).

Targets: the default ``def`` >= 0.5x the raw loop, the inline ``def`` >= 0.8x;
and (issue 18) the default ``def`` at most 1.3x an ``async def`` tool's server
CPU per call.

``--http`` adds a leg over Streamable HTTP (stateful, JSON answers, wrk at 1 and
16 connections, ``servers/http_server.py``): the raw ASGI app, and mcpkit with
the tool as ``async def``, ``def`` and inline ``def``, in rotation.

Run alone: ``python benchmarks/bench_sync.py [--quick] [--reps N] [--loops uvloop,asyncio] [--http]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from _util import (
    PYTHON,
    SERVERS,
    Options,
    Row,
    add_common_args,
    affinity,
    cpu_seconds,
    emit,
    median,
    options_from,
    spread,
    summary_table,
)
from stdio_client import ProtocolFailure, StdioPeer, echo_batch, echo_request

LOOPS = ("uvloop", "asyncio")
TEXT = "x" * 20
#: name -> (mode of servers/mcpkit_stdio_sync.py, or None for the baseline; target ratio)
IMPLS: dict[str, tuple[str | None, float | None]] = {
    "minimal": (None, None),
    "async def": ("async", None),
    "def": ("thread", 0.5),
    "def inline": ("inline", 0.8),
}

Figures = dict[str, list[float]]  # implementation -> samples


def _argv(mode: str | None, loop: str) -> list[str]:
    if mode is None:
        return [PYTHON, str(SERVERS / "minimal_stdio.py")]
    return [PYTHON, str(SERVERS / "mcpkit_stdio_sync.py"), mode, loop]


def measure(opts: Options, loop: str) -> tuple[Figures, Figures]:
    """Per implementation, one sample per repetition of round trips/s and per server CPU-s."""
    seconds = 0.2 if opts.quick else 1.0
    rates: Figures = {n: [] for n in IMPLS}
    per_cpu: Figures = {n: [] for n in IMPLS}
    peers: dict[str, StdioPeer] = {}
    with affinity(opts.driver_cpu):
        try:
            for name, (mode, _) in IMPLS.items():
                peer = StdioPeer(_argv(mode, loop), cpu=opts.server_cpu)
                try:
                    peer.handshake()
                except ProtocolFailure as exc:
                    emit(f"  {name}: handshake failed: {exc}")
                    peer.close()
                    continue
                peers[name] = peer
            next_id = dict.fromkeys(peers, 10)
            sizes: dict[str, int] = {}
            for name, peer in peers.items():
                n = 500  # warm-up, which also sizes this server's batches
                reqs = [echo_request(next_id[name] + i, TEXT) for i in range(n)]
                elapsed = echo_batch(peer, reqs, next_id[name], TEXT)
                next_id[name] += n
                sizes[name] = max(3, min(40_000, int(n / elapsed * seconds)))
            names = list(peers)
            for rep in range(opts.reps(7, 2)):
                for name in names[rep % len(names) :] + names[: rep % len(names)]:
                    n = sizes[name]
                    reqs = [echo_request(next_id[name] + i, TEXT) for i in range(n)]
                    pid = peers[name].proc.pid
                    cpu_before = cpu_seconds(pid)
                    elapsed = echo_batch(peers[name], reqs, next_id[name], TEXT)
                    cpu = cpu_seconds(pid) - cpu_before
                    next_id[name] += n
                    rates[name].append(n / elapsed)
                    if cpu > 0:
                        per_cpu[name].append(n / cpu)
        finally:
            for peer in peers.values():
                peer.close()
    return rates, per_cpu


#: name -> implementation in servers/http_server.py
HTTP_IMPLS = {
    "minimal": "minimal",
    "async def": "mcpkit",
    "def": "mcpkit-def",
    "def inline": "mcpkit-inline",
}
HTTP_CONCURRENCY = (1, 16)


def run_http(opts: Options) -> list[Row]:
    """The HTTP leg: per server CPU-s and per second, each ``def`` flavour against ``async def``."""
    from _util import stop
    from bench_http import HTTPFailure, Load, echo_body, prepare, start_server, wrk

    if shutil.which("wrk") is None:
        emit("== sync tools over HTTP: skipped (wrk is not installed)")
        return []
    reps = opts.reps(3)
    emit(f"== sync tools over HTTP, stateful, JSON: wrk {opts.duration} s per run (reps={reps})")
    workdir = Path(tempfile.mkdtemp(prefix="mcpkit-bench-sync-"))
    body = workdir / "echo.json"
    body.write_bytes(echo_body("__ID__"))
    log = workdir / "servers.log"
    targets = {n: start_server(i, "stateful", opts.server_cpu, log) for n, i in HTTP_IMPLS.items()}
    loads: dict[tuple[str, int], list[Load]] = {}
    try:
        for t in targets.values():
            prepare(t)
            if not opts.quick:
                wrk(t, 16, 1, body, opts.driver_cpu)
        names = list(targets)
        for rep in range(reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                for c in HTTP_CONCURRENCY:
                    load = wrk(targets[name], c, opts.duration, body, opts.driver_cpu)
                    loads.setdefault((name, c), []).append(load)
    except HTTPFailure as exc:
        emit(f"  FAILED: {exc} (server logs: {log})")
        return []
    finally:
        for t in targets.values():
            stop(t.proc)
    shutil.rmtree(workdir, ignore_errors=True)
    rows: list[Row] = []
    for c in HTTP_CONCURRENCY:
        for attr, what, unit in (
            ("per_cpu", "req per server CPU-s", "/cpu-s"),
            ("rps", "req/s", "/s"),
        ):
            med = {n: median([getattr(x, attr) for x in loads[(n, c)]]) for n in targets}
            for name in targets:
                values = [getattr(x, attr) for x in loads[(name, c)]]
                emit(
                    f"  c={c:<2} {name:<10} {spread(values):>28} {what}  "
                    f"({med[name] / med['async def']:.2f}x async def, "
                    f"{med[name] / med['minimal']:.2f}x raw ASGI)"
                )
            for name in ("def", "def inline"):
                # Per CPU-s, 1.3x the CPU per call is 1/1.3 = 0.77x the calls.
                target = 1 / 1.3 if (name == "def" and attr == "per_cpu") else None
                ratio = med[name] / med["async def"]
                rows.append(
                    Row(
                        metric=f"HTTP stateful c={c} {name} tool, {what}",
                        mcpkit=med[name],
                        baseline=med["async def"],
                        unit=unit,
                        baseline_name="async def tool",
                        target="-" if target is None else f">= {target:.2f}x",
                        ok=None if target is None else ratio >= target,
                    )
                )
    return rows


def run(opts: Options, loops: tuple[str, ...] = LOOPS, *, http: bool = False) -> list[Row]:
    rows: list[Row] = []
    for loop in loops:
        emit(
            f"== sync tools over stdio, {loop}: sequential 20 B echo round trips "
            f"(reps={opts.reps(7, 2)}, pin={opts.pin})"
        )
        rates, per_cpu = measure(opts, loop)
        for figures, what, unit in (
            (rates, "round trips/s", "/s"),
            (per_cpu, "round trips per server CPU-s", "/cpu-s"),
        ):
            med = {n: (median(v) if v else None) for n, v in figures.items()}
            base = med["minimal"]
            for name, values in figures.items():
                shown = spread(values) if values else "FAILED"
                ratio = f"{med[name] / base:.2f}x" if med[name] and base else "-"
                emit(f"  {name:<10} {shown:>28} {what}  ({ratio} the raw loop)")
            for name, (mode, target) in IMPLS.items():
                if mode is None:
                    continue
                ours = med[name]
                ratio_value = ours / base if ours and base else None
                rows.append(
                    Row(
                        metric=f"stdio {name} tool, {loop}, {what}",
                        mcpkit=ours,
                        baseline=base,
                        unit=unit,
                        baseline_name="stdlib loop",
                        target=f">= {target}x" if target is not None else "-",
                        ok=(
                            None
                            if target is None
                            else (ratio_value is not None and ratio_value >= target)
                        ),
                    )
                )
            ours, reference = med["def"], med["async def"]
            if what.endswith("CPU-s") and ours and reference:
                rows.append(
                    Row(
                        metric=f"stdio def tool, {loop}, server CPU per call vs async def",
                        mcpkit=1e6 / ours,
                        baseline=1e6 / reference,
                        unit="us",
                        baseline_name="async def tool",
                        target="<= 1.3x",
                        ok=reference / ours <= 1.3,
                    )
                )
    if http:
        rows.extend(run_http(opts))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(parser)
    parser.add_argument(
        "--loops", default=",".join(LOOPS), help="comma-separated event loops: uvloop,asyncio"
    )
    parser.add_argument("--http", action="store_true", help="add the Streamable HTTP leg")
    args = parser.parse_args(argv)
    loops = tuple(p.strip() for p in args.loops.split(",") if p.strip())
    unknown = [p for p in loops if p not in LOOPS]
    if unknown:
        parser.error(f"unknown loop(s) {unknown}; choose from {list(LOOPS)}")
    rows = run(options_from(args), loops, http=args.http)
    emit()
    emit(summary_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
