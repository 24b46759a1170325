"""Part "client": sequential ``tools/call`` round trips seen from the client side.

The same mcpkit server (``servers/mcpkit_stdio.py`` over stdio; ``servers/http_server.py
mcpkit stateful`` on uvicorn over Streamable HTTP, JSON answers) is driven by three clients,
each in its own process (``client_driver.py``): mcpkit's ``Client``, the official Python
SDK's ``mcp.Client``, and the baseline, a hand-written asyncio JSON-RPC exchange (pipes +
orjson, or one httpx POST per call) that does nothing else. They are measured in rotation,
a fresh process per repetition, spawning and connecting off the clock.

Two figures per transport, medians over every timed batch:
* wall-clock microseconds per round trip: what a caller waits;
* the client process's own CPU microseconds per round trip: the client's cost alone (the
  server is another process), which other work on the machine cannot inflate.

The target (the client issue): mcpkit's client at least 10x faster per stdio round trip
than the official SDK's client. Both rows show ``SDK / mcpkit``; the wall-clock one also
contains the server's own time and the pipe wake-ups, which no client can remove (the
baseline shows that floor).

Run alone: ``python benchmarks/client_roundtrip.py [--quick] [--reps N] [--pin] [--uvloop]``
(``--uvloop``: every client on uvloop instead of asyncio's own loop).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator

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
TARGET_SPEEDUP = 10.0  # SDK time / mcpkit time per stdio round trip
DRIVER_TIMEOUT_S = 300


def drive(
    impl: str, transport: str, target: str, opts: Options, uvloop: bool
) -> dict[str, list[float]]:
    seconds, batches = (0.1, 1) if opts.quick else (0.5, 3)
    argv = [PYTHON, DRIVER, impl, transport, target, "--seconds", str(seconds)]
    argv += ["--batches", str(batches)] + (["--uvloop"] if uvloop else [])
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
    result: dict[str, list[float]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


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


def measure(
    transport: str, target: str, opts: Options, reps: int, uvloop: bool
) -> dict[str, dict[str, list[float]]]:
    """``{impl: {"us": [...], "cpu_us": [...]}}``, every batch of every repetition."""
    got: dict[str, dict[str, list[float]]] = {i: {"us": [], "cpu_us": []} for i in IMPLS}
    for rep in range(reps):
        order = IMPLS[rep % len(IMPLS) :] + IMPLS[: rep % len(IMPLS)]
        for impl in order:
            result = drive(impl, transport, target, opts, uvloop)
            got[impl]["us"].extend(result["us"])
            got[impl]["cpu_us"].extend(result["cpu_us"])
    return got


def rows_for(transport: str, got: dict[str, dict[str, list[float]]]) -> list[Row]:
    rows = []
    for key, what in (("us", "wall"), ("cpu_us", "client CPU")):
        med = {impl: median(got[impl][key]) for impl in IMPLS}
        speedup = med["sdk"] / med["mcpkit"]
        emit(f"  {transport} {what} us per round trip (median [min..max] of batches):")
        for impl in IMPLS:
            emit(f"    {impl:<8} {spread(got[impl][key]):>28}")
        emit(f"    mcpkit is {speedup:.1f}x faster than the SDK client ({what})")
        on_stdio = transport == "stdio"
        rows.append(
            Row(
                metric=f"client {transport} round trip, {what} (SDK/mcpkit {speedup:.1f}x)",
                mcpkit=med["mcpkit"],
                baseline=med["minimal"],
                unit="us",
                baseline_name="bare asyncio client",
                target=f"SDK/mcpkit >= {TARGET_SPEEDUP:.0f}x" if on_stdio else "-",
                ok=(speedup >= TARGET_SPEEDUP) if on_stdio else None,
                sdk=med["sdk"],
            )
        )
    return rows


def run(opts: Options, *, uvloop: bool = False) -> list[Row]:
    reps = opts.reps(5, 1)
    loop = "uvloop" if uvloop else "asyncio"
    emit(f"== client: sequential tools/call echo round trips, clients on {loop} (reps={reps})")
    stdio = measure("stdio", str(SERVERS / "mcpkit_stdio.py"), opts, reps, uvloop)
    rows = rows_for("stdio", stdio)
    with http_server(opts) as url:
        rows += rows_for("http", measure("http", url, opts, reps, uvloop))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(parser)
    parser.add_argument(
        "--uvloop", action="store_true", help="run every client on uvloop instead of asyncio"
    )
    args = parser.parse_args(argv)
    rows = run(options_from(args), uvloop=args.uvloop)
    emit()
    emit(summary_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
