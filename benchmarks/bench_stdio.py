"""Part 1: sequential ``tools/call`` echo round trips over stdio.

Three server processes, each with one ``echo`` tool: mcpkit
(``servers/mcpkit_stdio.py``), the hand-written stdlib JSON-RPC loop
(``servers/minimal_stdio.py``, the baseline) and the official SDK
(``servers/sdk_stdio.py``). One driver (``stdio_client.py``) sends a request,
waits for its answer, and sends the next; the figure is round trips per
second, for a 20-byte and a 1 MB string argument, and the same per second
of the server process's own CPU time (from /proc), which other work on the
machine cannot steal: a steadier view of the same cost.

Run alone: ``python benchmarks/bench_stdio.py [--quick] [--reps N]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

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

IMPLS: dict[str, str] = {
    "minimal": str(SERVERS / "minimal_stdio.py"),
    "mcpkit": str(SERVERS / "mcpkit_stdio.py"),
    "sdk": str(SERVERS / "sdk_stdio.py"),
}
PAYLOADS: dict[str, str] = {"20 B": "x" * 20, "1 MB": "y" * (1 << 20)}
TARGET_RATIO = 0.5  # mcpkit >= 0.5x the minimal loop (the target)


def _batch_size(rate: float, seconds: float, big: bool) -> int:
    # Aim each timed batch at `seconds`; 1 MB batches are pre-encoded, so cap their memory.
    cap = 40 if big else 20_000
    return max(3, min(cap, int(rate * seconds)))


Figures = dict[str, dict[str, list[float]]]  # payload label -> implementation -> samples


def measure(opts: Options, impls: dict[str, str] | None = None) -> tuple[Figures, Figures]:
    """Per payload per implementation, one sample per repetition of: round trips/s, and
    round trips per second of the server's own CPU time (immune to CPU stolen by others)."""
    impls = impls or IMPLS
    seconds = 0.2 if opts.quick else 1.0
    rates: Figures = {p: {n: [] for n in impls} for p in PAYLOADS}
    per_cpu: Figures = {p: {n: [] for n in impls} for p in PAYLOADS}
    peers: dict[str, StdioPeer] = {}
    with affinity(opts.driver_cpu):
        try:
            for name, script in impls.items():
                peer = StdioPeer([PYTHON, script], cpu=opts.server_cpu)
                try:
                    peer.handshake()
                except ProtocolFailure as exc:
                    emit(f"  {name}: handshake failed: {exc}")
                    peer.close()
                    continue
                peers[name] = peer
            next_id = dict.fromkeys(peers, 10)
            for label, text in PAYLOADS.items():
                big = len(text) > 4096
                sizes: dict[str, int] = {}
                for name, peer in peers.items():
                    # Warm-up, which also calibrates the batch size for this server.
                    n = 3 if big else 200
                    reqs = [echo_request(next_id[name] + i, text) for i in range(n)]
                    elapsed = echo_batch(peer, reqs, next_id[name], text)
                    next_id[name] += n
                    sizes[name] = _batch_size(n / elapsed, seconds, big)
                names = list(peers)
                for rep in range(opts.reps(5, 2)):
                    # Rotate the order so no implementation always runs first after a pause.
                    for name in names[rep % len(names) :] + names[: rep % len(names)]:
                        n = sizes[name]
                        reqs = [echo_request(next_id[name] + i, text) for i in range(n)]
                        pid = peers[name].proc.pid
                        cpu_before = cpu_seconds(pid)
                        elapsed = echo_batch(peers[name], reqs, next_id[name], text)
                        cpu = cpu_seconds(pid) - cpu_before
                        next_id[name] += n
                        rates[label][name].append(n / elapsed)
                        if cpu > 0:
                            per_cpu[label][name].append(n / cpu)
        finally:
            for peer in peers.values():
                peer.close()
    return rates, per_cpu


def run(opts: Options) -> list[Row]:
    emit(
        f"== stdio: sequential tools/call echo round trips (reps={opts.reps(5, 2)}, pin={opts.pin})"
    )
    rates, per_cpu = measure(opts)
    rows: list[Row] = []
    for figures, what, unit in (
        (rates, "round trips/s", "/s"),
        (per_cpu, "round trips per server CPU-s", "/cpu-s"),
    ):
        for label, by_impl in figures.items():
            med = {n: (median(v) if v else None) for n, v in by_impl.items()}
            for name, values in by_impl.items():
                shown = spread(values) if values else "FAILED"
                emit(f"  {label:>5} {name:<8} {shown:>28} {what}")
            rows.append(ratio_row(f"stdio echo {label} {what}", med, unit, "stdlib loop"))
    return rows


def ratio_row(metric: str, med: dict[str, float | None], unit: str, baseline_name: str) -> Row:
    """A throughput row: mcpkit against the ``minimal`` baseline, target >= 0.5x."""
    ours, base = med["mcpkit"], med["minimal"]
    ratio = ours / base if ours and base else None
    return Row(
        metric=metric,
        mcpkit=ours,
        baseline=base,
        unit=unit,
        baseline_name=baseline_name,
        target=f">= {TARGET_RATIO}x",
        ok=(ratio >= TARGET_RATIO) if ratio is not None else False,
        sdk=med.get("sdk"),
    )


def main(argv: list[str] | None = None, runner: Callable[[Options], list[Row]] = run) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(parser)
    rows = runner(options_from(parser.parse_args(argv)))
    emit()
    emit(summary_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
