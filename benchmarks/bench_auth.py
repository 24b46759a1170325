"""Part 2c: what protecting a server costs: ``tools/call`` echo throughput with and without auth.

Two processes on identical uvicorn settings (``servers/http_server.py``), the
same echo tool, stateful Streamable HTTP at 16 connections, loaded by wrk in
alternation:

* ``mcpkit`` (the **baseline** here): ``server.http_app(json_response=True)``,
  unprotected;
* ``mcpkit-auth``: the same app with ``auth=ProtectedResource(...,
  verifier=JWTVerifier(...))``. Every request carries ``Authorization: Bearer``
  with an RS256 JWT signed by a key generated for this run (its JWKS handed to
  the server in a file), so every request goes through the bearer check, the
  session-owner check and the scope lookup; the verifier caches the verified
  token, as a deployed server does, so the signature is checked once.

Before the load each server must answer one correct echo (the protected one
must also refuse a request without a token with 401), and every wrk run must
see no non-2xx answer. Target (the authorization issue): protected >= 0.8x the
unprotected server.

Run alone: ``python benchmarks/bench_auth.py [--quick] [--reps N] [--duration S]``.
"""

from __future__ import annotations

import http.client
import shutil
import sys
import tempfile
from pathlib import Path

from _util import (
    Options,
    Row,
    child_env,
    emit,
    free_port,
    jwt_protection,
    median,
    spread,
    stop,
    wait_for_port,
)
from bench_http import (
    Client,
    HTTPFailure,
    Load,
    Target,
    echo_body,
    start_server,
    verify_echo,
    wrk,
)
from bench_stdio import main as _main

CONNECTIONS = 16
TARGET = 0.8


def refused_without_token(target: Target) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", target.port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            echo_body(1),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        resp = conn.getresponse()
        resp.read()
    finally:
        conn.close()
    if resp.status != 401 or "bearer" not in (resp.getheader("www-authenticate") or "").lower():
        raise HTTPFailure(
            f"the protected server answered {resp.status} to a request without a token"
        )


def run(opts: Options) -> list[Row]:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get update && apt-get install -y wrk")
    reps = opts.reps(5)
    emit(
        f"== auth: stateful tools/call echo, unprotected vs ProtectedResource + JWTVerifier "
        f"(RS256, cached), wrk -t1 -c{CONNECTIONS}, {opts.duration} s per run, reps={reps}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="mcpkit-bench-auth-"))
    body = workdir / "echo.json"
    body.write_bytes(echo_body("__ID__"))
    log = workdir / "servers.log"
    plain = start_server("mcpkit", "stateful", opts.server_cpu, log)
    port, env = free_port(), child_env()
    headers = jwt_protection(env, workdir, f"http://127.0.0.1:{port}/mcp")
    protected = start_server("mcpkit-auth", "stateful", opts.server_cpu, log, port=port, env=env)
    # The unprotected server sent the same Authorization header (ignored): how much of
    # the difference is only the bigger request, which any protected server receives.
    plain_hdr = start_server("mcpkit", "stateful", opts.server_cpu, log)
    targets = {"mcpkit": plain, "mcpkit-auth": protected, "mcpkit+header": plain_hdr}
    loads: dict[str, list[Load]] = {name: [] for name in targets}
    failed: dict[str, str] = {}
    try:
        for name, target in targets.items():
            try:
                wait_for_port(target.port, target.proc)
                client = Client(target.port)
                if name == "mcpkit-auth":
                    refused_without_token(target)
                if name != "mcpkit":
                    client.extra_headers = headers
                try:
                    target.session_id = client.initialize()
                    verify_echo(client)
                finally:
                    client.close()
                if not opts.quick:  # warm-up: imports, caches, the verified-token cache
                    wrk(target, CONNECTIONS, 1, body, opts.driver_cpu, headers=_hdrs(name, headers))
            except (HTTPFailure, RuntimeError) as exc:
                failed[name] = str(exc)
                emit(f"  {name}: FAILED before load: {exc}")
        names = [n for n in targets if n not in failed]
        for rep in range(reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                if name in failed:
                    continue
                try:
                    loads[name].append(
                        wrk(
                            targets[name],
                            CONNECTIONS,
                            opts.duration,
                            body,
                            opts.driver_cpu,
                            headers=_hdrs(name, headers),
                        )
                    )
                except HTTPFailure as exc:
                    failed[name] = str(exc)
                    emit(f"  {name}: FAILED under load: {exc}")
    finally:
        for target in targets.values():
            stop(target.proc)
    if failed:
        emit(f"  (server logs: {log})")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    rows: list[Row] = []
    for what, unit, attr in (("req/s", "/s", "rps"), ("req per server CPU-s", "/cpu-s", "per_cpu")):
        med: dict[str, float | None] = {}
        for name in targets:
            values = [getattr(x, attr) for x in loads[name]] if name not in failed else []
            med[name] = median(values) if values else None
            emit(
                f"  c={CONNECTIONS} {name:<12} {spread(values) if values else 'FAILED':>30} {what}"
            )
        ours, base = med["mcpkit-auth"], med["mcpkit"]
        ratio = ours / base if ours and base else None
        rows.append(
            Row(
                metric=f"HTTP stateful echo c={CONNECTIONS}, protected (JWT) {what}",
                mcpkit=ours,
                baseline=base,
                unit=unit,
                baseline_name="mcpkit unprotected",
                target=f">= {TARGET}x",
                ok=(ratio >= TARGET) if ratio is not None else False,
            )
        )
        hdr = med["mcpkit+header"]
        rows.append(
            Row(
                metric=f"  same, against the unprotected server sent the same header {what}",
                mcpkit=ours,
                baseline=hdr,
                unit=unit,
                baseline_name="mcpkit unprotected + header",
                target="-",
                ok=None,
            )
        )
        if attr == "rps" and loads["mcpkit"] and loads["mcpkit-auth"]:
            pairs = [
                a.rps / b.rps for a, b in zip(loads["mcpkit-auth"], loads["mcpkit"], strict=False)
            ]
            emit(f"  ratio protected / unprotected per rep: {spread(pairs)}")
    return rows


def _hdrs(name: str, headers: dict[str, str]) -> dict[str, str]:
    return {} if name == "mcpkit" else headers


if __name__ == "__main__":
    sys.exit(_main(runner=run))
