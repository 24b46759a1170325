"""The client benchmark still runs: ``client_roundtrip.py --quick`` completes with every figure.

Speed is not asserted (benchmarks run on demand: ``python benchmarks/run.py --only client``);
this proves that the three client drivers (mcpkit, the official SDK, the bare asyncio
baseline) still talk to the benchmark servers over stdio and HTTP and report a figure.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# "client stdio round trip, wall (SDK/mcpkit 3.1x)  120 us  117 us (bare ...)  1.02x  ..."
ROW = re.compile(
    r"^client (?P<transport>stdio|http) round trip, (?P<what>wall|client CPU) "
    r"\(SDK/mcpkit (?P<speedup>[\d.]+)x\)\s{2,}(?P<mcpkit>[\d,.]+) us\s{2,}(?P<base>[\d,.]+) us"
    r".*\s(?P<sdk>[\d,.]+) us \([\d.]+x\)$"
)


def test_quick_client_benchmark_prints_every_figure() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "client_roundtrip.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [m for m in map(ROW.match, proc.stdout.splitlines()) if m]
    assert {(r["transport"], r["what"]) for r in rows} == {
        ("stdio", "wall"),
        ("stdio", "client CPU"),
        ("http", "wall"),
        ("http", "client CPU"),
    }, proc.stdout
    for row in rows:
        assert float(row["speedup"]) > 0, row.group(0)
