"""Part 4: from spawning a stdio server to its first ``tools/list`` answer.

Each sample starts a fresh process and times, on the driver's clock,
``Popen`` → ``initialize`` answered → ``notifications/initialized`` sent →
``tools/list`` answered (with the ``echo`` tool in it). This is what a host
application waits for before a model can see the server's tools; desktop
hosts start every configured server at launch.

Four servers, interleaved sample by sample: the stdlib loop (the
**baseline**), mcpkit, the official Python SDK and the TypeScript SDK
(``servers/ts_sdk_stdio.mjs`` on node; ``@modelcontextprotocol/sdk`` and
``zod`` are installed once with npm into ``~/.cache/mcpkit-bench-ts``, or
``$BENCH_TS_DIR``; without node or npm that row is skipped).

Targets: mcpkit <= 300 ms, and <= 0.5x the TypeScript SDK in the same run.

Run alone: ``python benchmarks/bench_startup.py [--quick] [--reps N]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _util import PYTHON, SERVERS, Options, Row, affinity, emit, median, spread
from bench_stdio import IMPLS
from bench_stdio import main as _main
from stdio_client import ProtocolFailure, StdioPeer

TARGET_MS = 300.0
TARGET_TS_RATIO = 0.5
TS_PACKAGES = ("@modelcontextprotocol/sdk", "zod")


def ts_server(*, install: bool = True) -> list[str] | None:
    """``node <copy of ts_sdk_stdio.mjs>`` beside its installed packages, or None.

    Without ``install`` (``--quick``: the smoke test) npm is not run: the row is
    measured only when the packages are already there.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        emit("  ts-sdk: skipped (node and npm are needed)")
        return None
    home = Path(os.environ.get("BENCH_TS_DIR", Path.home() / ".cache" / "mcpkit-bench-ts"))
    if not (home / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        if not install:
            emit(f"  ts-sdk: skipped (not installed in {home}; a full run installs it)")
            return None
        home.mkdir(parents=True, exist_ok=True)
        if not (home / "package.json").exists():
            (home / "package.json").write_text('{"private": true, "type": "module"}\n')
        try:
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", *TS_PACKAGES],
                cwd=home,
                check=True,
                capture_output=True,
                timeout=300,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            emit(f"  ts-sdk: skipped (npm install failed: {exc})")
            return None
    script = home / "ts_sdk_stdio.mjs"
    shutil.copyfile(SERVERS / "ts_sdk_stdio.mjs", script)
    return [node, str(script)]


def sample(argv: list[str], cpu: int | None) -> float:
    start = time.perf_counter()
    peer = StdioPeer(argv, cpu=cpu)
    try:
        peer.handshake()
        tools = peer.list_tools()
        elapsed = time.perf_counter() - start
    finally:
        peer.close()
    if "echo" not in tools:
        raise ProtocolFailure(f"{argv[-1]}: tools/list lacks echo: {tools}")
    return elapsed * 1000


def run(opts: Options) -> list[Row]:
    n = opts.reps(10, 1)
    emit(f"== startup: spawn -> initialize -> tools/list answered (samples={n})")
    servers = {name: [PYTHON, script] for name, script in IMPLS.items()}
    ts = ts_server(install=not opts.quick)
    if ts is not None:
        servers["ts-sdk"] = ts
    times: dict[str, list[float]] = {name: [] for name in servers}
    failed: set[str] = set()
    names = list(servers)
    with affinity(opts.driver_cpu):
        for argv in servers.values():  # warm the page cache and the .pyc files, unmeasured
            try:
                sample(argv, opts.server_cpu)
            except ProtocolFailure:
                pass
        for i in range(n):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                if name in failed:
                    continue
                try:
                    times[name].append(sample(servers[name], opts.server_cpu))
                except ProtocolFailure as exc:
                    emit(f"  {name}: {exc}")
                    failed.add(name)
    med = {name: (median(v) if v else None) for name, v in times.items()}
    for name, values in times.items():
        emit(f"  {name:<8} {spread(values) if values else 'FAILED':>28} ms")
    ours = med["mcpkit"]
    rows = [
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
    ts_ms = med.get("ts-sdk")
    if ts_ms is not None:
        rows.append(
            Row(
                metric="stdio spawn -> tools/list, against the TypeScript SDK",
                mcpkit=ours,
                baseline=ts_ms,
                unit="ms",
                baseline_name="TypeScript SDK",
                target=f"<= {TARGET_TS_RATIO}x",
                ok=ours is not None and ours / ts_ms <= TARGET_TS_RATIO,
                sdk=med["sdk"],
            )
        )
    return rows


if __name__ == "__main__":
    sys.exit(_main(runner=run))
