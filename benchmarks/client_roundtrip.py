"""Part "client": ``tools/call`` round trips seen from the client side.

The same mcpkit server (``servers/mcpkit_stdio.py`` over stdio; ``servers/http_server.py
mcpkit stateful`` on uvicorn over Streamable HTTP, JSON answers) is driven by three clients,
each in its own process (``client_driver.py``): mcpkit's ``Client``, the official Python
SDK's ``mcp.Client``, and the baseline, a hand-written asyncio JSON-RPC exchange (asyncio's
pipe transports + orjson, or one httpx POST per call) that does nothing else. They are
measured in rotation, a fresh process per repetition, spawning and connecting off the clock.
All three speak the same revision: 2025-11-25 (the handshake era) throughout, and over stdio
also 2026-07-28 (the stateless revision both mcpkit's and the SDK's clients pick by default
when the server offers it).

Per stdio leg (event loop x revision), two modes and three figures, medians over every
timed batch:
* modes: sequential calls (latency) and 64 calls in flight on one connection (wall time
  per call, i.e. throughput);
* wall-clock microseconds per call: what a caller waits;
* the client process's own CPU microseconds per call: the client's cost alone (the server
  is another process), which other work on the machine cannot inflate;
* the server process's CPU microseconds per call (the same server whoever drives it), so
  that a wall-clock figure can be split into client, server and the rest (pipe wake-ups,
  scheduling).

The target (the client issue): mcpkit's client at least 10x faster per stdio round trip
than the official SDK's client. Every figure prints ``SDK / mcpkit``. The event loop legs are
loop-for-loop: every client on asyncio's default loop, then every client on uvloop (the
SDK's anyio runs on it too); the server (``run_stdio``) is on uvloop in both.

Run alone: ``python benchmarks/client_roundtrip.py [--quick] [--reps N] [--pin]
[--loops asyncio,uvloop] [--eras 2025-11-25,2026-07-28] [--no-http]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from _util import (
    HERE,
    PYTHON,
    SERVERS,
    Options,
    Row,
    add_common_args,
    child_env,
    emit,
    free_port,
    median,
    options_from,
    pinned,
    spread,
    stop,
    summary_table,
    wait_for_port,
)

DRIVER = str(HERE / "client_driver.py")
IMPLS = ("minimal", "mcpkit", "sdk")
LOOPS = ("asyncio", "uvloop")
ERAS = ("2025-11-25", "2026-07-28")
MODES = {"seq": "sequential", "pipe": "64 in flight"}
TARGET_SPEEDUP = 10.0  # SDK time / mcpkit time per stdio round trip
DRIVER_TIMEOUT_S = 300

# {impl: {mode: {figure: [per-batch values]}}}
Got = dict[str, dict[str, dict[str, list[float]]]]


def drive(impl: str, transport: str, target: str, opts: Options, loop: str, era: str) -> Any:
    seconds, batches = (0.1, 1) if opts.quick else (0.4, 3)
    argv = [PYTHON, DRIVER, impl, transport, target, "--seconds", str(seconds)]
    argv += ["--batches", str(batches), "--era", era]
    argv += ["--inflight", "64" if transport == "stdio" else "1"]
    argv += ["--uvloop"] if loop == "uvloop" else []
    proc = subprocess.run(
        pinned(argv, opts.driver_cpu),
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
        env=child_env(),
        cwd=HERE,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{impl} client over {transport} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def http_server(opts: Options) -> Iterator[str]:
    port = free_port()
    argv = [PYTHON, str(SERVERS / "http_server.py"), "mcpkit", "stateful", str(port)]
    proc = subprocess.Popen(
        pinned(argv, opts.server_cpu),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


def measure(transport: str, target: str, opts: Options, reps: int, loop: str, era: str) -> Got:
    """Every batch of every repetition, the implementations interleaved."""
    got: Got = {i: {} for i in IMPLS}
    for rep in range(reps):
        order = IMPLS[rep % len(IMPLS) :] + IMPLS[: rep % len(IMPLS)]
        for impl in order:
            result = drive(impl, transport, target, opts, loop, era)
            for mode in MODES:
                if mode not in result:
                    continue
                into = got[impl].setdefault(mode, {})
                for key in ("us", "cpu_us", "server_cpu_us"):
                    into.setdefault(key, []).extend(result[mode][key])
    return got


FIGURES = (("us", "wall"), ("cpu_us", "client CPU"), ("server_cpu_us", "server CPU"))


def rows_for(transport: str, loop: str, era: str, got: Got) -> list[Row]:
    rows = []
    on_stdio = transport == "stdio"
    for mode, mode_name in MODES.items():
        if mode not in got["mcpkit"]:
            continue
        emit(f"  {transport}, {mode_name}, clients on {loop}, {era}: us per call")
        emit(f"    {'':<8} {'wall':>24} {'client CPU':>24} {'server CPU':>24}")
        figures = FIGURES if on_stdio else FIGURES[:2]
        for impl in IMPLS:
            cells = [spread(got[impl][mode][key]) for key, _ in figures]
            emit(f"    {impl:<8} " + " ".join(f"{c:>24}" for c in cells))
        speedups = []
        for key, what in figures[:2]:
            med = {impl: median(got[impl][mode][key]) for impl in IMPLS}
            speedup = med["sdk"] / med["mcpkit"]
            speedups.append(f"{speedup:.1f}x ({what})")
            rows.append(
                Row(
                    metric=f"client {transport} {mode_name}, {loop}, {era}, {what} "
                    f"(SDK/mcpkit {speedup:.1f}x)",
                    mcpkit=med["mcpkit"],
                    baseline=med["minimal"],
                    unit="us",
                    baseline_name="bare asyncio client",
                    target=f"SDK/mcpkit >= {TARGET_SPEEDUP:.0f}x" if on_stdio else "-",
                    ok=(speedup >= TARGET_SPEEDUP) if on_stdio else None,
                    sdk=med["sdk"],
                )
            )
        emit(f"    mcpkit is {' and '.join(speedups)} faster than the SDK client")
        if on_stdio:
            # Where a sequential mcpkit call's wall time goes: client, server, the rest.
            wall, cpu, srv = (
                median(got["mcpkit"][mode][k]) for k in ("us", "cpu_us", "server_cpu_us")
            )
            rest = max(0.0, wall - cpu - srv) if mode == "seq" else None
            if rest is not None:
                emit(
                    f"    mcpkit's sequential call: {cpu:.0f} us client CPU + {srv:.0f} us server "
                    f"CPU + {rest:.0f} us neither (pipe wake-ups, scheduling)"
                )
    return rows


def run(
    opts: Options,
    *,
    loops: tuple[str, ...] = LOOPS,
    eras: tuple[str, ...] = ERAS,
    http: bool = True,
) -> list[Row]:
    reps = opts.reps(5, 1)
    emit(f"== client: tools/call echo round trips (reps={reps}; server on uvloop)")
    script = str(SERVERS / "mcpkit_stdio.py")
    rows: list[Row] = []
    for era in eras:
        for loop in loops:
            rows += rows_for("stdio", loop, era, measure("stdio", script, opts, reps, loop, era))
    if http:
        with http_server(opts) as url:
            era = ERAS[0]
            rows += rows_for(
                "http", "asyncio", era, measure("http", url, opts, reps, "asyncio", era)
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(parser)
    parser.add_argument("--loops", default=",".join(LOOPS), help="event loops for the clients")
    parser.add_argument("--eras", default=",".join(ERAS), help="revisions spoken over stdio")
    parser.add_argument("--no-http", action="store_true", help="stdio only")
    args = parser.parse_args(argv)
    loops = tuple(x for x in args.loops.split(",") if x)
    eras = tuple(x for x in args.eras.split(",") if x)
    if set(loops) - set(LOOPS) or set(eras) - set(ERAS):
        parser.error(f"--loops from {LOOPS}, --eras from {ERAS}")
    rows = run(options_from(args), loops=loops, eras=eras, http=not args.no_http)
    emit()
    emit(summary_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
