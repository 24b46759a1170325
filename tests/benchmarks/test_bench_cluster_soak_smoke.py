"""The scale-out soak still runs: ``bench_cluster_soak.py --quick`` on a real redis-server.

500 sessions over three node processes, a fifth of them with buffered events, then
their expiry (idle timeout 10 s). No figure is asserted beyond sanity (benchmarks run
on demand), but the script's own checks are: every session key counted, every event
log found, nothing left in Redis after the expiry (DBSIZE back to the baseline, memory
back within 5 % of the peak growth), every node answering 404 for an expired session,
no node exiting. Like the Redis store's tests it needs ``redis-server``.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PER_SESSION = re.compile(r"^  Redis bytes per idle session: ([\d,]+) B$", re.M)
RSS = re.compile(r"^  node RSS per session \(3 nodes together\): (-?[\d,]+) B", re.M)
PER_EVENT = re.compile(r"^  Redis bytes per buffered event: ([\d,]+) B", re.M)
EXPIRED = re.compile(r"^after expiry .*: DBSIZE (\d+) \(baseline (\d+)\)", re.M)


def number(pattern: re.Pattern[str], text: str) -> int:
    found = pattern.search(text)
    assert found, f"{pattern.pattern} not in:\n{text}"
    return int(found.group(1).replace(",", ""))


def test_quick_soak_reports_costs_and_leaves_nothing_behind() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_cluster_soak.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "FAILED" not in out and out.rstrip().endswith("soak: ok"), out
    # A session record is a few hundred bytes; an event well under a few KB.
    assert 100 < number(PER_SESSION, out) < 10_000, out
    assert 50 < number(PER_EVENT, out) < 20_000, out
    assert math.isfinite(number(RSS, out)), out
    expired = EXPIRED.search(out)
    assert expired and expired.group(1) == expired.group(2), out
