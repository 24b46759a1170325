"""The client benchmark still runs: one quick stdio leg with all three clients, both modes.

No speed is asserted (benchmarks run on demand); this proves that the driver can
connect mcpkit's client, the official SDK's and the bare baseline to the same server,
speak the chosen revision, time sequential and pipelined calls, and read the
server's CPU, and that every summary row got a figure.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ROW = re.compile(r"^client stdio (sequential|64 in flight), asyncio, 2025-11-25, .*\sus\s")
DETAIL = re.compile(r"^\s+(minimal|mcpkit|sdk)\s+[\d,.]+.*\s[\d,.]+.*\s[\d,.]+")


def test_a_quick_stdio_leg_prints_every_figure() -> None:
    argv = [sys.executable, str(BENCHMARKS / "client_roundtrip.py"), "--quick"]
    argv += ["--loops", "asyncio", "--eras", "2025-11-25", "--no-http"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=BENCHMARKS)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    # Two modes x (wall, client CPU) summary rows, each with mcpkit's, the baseline's
    # and the SDK's figure and the SDK/mcpkit ratio.
    rows = [line for line in lines if ROW.match(line)]
    assert len(rows) == 4, proc.stdout
    assert all(re.search(r"SDK/mcpkit \d+\.\dx", row) for row in rows), proc.stdout
    assert all(row.count(" us") >= 3 for row in rows), proc.stdout
    # Per mode, a detail line per client with wall, client CPU and server CPU.
    assert len([line for line in lines if DETAIL.match(line)]) == 6, proc.stdout
    assert any("server CPU" in line and "neither" in line for line in lines), proc.stdout
