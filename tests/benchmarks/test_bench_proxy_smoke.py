"""``bench_proxy.py --http``: runs end to end and counts one upstream handshake per session.

The ratios themselves are machine figures (benchmarks/README.md); this checks that the
HTTP mode starts both processes, measures both paths and reports every target.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_proxy.py"


def test_http_mode_reports_every_target_and_one_handshake_per_session() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--http", "--reps", "2", "--calls", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"latency per call: direct \d+ us, proxied \d+ us", out), out
    assert re.search(r"ratio \d+\.\d\dx \(target <= 2\.0x\): (met|MISSED)", out), out
    assert re.search(r"ratio \d+\.\d\dx \(target <= 1\.5x\): (met|MISSED)", out), out
    assert "upstream initialize requests: 2 for 2 sessions and 81 proxied calls" in out, out
