"""Server CPU and thread switches per sequential ``tools/call``: ``async def`` against ``def``.

    python benchmarks/sync_cost.py [--loop uvloop|asyncio] [--calls N] [--reps N]
                                   [--variant NAME=SRC_DIR ...]

Servers (``servers/mcpkit_stdio_sync.py``) measured in rotation: the tool as
``async def`` (the reference), plain ``def`` (worker thread) and inline ``def``;
each ``--variant`` adds a ``def`` server importing mcpkit from another source
tree (``PYTHONPATH``), e.g. an older commit's ``src`` from ``git archive``, so
that two versions of the worker pool are compared in the same minute. CPU is
the sum over the server's threads of ``/proc/<pid>/task/*/schedstat`` (ns, not
clock ticks), so a few thousand calls give a steady per-call figure; thread
switches (voluntary / involuntary) come from ``/proc/<pid>/task/*/status``.
The per-repetition samples are printed too: on a shared machine a loaded
repetition shows as an outlier, and the lowest samples are the cleanest.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from _util import PYTHON, SERVERS, child_env
from stdio_client import StdioPeer, echo_batch, echo_request

TEXT = "x" * 20


def cpu_ns(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def switches(pid: int) -> tuple[int, int]:
    voluntary = involuntary = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches"):
                    voluntary += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    involuntary += int(line.split()[1])
    return voluntary, involuntary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loop", default="uvloop", choices=("uvloop", "asyncio"))
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=SRC_DIR")
    args = parser.parse_args()
    servers: dict[str, tuple[list[str], str]] = {m: ([], m) for m in ("async", "thread", "inline")}
    for spec in args.variant:
        name, _, src = spec.partition("=")
        servers[f"thread@{name}"] = (["env", f"PYTHONPATH={Path(src).resolve()}"], "thread")
    peers: dict[str, StdioPeer] = {}
    os.environ.update(child_env())
    try:
        for name, (prefix, mode) in servers.items():
            argv = [*prefix, PYTHON, str(SERVERS / "mcpkit_stdio_sync.py"), mode, args.loop]
            peers[name] = StdioPeer(argv)
            peers[name].handshake()
        next_id = dict.fromkeys(peers, 10)
        cpu: dict[str, list[float]] = {n: [] for n in peers}
        sw: dict[str, list[tuple[float, float]]] = {n: [] for n in peers}
        for name, peer in peers.items():  # warm-up
            echo_batch(peer, [echo_request(10 + i, TEXT) for i in range(500)], 10, TEXT)
            next_id[name] = 510
        names = list(peers)
        n = args.calls
        for rep in range(args.reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                peer, first = peers[name], next_id[name]
                requests = [echo_request(first + i, TEXT) for i in range(n)]
                pid = peer.proc.pid
                c0, s0 = cpu_ns(pid), switches(pid)
                echo_batch(peer, requests, first, TEXT)
                c1, s1 = cpu_ns(pid), switches(pid)
                next_id[name] += n
                cpu[name].append((c1 - c0) / n / 1000)
                sw[name].append(((s1[0] - s0[0]) / n, (s1[1] - s0[1]) / n))
    finally:
        for peer in peers.values():
            peer.close()
    reference = statistics.median(cpu["async"])
    print(f"== server CPU per sequential tools/call, {args.loop}, {n} calls x {args.reps} reps")
    for name in peers:
        med = statistics.median(cpu[name])
        vol = statistics.median(s[0] for s in sw[name])
        inv = statistics.median(s[1] for s in sw[name])
        samples = ", ".join(f"{x:.1f}" for x in cpu[name])
        print(
            f"  {name:<16} {med:6.1f} us ({med / reference:.2f}x async def)  "
            f"switches/call {vol:.2f} vol + {inv:.2f} invol  [{samples}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
