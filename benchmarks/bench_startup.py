"""Part 4: from spawning a stdio server to its first ``tools/list`` answer.

Each sample starts a fresh process and times, on the driver's clock,
``Popen`` → ``initialize`` answered → ``notifications/initialized`` sent →
``tools/list`` answered (with the ``echo`` tool in it). This is what a host
application waits for before a model can see the server's tools.

Run alone: ``python benchmarks/bench_startup.py [--quick] [--reps N]``.
"""

from __future__ import annotations

import sys
import time

from _util import PYTHON, Options, Row, affinity, emit, median, spread
from bench_stdio import IMPLS
from bench_stdio import main as _main
from stdio_client import ProtocolFailure, StdioPeer

TARGET_MS = 300.0


def sample(script: str, cpu: int | None) -> float:
    start = time.perf_counter()
    peer = StdioPeer([PYTHON, script], cpu=cpu)
    try:
        peer.handshake()
        tools = peer.list_tools()
        elapsed = time.perf_counter() - start
    finally:
        peer.close()
    if "echo" not in tools:
        raise ProtocolFailure(f"{script}: tools/list lacks echo: {tools}")
    return elapsed * 1000


def run(opts: Options) -> list[Row]:
    n = opts.reps(10, 1)
    emit(f"== startup: spawn -> initialize -> tools/list answered (samples={n})")
    times: dict[str, list[float]] = {name: [] for name in IMPLS}
    failed: set[str] = set()
    names = list(IMPLS)
    with affinity(opts.driver_cpu):
        for i in range(n):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                if name in failed:
                    continue
                try:
                    times[name].append(sample(IMPLS[name], opts.server_cpu))
                except ProtocolFailure as exc:
                    emit(f"  {name}: {exc}")
                    failed.add(name)
    med = {name: (median(v) if v else None) for name, v in times.items()}
    for name, values in times.items():
        emit(f"  {name:<8} {spread(values) if values else 'FAILED':>28} ms")
    ours = med["mcpkit"]
    return [
        Row(
            metric="stdio spawn -> tools/list answered",
            mcpkit=ours,
            baseline=med["minimal"],
            unit="ms",
            baseline_name="stdlib loop",
            target=f"<= {TARGET_MS:.0f} ms",
            ok=(ours <= TARGET_MS) if ours is not None else False,
            sdk=med["sdk"],
        )
    ]


if __name__ == "__main__":
    sys.exit(_main(runner=run))
