"""``bench_proxy.py --http``: runs end to end and counts one upstream handshake per session.

The ratios themselves are machine figures (benchmarks/README.md); this checks that the
HTTP mode starts its processes, measures every path (direct, proxied, the floor) and
reports every target.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_proxy.py"


@pytest.mark.parametrize("pin", [[], ["--pin"]], ids=["unpinned", "pinned"])
def test_http_mode_reports_every_target_and_one_handshake_per_session(pin: list[str]) -> None:
    if pin and (not shutil.which("taskset") or len(os.sched_getaffinity(0)) < 2):
        pytest.skip("--pin needs taskset and two CPUs")
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--http", "--reps", "2", "--calls", "20", *pin],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"latency per call: direct \d+ us, proxied \d+ us", out), out
    assert re.search(r"ratio \d+\.\d\dx \(target <= 2\.0x\): (met|MISSED)", out), out
    assert re.search(r"ratio \d+\.\d\dx \(target <= 1\.5x\): (met|MISSED)", out), out
    assert re.search(r"floor: .* \d+ us, \d+\.\d\dx; the proxy is \d+\.\d\dx the floor", out), out
    assert (
        "upstream initialize requests from the proxy: 1 for its 1 downstream session "
        "and 81 proxied calls (target 1): met"
    ) in out, out


def test_peer_mode_measures_fastmcp_serving_and_both_of_its_proxies() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--http", "--peer", "--reps", "1", "--calls", "10"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # mcpkit's own count is unchanged by the peers, which have an upstream of their own.
    assert "upstream initialize requests from the proxy: 1 for its 1 downstream" in out, out
    assert re.search(r"FastMCP, the same way: serving it \d+ us CPU per call", out), out
    found = re.findall(
        r"its proxy \((.+?)\): \d+ us CPU \(\d+\.\d\dx its serving, \d+\.\dx mcpkit's proxy\); "
        r"latency \d+ us \(\d+\.\d\dx\); upstream initialize requests during its 10 measured "
        r"calls: (\d+)",
        out,
    )
    assert [how for how, _ in found] == [
        "a session per request, its default for a URL",
        "one connected client shared",
    ], out
    # FastMCP 4.1.6 (pinned in the dev extra): a session per call, or none on a shared client.
    assert [int(n) for _, n in found] == [10, 0], out
