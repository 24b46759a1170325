"""What tracing costs per ``tools/call``, split into the SDK's floor and mcpkit's own share.

Issue 19 asks for the cost of a traced ``tools/call`` with the SDK's tracer provider and
an exporter that drops every span. This script measures, in one run and in instructions
(callgrind, as ``instructions.py``: a figure the machine's load cannot move; each figure
the median over ``--seeds``):

(a) the call untraced: ``stdio`` and ``http-stateful``;
(b) the call traced by the automatic telemetry, the SDK's provider with
    ``SimpleSpanProcessor`` (``stdio-auto-sdk``, ``http-auto-sdk``) and with
    ``BatchSpanProcessor`` (``-batch``), and on stdio with the SDK's meter provider
    too (``stdio-auto-sdk-metrics``, simple processor);
(c) the SDK's floor, no mcpkit at all (``servers/otel_floor.py``): ``start_span`` with
    the same attributes, made current and ``end()``-ed, per processor, and one
    ``Histogram.record`` with the same point attributes;

and prints mcpkit's own share of the traced call, ``(b) - (a) - (c)``: the middleware
chain, naming the span and gathering its attributes, the clock, and on HTTP the look
at the request's trace headers. On stdio it splits that share with two more paths:
``stdio-mw`` (a middleware that only calls ``call_next``: the chain) and
``stdio-sdk-floor`` (a middleware that opens the floor's span, fixed attributes: the
SDK's span as it costs inside the server, against ``stdio-mw``).

    python benchmarks/otel_cost.py                 # --n1 100 --n2 500 --seeds 1,2,3
    python benchmarks/otel_cost.py --seeds 1       # quicker, one seed
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _util import SERVERS
from instructions import callgrind, count, server_env, total

CALLS = (
    "stdio",
    "stdio-mw",
    "stdio-sdk-floor",
    "stdio-auto-sdk",
    "stdio-auto-sdk-batch",
    "stdio-auto-sdk-metrics",
    "http-stateful",
    "http-auto-sdk",
    "http-auto-sdk-batch",
)
FLOORS = (
    "loop",
    "span",
    "span-current",
    "span-current-batch",
    "histogram",
    "span-http",
    "span-current-http",
    "span-current-batch-http",
)
# traced path -> (untraced path, the floors it holds)
SHARES: dict[str, tuple[str, tuple[str, ...]]] = {
    "stdio-auto-sdk": ("stdio", ("span-current",)),
    "stdio-auto-sdk-batch": ("stdio", ("span-current-batch",)),
    "stdio-auto-sdk-metrics": ("stdio", ("span-current", "histogram")),
    "http-auto-sdk": ("http-stateful", ("span-current-http",)),
    "http-auto-sdk-batch": ("http-stateful", ("span-current-batch-http",)),
}


def floor(mode: str, n: int, workdir: Path, seed: int) -> int:
    out = workdir / f"floor-{mode}-{n}.out"
    subprocess.run(
        [*callgrind(out), str(SERVERS / "otel_floor.py"), mode, str(n)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(seed),
    )
    return total(out)


def per_unit(
    run: Callable[[int, int], int], n1: int, n2: int, seeds: list[int]
) -> tuple[float, list[float]]:
    per = [(run(n2, seed) - run(n1, seed)) / (n2 - n1) for seed in seeds]
    return statistics.median(per), per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n1", type=int, default=100, help="calls (iterations) in the first run")
    parser.add_argument("--n2", type=int, default=500, help="calls (iterations) in the second run")
    parser.add_argument("--seeds", default="1,2,3", help="PYTHONHASHSEED values (median)")
    parser.add_argument("--calls", default=",".join(CALLS), help=f"comma-separated: {CALLS}")
    parser.add_argument("--floors", default=",".join(FLOORS), help=f"comma-separated: {FLOORS}")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s]
    calls = [c for c in args.calls.split(",") if c]
    floors = [f for f in args.floors.split(",") if f]
    import opentelemetry.version

    import mcpkit

    print(
        f"mcpkit from {Path(mcpkit.__file__).parent}, python {sys.version.split()[0]}, "
        f"opentelemetry {opentelemetry.version.__version__}"
    )
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for mode in floors:
            figures[mode], per = per_unit(
                lambda n, s, m=mode: floor(m, n, workdir, s), args.n1, args.n2, seeds
            )
            each = " ".join(f"{p:,.0f}" for p in per)
            print(f"floor {mode:26} {figures[mode]:10,.0f} per iteration (seeds: {each})")
            sys.stdout.flush()
        for path in calls:
            count(path, 1, workdir, 0)  # unmeasured: writes the .pyc files the runs then read
            figures[path], per = per_unit(
                lambda n, s, p=path: count(p, n, workdir, s), args.n1, args.n2, seeds
            )
            each = " ".join(f"{p:,.0f}" for p in per)
            print(f"call  {path:26} {figures[path]:10,.0f} per tools/call (seeds: {each})")
            sys.stdout.flush()
    print()
    print(
        f"{'traced path':24} {'ratio':>6} {'added':>9} {'SDK floor':>10} {'mcpkit':>8} {'mcpkit %':>8}"
    )
    for path, (plain, floors) in SHARES.items():
        if not {path, plain, *floors}.issubset(figures):
            continue
        added = figures[path] - figures[plain]
        sdk = sum(figures[f] for f in floors)
        own = added - sdk
        print(
            f"{path:24} {figures[path] / figures[plain]:5.2f}x {added:9,.0f} {sdk:10,.0f} "
            f"{own:8,.0f} {100 * own / figures[plain]:7.1f}%"
        )
    print("(mcpkit %: mcpkit's own share against the untraced call)")
    if {"stdio", "stdio-mw", "stdio-sdk-floor", "stdio-auto-sdk", "span-current"} <= set(figures):
        chain = figures["stdio-mw"] - figures["stdio"]
        in_server = figures["stdio-sdk-floor"] - figures["stdio-mw"]
        describing = figures["stdio-auto-sdk"] - figures["stdio-sdk-floor"]
        print(
            f"stdio-auto-sdk split: the chain {chain:,.0f}, the SDK's span in the server "
            f"{in_server:,.0f} (floor {figures['span-current']:,.0f}), mcpkit's describing "
            f"{describing:,.0f}"
        )


if __name__ == "__main__":
    main()
