"""The scale-out benchmark still runs: ``bench_cluster.py --quick`` against a real redis-server.

No speed is asserted (benchmarks run on demand); this proves that both stores serve
the echo over SSE and JSON under wrk, that the server's CPU was read for each, and
that Redis's own ``INFO commandstats`` gave a finite number of commands per call.
Like the Redis store's tests it needs ``redis-server`` (it fails, saying how to
install it, when absent); like the other HTTP benchmarks it needs wrk.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# "Redis store SSE c=16 calls per server CPU-s  7,975 /cpu-s  17,973 /cpu-s (MemoryStore)  0.44x  >= 0.6x  NOT OK"
EFFICIENCY = re.compile(
    r"^Redis store (?P<mode>SSE|JSON) c=(?P<c>\d+) calls per server CPU-s\s{2,}"
    r"(?P<redis>[\d,]+) /cpu-s\s{2,}(?P<memory>[\d,]+) /cpu-s \(MemoryStore\)\s{2,}"
    r"(?P<ratio>\d+\.\d\d)x\s{2,}>= 0\.6x\s{2,}(ok|NOT OK)\b"
)
# "Redis commands per tools/call (SSE)  1.00 cmd  -  -  <= 2.00  ok"
COMMANDS = re.compile(
    r"^Redis commands per tools/call \((?P<mode>SSE|JSON)\)\s{2,}(?P<n>[\d.]+) cmd\s{2,}"
    r".*<= 2\.00\s{2,}(ok|NOT OK)\b"
)
# "  commands, sse: steady state: 1.000 per call over 200 calls (xadd 1.000)"
STEADY = re.compile(r"^  commands, (sse|json): steady state: ([\d.]+) per call over 200 calls \(")


def test_quick_run_reports_efficiency_and_commands_per_call() -> None:
    if shutil.which("wrk") is None:
        pytest.skip("the HTTP benchmark's load generator is wrk: apt-get install -y wrk")
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_cluster.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAILED" not in proc.stdout, proc.stdout
    lines = proc.stdout.splitlines()
    efficiency = [m for m in map(EFFICIENCY.match, lines) if m]
    # Both response modes at both concurrencies, each with both stores' figures.
    assert sorted((m["mode"], m["c"]) for m in efficiency) == [
        ("JSON", "1"),
        ("JSON", "16"),
        ("SSE", "1"),
        ("SSE", "16"),
    ], proc.stdout
    for m in efficiency:
        redis, memory = (int(m[k].replace(",", "")) for k in ("redis", "memory"))
        assert redis > 0 and memory > 0, m.group(0)
        assert float(m["ratio"]) == pytest.approx(redis / memory, abs=0.01), m.group(0)
    commands = {m["mode"]: float(m["n"]) for m in map(COMMANDS.match, lines) if m}
    assert sorted(commands) == ["JSON", "SSE"], proc.stdout
    assert all(math.isfinite(n) and n >= 0 for n in commands.values()), commands
    steady = {m[1]: float(m[2]) for m in map(STEADY.match, lines) if m}
    assert sorted(steady) == ["json", "sse"], proc.stdout
    # The SSE answer is written to the session's event log (resumability): Redis must
    # have counted commands for it, so the count really came from the server.
    assert steady["sse"] > 0, proc.stdout
