"""The benchmark scripts still run: each part in ``--quick`` mode completes and prints ratios.

Speed is not asserted here (benchmarks run on demand: ``python benchmarks/run.py``);
this only proves that the servers, drivers and wrk scripts under ``benchmarks/``
work against the current code, and that every summary row got a figure.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# One summary row: "<metric>  <mcpkit figure>  <baseline>  <ratio>x|-  <target>  ok|NOT OK  <sdk>".
ROW = re.compile(
    r"^(?P<metric>\S.*?)\s{2,}(?P<mcpkit>-|-?[\d,.]+ \S+)\s{2,}.*\s(?P<ok>ok|NOT OK)\s{2,}(?P<sdk>.+)$"
)

PARTS = {
    "stdio": 4,
    "sync": 10,  # (def, inline def) x 2 figures x 2 loops, + def's CPU per call against async def
    "http": 8,
    "http2026": 2,  # the rows against the raw ASGI app (those against stateful have no target)
    "auth": 2,  # protected against unprotected (the rows against the same-header run have none)
    "import": 4,
    "startup": 1,  # 2 when the TypeScript SDK is installed (see bench_startup.ts_server)
    "memory": 2,
}


@pytest.mark.parametrize("part", sorted(PARTS))
def test_quick_run_completes_and_prints_a_figure_for_every_row(part: str) -> None:
    if part.startswith(("http", "auth")) and shutil.which("wrk") is None:
        pytest.skip("the HTTP benchmark's load generator is wrk: apt-get install -y wrk")
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"bench_{part}.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAILED" not in proc.stdout, proc.stdout
    rows = [m for m in map(ROW.match, proc.stdout.splitlines()) if m]
    extra = part == "startup" and "(TypeScript SDK)" in proc.stdout
    assert len(rows) == PARTS[part] + extra, proc.stdout
    for row in rows:
        # Every row has mcpkit's figure and the official SDK's; ratios where a baseline exists.
        assert row["mcpkit"] != "-", row.group(0)
        # (sync and auth compare mcpkit with itself: no SDK column)
        assert part in ("sync", "auth") or row["sdk"].strip() != "-", row.group(0)
    if part in ("stdio", "sync", "http", "auth", "startup", "memory"):
        assert all(re.search(r"\s\d+\.\d\dx\s", r.group(0)) for r in rows), proc.stdout


def test_runner_rejects_an_unknown_part() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--only", "stdio,warp"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown part" in proc.stderr
