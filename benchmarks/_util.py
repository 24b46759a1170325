"""Shared helpers for the benchmark scripts: options, statistics, processes, the summary table.

Every benchmark compares mcpkit with a baseline measured in the same run and
prints the ratio; absolute numbers depend on the machine (2 noisy cores), so
each figure is the median over several repetitions, and the implementations
under comparison are interleaved repetition by repetition so that a slow
moment of the machine hits all of them alike.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
PYTHON = sys.executable

# The protocol revision every driver offers in `initialize`: the newest handshake revision
# that mcpkit, the minimal loop and the official SDK all speak.
PROTOCOL_VERSION = "2025-11-25"


@dataclass(frozen=True)
class Options:
    quick: bool
    reps_given: int | None  # --reps, when given; each part has its own default
    duration: int  # seconds per wrk run
    pin: bool  # server and driver/wrk together on CPU 1 (default: the scheduler decides)

    def reps(self, full: int, quick: int = 1) -> int:
        """Repetitions for a part: ``--reps`` if given, else the part's default."""
        if self.reps_given:
            return self.reps_given
        return quick if self.quick else full

    @property
    def server_cpu(self) -> int | None:
        return 1 if self.pin else None

    @property
    def driver_cpu(self) -> int | None:
        # With --pin the driver (or wrk) shares the server's CPU rather than taking the
        # other one: a wake-up across CPUs costs ~100 us on this kind of VM, more than a
        # whole minimal round trip, so splitting them halves sequential throughput.
        return 1 if self.pin else None


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick", action="store_true", help="tiny run that only proves the scripts work"
    )
    parser.add_argument(
        "--reps", type=int, default=None, help="repetitions per figure (median is reported)"
    )
    parser.add_argument("--duration", type=int, default=None, help="seconds per wrk run (HTTP)")
    parser.add_argument(
        "--pin", action="store_true", help="run servers and the driver/wrk on CPU 1 only (taskset)"
    )


def options_from(args: argparse.Namespace) -> Options:
    quick = bool(args.quick)
    duration = args.duration if args.duration else (1 if quick else 5)
    can_pin = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2
    return Options(quick=quick, reps_given=args.reps, duration=duration, pin=can_pin and args.pin)


# -- results -----------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the summary table.

    ``ratio`` is mcpkit / baseline. ``higher_is_better`` tells which way the
    target reads: throughput targets are ratios (``>= 0.5x``), time and memory
    targets are absolute limits on the mcpkit figure.
    """

    metric: str
    mcpkit: float | None
    baseline: float | None
    unit: str
    baseline_name: str
    target: str
    ok: bool | None
    sdk: float | None = None  # the official SDK's figure, when measured

    @property
    def ratio(self) -> float | None:
        return _ratio(self.mcpkit, self.baseline)

    @property
    def sdk_ratio(self) -> float | None:
        return _ratio(self.sdk, self.baseline)


def _ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or not baseline:
        return None
    return value / baseline


def fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 100:
        text = f"{value:.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}".rstrip()


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    return "\n".join(text.rstrip() for text in out)


def summary_table(rows: Sequence[Row]) -> str:
    body = []
    for r in rows:
        ratio, sdk_ratio = r.ratio, r.sdk_ratio
        sdk = fmt(r.sdk, r.unit) if r.sdk is not None else "-"
        if sdk_ratio is not None:
            sdk += f" ({sdk_ratio:.2f}x)"
        body.append(
            [
                r.metric,
                fmt(r.mcpkit, r.unit),
                f"{fmt(r.baseline, r.unit)} ({r.baseline_name})" if r.baseline is not None else "-",
                f"{ratio:.2f}x" if ratio is not None else "-",
                r.target,
                {True: "ok", False: "NOT OK", None: "-"}[r.ok],
                sdk,
            ]
        )
    headers = ["metric", "mcpkit", "baseline", "ratio", "target", "ok?", "official SDK (ratio)"]
    return table(headers, body)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float]) -> str:
    """``median [min..max]`` for the detail lines."""
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(median(values))} [{fmt(min(values))}..{fmt(max(values))}]"


def emit(text: str = "") -> None:
    print(text, flush=True)


# -- processes ---------------------------------------------------------------------------------


def pinned(argv: Sequence[str], cpu: int | None) -> list[str]:
    """``argv`` run on one CPU (``taskset``), so a server and its load generator do not swap cores."""
    if cpu is None or shutil.which("taskset") is None:
        return list(argv)
    return ["taskset", "-c", str(cpu), *argv]


@contextlib.contextmanager
def affinity(cpu: int | None) -> Iterator[None]:
    """Pin this process (the in-process driver) to ``cpu`` for the duration."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def stop(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """End a server this script started: close its stdin, then SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=0.5),
        ):
            return
        time.sleep(0.05)
    raise RuntimeError(f"server did not listen on {port} within {timeout} s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time consumed so far by process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def child_env() -> dict[str, str]:
    """Environment for measured processes: no debug switches, and bytecode caches allowed.

    An installed package has its ``.pyc`` files; without them every start-up
    would recompile the sources, which no user pays. (This machine sets
    PYTHONDONTWRITEBYTECODE; the first, unmeasured run of each program
    writes the caches.)
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONDEVMODE", None)
    env.pop("PYTHONASYNCIODEBUG", None)
    env.pop("PYTHONTRACEMALLOC", None)
    return env


AUTH_ISSUER = "https://auth.bench.invalid"


def jwt_protection(env: dict[str, str], workdir: Path, resource: str) -> dict[str, str]:
    """Set up ``servers/http_server.py mcpkit-auth`` in ``env`` (a key generated now, its
    JWKS in a file of ``workdir``) and return the request headers with a bearer token
    for ``resource``, good for a day."""
    import time

    from joserfc import jwt
    from joserfc.jwk import RSAKey

    key = RSAKey.generate_key(2048, parameters={"kid": "bench"})
    jwks = workdir / "jwks.json"
    jwks.write_text(json.dumps({"keys": [key.as_dict(private=False)]}))
    env.update(BENCH_JWKS_FILE=str(jwks), BENCH_ISSUER=AUTH_ISSUER, BENCH_RESOURCE=resource)
    now = int(time.time())
    claims = {
        "iss": AUTH_ISSUER,
        "sub": "bench-user",
        "aud": resource,
        "scope": "mcp:read mcp:write",
        "iat": now,
        "exp": now + 86400,
    }
    token = jwt.encode({"alg": "RS256", "kid": "bench"}, claims, key)
    return {"Authorization": f"Bearer {token}"}
