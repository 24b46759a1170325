"""Part 2: Streamable HTTP ``tools/call`` echo throughput, driven by wrk.

Three apps on identical uvicorn settings (``servers/http_server.py``: one
worker, uvloop, httptools, no access log), each in its own process (all
started first and idle while another is measured; with ``--pin`` each server
and wrk share CPU 1):

* ``minimal``: a raw ASGI app that parses the body with orjson and answers
  the echo (``servers/minimal_asgi.py``; the baseline);
* ``mcpkit``: ``server.http_app(stateless=..., json_response=True)``;
* ``sdk``: the official SDK's ``streamable_http_app(stateless_http=...,
  json_response=True)``.

Each is measured stateless and stateful (one session, created by
``initialize`` + ``notifications/initialized`` before the load, its
``Mcp-Session-Id`` sent on every request) at 1 and 16 connections. Before any
load a single request must come back as a correct echo result, and every wrk
run must report no non-2xx answer and no socket error, so a fast error
cannot pass for throughput. The load generator is wrk (C), never Python.

Run alone: ``python benchmarks/bench_http.py [--quick] [--reps N] [--duration S]``.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from _util import (
    HERE,
    PROTOCOL_VERSION,
    PYTHON,
    SERVERS,
    Options,
    Row,
    child_env,
    cpu_seconds,
    emit,
    free_port,
    median,
    pinned,
    spread,
    stop,
    wait_for_port,
)
from bench_stdio import main as _main
from bench_stdio import ratio_row

IMPLS = ("minimal", "mcpkit", "sdk")
MODES = ("stateless", "stateful")
CONCURRENCY = (1, 16)
TARGET_RATIO = 0.5
LUA = HERE / "wrk" / "post.lua"
TEXT = "hello from the bench"  # 20 bytes

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcpkit-bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def echo_body(rid: int | str) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": TEXT}},
    }
    return orjson.dumps(body).replace(b'"id":0', b'"id":%s' % str(rid).encode(), 1)


class HTTPFailure(RuntimeError):
    """A server answered wrongly, so its throughput would be meaningless."""


# -- a small blocking client for the set-up requests (not for the load) ----------------------


class Client:
    """Keep-alive HTTP/1.1 connection to one MCP endpoint."""

    def __init__(self, port: int, path: str = "/mcp") -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.path = path
        self.session_id: str | None = None
        self.extra_headers: dict[str, str] = {}  # e.g. Authorization (bench_auth.py)

    def post(self, message: Any, *, raw: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        headers.update(self.extra_headers)
        self.conn.request(
            "POST", self.path, raw if raw is not None else orjson.dumps(message), headers
        )
        resp = self.conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body

    def initialize(self) -> str:
        """Open a session (initialize + initialized); returns its id."""
        self.session_id = None
        status, headers, body = self.post(INITIALIZE)
        if status != 200 or "result" not in _json(body, headers):
            raise HTTPFailure(f"initialize answered {status}: {body[:200]!r}")
        sid = headers.get("mcp-session-id")
        if not sid:
            raise HTTPFailure("initialize answered without an Mcp-Session-Id")
        self.session_id = sid
        status, _, body = self.post(INITIALIZED)
        if status not in (200, 202):
            raise HTTPFailure(f"notifications/initialized answered {status}: {body[:200]!r}")
        return sid

    def close(self) -> None:
        self.conn.close()


def _json(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    if headers.get("content-type", "").startswith("text/event-stream"):
        # Take the last data line of the stream (the response follows any notifications).
        data = [
            ln[5:].strip() for ln in body.splitlines() if ln.startswith(b"data:") and ln[5:].strip()
        ]
        body = data[-1] if data else b"{}"
    msg: dict[str, Any] = orjson.loads(body)
    return msg


def verify_echo(client: Client) -> None:
    status, headers, body = client.post(None, raw=echo_body(7))
    if status != 200:
        raise HTTPFailure(f"tools/call answered {status}: {body[:200]!r}")
    msg = _json(body, headers)
    result = msg.get("result") or {}
    content = result.get("content") or [{}]
    if msg.get("id") != 7 or result.get("isError") or content[0].get("text") != TEXT:
        raise HTTPFailure(f"tools/call echo answer is wrong: {body[:300]!r}")


# -- servers -----------------------------------------------------------------------------------


@dataclass
class Target:
    impl: str
    mode: str
    port: int
    proc: subprocess.Popen[bytes]
    session_id: str | None = None
    error: str | None = None
    loads: dict[int, list[Load]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.impl}/{self.mode}"


def start_server(
    impl: str,
    mode: str,
    cpu: int | None,
    log: Path,
    *,
    port: int | None = None,
    env: dict[str, str] | None = None,
) -> Target:
    port = free_port() if port is None else port
    with log.open("ab") as err:
        proc = subprocess.Popen(
            pinned([PYTHON, str(SERVERS / "http_server.py"), impl, mode, str(port)], cpu),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=child_env() if env is None else env,
        )
    return Target(impl, mode, port, proc)


def prepare(target: Target) -> None:
    """Wait for the server, open the session (stateful), and check one echo."""
    wait_for_port(target.port, target.proc)
    client = Client(target.port)
    try:
        if target.mode == "stateful":
            target.session_id = client.initialize()
        verify_echo(client)
    finally:
        client.close()


# -- wrk ---------------------------------------------------------------------------------------

_RESULT = re.compile(rb"BENCH_RESULT (.*)")


@dataclass(frozen=True)
class Load:
    rps: float  # requests per second of wall time
    per_cpu: float  # requests per second of the server process's CPU time
    requests: int = 0  # answers wrk counted
    server_cpu: float = 0.0  # CPU seconds the server process(es) spent meanwhile


def wrk(
    target: Target,
    connections: int,
    seconds: int,
    body_file: Path,
    cpu: int | None,
    *,
    protocol_version: str = PROTOCOL_VERSION,
    headers: dict[str, str] | None = None,
    pids: Sequence[int] | None = None,
) -> Load:
    """One wrk run (raises if any answer was not 2xx or a socket failed).

    The CPU counted is ``target``'s process's, or the sum over ``pids`` when given
    (several server processes behind one address).
    """
    env = dict(os.environ)
    env["BENCH_BODY_FILE"] = str(body_file)
    env["BENCH_PROTOCOL_VERSION"] = protocol_version
    env["BENCH_HEADERS"] = "\n".join(f"{k}: {v}" for k, v in (headers or {}).items())
    env["BENCH_SESSION_ID"] = target.session_id or ""
    argv = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        f"http://127.0.0.1:{target.port}/mcp",
    ]
    counted = [target.proc.pid] if pids is None else list(pids)
    cpu_before = sum(map(cpu_seconds, counted))
    proc = subprocess.run(pinned(argv, cpu), capture_output=True, env=env, timeout=seconds + 60)
    server_cpu = sum(map(cpu_seconds, counted)) - cpu_before
    found = _RESULT.search(proc.stdout)
    if proc.returncode != 0 or found is None:
        raise HTTPFailure(
            f"wrk failed ({proc.returncode}): {proc.stdout[-500:]!r} {proc.stderr[-500:]!r}"
        )
    fields = {k: int(v) for k, v in (kv.split("=") for kv in found.group(1).decode().split())}
    bad = {k: v for k, v in fields.items() if k.endswith(("errors", "timeouts")) and v}
    if bad or fields["requests"] == 0:
        raise HTTPFailure(
            f"{target.name} c={connections}: wrk saw errors {bad} in {fields['requests']} requests"
        )
    requests = fields["requests"]
    return Load(
        requests / (fields["duration_us"] / 1e6),
        requests / server_cpu if server_cpu else 0.0,
        requests,
        server_cpu,
    )


def run(opts: Options) -> list[Row]:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get update && apt-get install -y wrk")
    reps = opts.reps(3)
    emit(
        f"== http: tools/call echo, wrk -t1, {opts.duration} s per run, reps={reps}, "
        f"server cpu={opts.server_cpu} wrk cpu={opts.driver_cpu}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="mcpkit-bench-http-"))
    body_file = workdir / "echo.json"
    body_file.write_bytes(echo_body("__ID__"))
    log = workdir / "servers.log"
    targets = [start_server(i, m, opts.server_cpu, log) for m in MODES for i in IMPLS]
    try:
        live: list[Target] = []
        for t in targets:
            try:
                prepare(t)
                t.loads = {c: [] for c in CONCURRENCY}
                if not opts.quick:  # warm-up: first-request imports, caches, allocator arenas
                    wrk(t, CONCURRENCY[-1], 1, body_file, opts.driver_cpu)
                live.append(t)
            except (HTTPFailure, RuntimeError) as exc:
                t.error = str(exc)
                emit(f"  {t.name}: FAILED before load: {exc}")
        for rep in range(reps):
            order = live[rep % len(live) :] + live[: rep % len(live)] if live else []
            for t in order:
                for c in CONCURRENCY:
                    if t.error:
                        continue
                    try:
                        t.loads[c].append(wrk(t, c, opts.duration, body_file, opts.driver_cpu))
                    except HTTPFailure as exc:
                        t.error = str(exc)
                        emit(f"  {t.name}: FAILED under load: {exc}")
    finally:
        for t in targets:
            stop(t.proc)
    if any(t.error for t in targets):
        emit(f"  (server logs: {log})")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    rows: list[Row] = []
    by_key = {(t.impl, t.mode): t for t in targets}
    for what, unit, attr in (("req/s", "/s", "rps"), ("req per server CPU-s", "/cpu-s", "per_cpu")):
        for mode in MODES:
            for c in CONCURRENCY:
                med: dict[str, float | None] = {}
                for impl in IMPLS:
                    t = by_key[(impl, mode)]
                    loads = t.loads.get(c, []) if not t.error else []
                    values: list[float] = [getattr(x, attr) for x in loads]
                    med[impl] = median(values) if values else None
                    shown = spread(values) if values else "FAILED"
                    emit(f"  {mode:<9} c={c:<2} {impl:<8} {shown:>30} {what}")
                rows.append(ratio_row(f"HTTP echo {mode} c={c} {what}", med, unit, "raw ASGI"))
    return rows


if __name__ == "__main__":
    sys.exit(_main(runner=run))
