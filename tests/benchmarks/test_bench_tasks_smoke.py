"""The tasks benchmark still runs: ``bench_tasks.py --quick`` against a real redis-server
and a real ``mcpkit worker``.

No speed is asserted (benchmarks run on demand); this proves that the plain call and the
three task paths (memory, Redis, queue) complete with the right result, and that the queue
ran every task of the burst.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_quick_run_reports_every_variant_and_the_queue_throughput() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_tasks.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert re.search(r"^plain tools/call: [\d,.]+ us wall, [\d,.]+ us CPU$", out, re.M), out
    for label in ("records in memory", "records on Redis", "through the queue"):
        assert re.search(rf"^task, {label}: wall [\d,.]+ us \(\d+\.\d\dx\)", out, re.M), out
    assert re.search(r"^queue throughput, 1 worker process\(es\): [\d,.]+ tasks/s", out, re.M)
