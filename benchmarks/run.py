"""Run mcpkit's benchmarks and print one summary table.

    python benchmarks/run.py                      # everything (about 11 minutes)
    python benchmarks/run.py --only stdio,import  # some parts
    python benchmarks/run.py --only http2026      # the stateless era (2026-07-28) over HTTP
    python benchmarks/run.py --only cluster       # the Redis store against the in-memory one
    python benchmarks/run.py --quick              # tiny run: proves the scripts work, numbers meaningless

Parts: stdio, sync, http, http2026, auth, cluster, import, startup, memory, client (see benchmarks/README.md).
Every figure is a median over repetitions, and every comparison is against a
baseline measured in the same run; read the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable

from _util import Options, Row, add_common_args, emit, options_from, summary_table

PARTS: dict[str, str] = {
    "import": "bench_import",
    "startup": "bench_startup",
    "stdio": "bench_stdio",
    "sync": "bench_sync",
    "http": "bench_http",
    "http2026": "bench_http2026",
    "auth": "bench_auth",
    "cluster": "bench_cluster",
    "memory": "bench_memory",
    "client": "client_roundtrip",
}


def versions() -> str:
    def version(dist: str) -> str:
        try:
            from importlib.metadata import version as v

            return v(dist)
        except Exception:
            return "absent"

    try:
        wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split()[1]
    except (OSError, IndexError):
        wrk = "absent"
    return (
        f"python {platform.python_version()}, mcpkit {version('mcpkit')}, mcp (official SDK) {version('mcp')}, "
        f"uvicorn {version('uvicorn')}, uvloop {version('uvloop')}, httptools {version('httptools')}, "
        f"orjson {version('orjson')}, wrk {wrk}, cpus {os.cpu_count()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", default=",".join(PARTS), help=f"comma-separated parts of: {','.join(PARTS)}"
    )
    add_common_args(parser)
    args = parser.parse_args(argv)
    chosen = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {unknown}; choose from {list(PARTS)}")
    opts = options_from(args)
    emit(f"# {versions()}")
    emit(f"# load average at start: {os.getloadavg()[0]:.2f}; quick={opts.quick} pin={opts.pin}")
    rows: list[Row] = []
    failed: list[str] = []
    started = time.monotonic()
    for part in PARTS:  # fixed order, whatever order --only lists them in
        if part not in chosen:
            continue
        runner: Callable[[Options], list[Row]] = importlib.import_module(PARTS[part]).run
        try:
            rows.extend(runner(opts))
        except Exception as exc:  # one broken part must not hide the others' results
            failed.append(part)
            emit(f"!! part {part} failed: {type(exc).__name__}: {exc}")
        emit()
    emit(
        f"# load average at end: {os.getloadavg()[0]:.2f}; took {time.monotonic() - started:.0f} s"
    )
    emit("== summary (medians; ratio = mcpkit / baseline; SDK ratio = SDK / baseline)")
    emit(summary_table(rows))
    if failed:
        emit(f"!! failed parts: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
