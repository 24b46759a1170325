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

Targets: the default ``def`` >= 0.5x the raw loop, the inline ``def`` >= 0.8x.

Run alone: ``python benchmarks/bench_sync.py [--quick] [--reps N] [--loops uvloop,asyncio]``.
"""

from __future__ import annotations

import argparse
import sys

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


def run(opts: Options, loops: tuple[str, ...] = LOOPS) -> list[Row]:
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
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(parser)
    parser.add_argument(
        "--loops", default=",".join(LOOPS), help="comma-separated event loops: uvloop,asyncio"
    )
    args = parser.parse_args(argv)
    loops = tuple(p.strip() for p in args.loops.split(",") if p.strip())
    unknown = [p for p in loops if p not in LOOPS]
    if unknown:
        parser.error(f"unknown loop(s) {unknown}; choose from {list(LOOPS)}")
    rows = run(options_from(args), loops)
    emit()
    emit(summary_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
