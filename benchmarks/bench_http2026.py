"""Part 2b: stateless-era (2026-07-28) ``tools/call`` echo throughput over HTTP, driven by wrk.

The same echo tool and uvicorn settings as ``bench_http.py``, at 16
connections, with the request a 2026-07-28 client sends (2026-07-28
basic/transports/streamable-http): headers ``MCP-Protocol-Version:
2026-07-28``, ``Mcp-Method: tools/call`` and ``Mcp-Name: echo``, and the
per-request envelope in ``params._meta`` (protocol version, client
capabilities, client info). No session, no handshake. Measured in one run,
interleaved repetition by repetition:

* ``minimal``: the raw ASGI app (``servers/minimal_asgi.py``) answering the
  very same request bytes (the baseline; it checks none of the headers);
* ``mcpkit 2026``: ``server.http_app(json_response=True)``, the one endpoint
  that serves both eras, answering the 2026-07-28 request (envelope read,
  headers checked against the body, ``resultType`` and server info added);
* ``mcpkit stateful``: the handshake-era stateful path of the same app and
  tool (``initialize`` first, ``Mcp-Session-Id`` on every request);
* ``sdk 2026``: the official SDK's stateless app with the 2026-07-28 request,
  when the installed SDK answers it (otherwise reported as failed, and the
  others still run).

Before any load one request per target must come back as a correct echo result
(for the 2026 targets: ``resultType: complete``, no error), and every wrk run
must report no non-2xx answer and no socket error.

Run alone: ``python benchmarks/bench_http2026.py [--quick] [--reps N] [--duration S]``.
"""

from __future__ import annotations

import http.client
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from _util import Options, Row, emit, median, spread, stop, wait_for_port
from bench_http import (
    TEXT,
    HTTPFailure,
    Load,
    Target,
    echo_body,
    prepare,
    start_server,
    wrk,
)
from bench_stdio import main as _main
from bench_stdio import ratio_row

REVISION = "2026-07-28"
CONNECTIONS = 16
HEADERS_2026 = {"Mcp-Method": "tools/call", "Mcp-Name": "echo"}


def echo_body_2026(rid: int | str) -> bytes:
    """The echo ``tools/call`` with the 2026-07-28 ``_meta`` envelope."""
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": TEXT},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": REVISION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "mcpkit-bench", "version": "0"},
            },
        },
    }
    return orjson.dumps(body).replace(b'"id":0', b'"id":%s' % str(rid).encode(), 1)


@dataclass
class Leg:
    """One measured configuration: a server process and the request sent to it."""

    label: str
    target: Target
    era: str  # "2026" (stateless envelope + headers) or "handshake" (session)
    loads: list[Load] = field(default_factory=list)
    error: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        return HEADERS_2026 if self.era == "2026" else {}

    @property
    def version(self) -> str:
        return REVISION if self.era == "2026" else ""


def verify_2026(leg: Leg) -> None:
    """One 2026-07-28 echo must come back as a real, complete result."""
    conn = http.client.HTTPConnection("127.0.0.1", leg.target.port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            echo_body_2026(7),
            {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": REVISION,
                **HEADERS_2026,
            },
        )
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    if resp.status != 200:
        raise HTTPFailure(f"2026-07-28 tools/call answered {resp.status}: {body[:300]!r}")
    msg: dict[str, Any] = orjson.loads(body)
    result = msg.get("result") or {}
    content = result.get("content") or [{}]
    wrong = msg.get("id") != 7 or result.get("isError") or content[0].get("text") != TEXT
    if leg.target.impl != "minimal" and result.get("resultType") != "complete":
        wrong = True
    if wrong:
        raise HTTPFailure(f"2026-07-28 tools/call echo answer is wrong: {body[:300]!r}")


def run(opts: Options) -> list[Row]:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get update && apt-get install -y wrk")
    reps = opts.reps(5)
    emit(
        f"== http2026: tools/call echo at {REVISION} (stateless envelope + Mcp-* headers), "
        f"wrk -t1 -c{CONNECTIONS}, {opts.duration} s per run, reps={reps}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="mcpkit-bench-http2026-"))
    bodies = {"2026": workdir / "echo2026.json", "handshake": workdir / "echo.json"}
    bodies["2026"].write_bytes(echo_body_2026("__ID__"))
    bodies["handshake"].write_bytes(echo_body("__ID__"))
    log = workdir / "servers.log"
    legs = [
        Leg("minimal", start_server("minimal", "stateless", opts.server_cpu, log), "2026"),
        # The default endpoint (mode "stateful"): both eras at one URL, as deployed.
        Leg("mcpkit 2026", start_server("mcpkit", "stateful", opts.server_cpu, log), "2026"),
        Leg(
            "mcpkit stateful", start_server("mcpkit", "stateful", opts.server_cpu, log), "handshake"
        ),
        Leg("sdk 2026", start_server("sdk", "stateless", opts.server_cpu, log), "2026"),
    ]

    def load(leg: Leg, seconds: int) -> Load:
        return wrk(
            leg.target,
            CONNECTIONS,
            seconds,
            bodies[leg.era],
            opts.driver_cpu,
            protocol_version=leg.version or "2025-11-25",
            headers=leg.headers,
        )

    try:
        live: list[Leg] = []
        for leg in legs:
            try:
                if leg.era == "2026":
                    wait_for_port(leg.target.port, leg.target.proc)
                    verify_2026(leg)
                else:
                    prepare(leg.target)  # initialize + initialized, then one checked echo
                if not opts.quick:  # warm-up: first-request imports, caches, allocator arenas
                    load(leg, 1)
                live.append(leg)
            except (HTTPFailure, RuntimeError) as exc:
                leg.error = str(exc)
                emit(f"  {leg.label}: FAILED before load: {exc}")
        for rep in range(reps):
            order = live[rep % len(live) :] + live[: rep % len(live)] if live else []
            for leg in order:
                if leg.error:
                    continue
                try:
                    leg.loads.append(load(leg, opts.duration))
                except HTTPFailure as exc:
                    leg.error = str(exc)
                    emit(f"  {leg.label}: FAILED under load: {exc}")
    finally:
        for leg in legs:
            stop(leg.target.proc)
    if any(leg.error for leg in legs):
        emit(f"  (server logs: {log})")
    else:
        shutil.rmtree(workdir, ignore_errors=True)

    rows: list[Row] = []
    by_label = {leg.label: leg for leg in legs}
    for what, unit, attr in (("req/s", "/s", "rps"), ("req per server CPU-s", "/cpu-s", "per_cpu")):
        med: dict[str, float | None] = {}
        values: dict[str, list[float]] = {}
        for leg in legs:
            values[leg.label] = [getattr(x, attr) for x in leg.loads] if not leg.error else []
            med[leg.label] = median(values[leg.label]) if values[leg.label] else None
            shown = spread(values[leg.label]) if values[leg.label] else "FAILED"
            emit(f"  c={CONNECTIONS} {leg.label:<16} {shown:>30} {what}")
        rows.append(
            ratio_row(
                f"HTTP {REVISION} echo c={CONNECTIONS} {what}",
                {"mcpkit": med["mcpkit 2026"], "minimal": med["minimal"], "sdk": med["sdk 2026"]},
                unit,
                "raw ASGI",
            )
        )
        ours, stateful = med["mcpkit 2026"], med["mcpkit stateful"]
        rows.append(
            Row(
                metric=f"HTTP {REVISION} vs handshake stateful c={CONNECTIONS} {what}",
                mcpkit=ours,
                baseline=stateful,
                unit=unit,
                baseline_name="mcpkit stateful",
                target="-",
                ok=None,
            )
        )
        if attr == "rps":
            _per_rep_ratios(by_label)
    return rows


def _per_rep_ratios(by_label: dict[str, Leg]) -> None:
    """The spread of the ratios themselves, repetition by repetition (wall-clock req/s)."""
    ours = by_label["mcpkit 2026"].loads
    for other in ("minimal", "mcpkit stateful"):
        theirs = by_label[other].loads
        pairs = [a.rps / b.rps for a, b in zip(ours, theirs, strict=False) if b.rps]
        if pairs:
            emit(f"  ratio mcpkit 2026 / {other:<16} per rep: {spread(pairs)}")


if __name__ == "__main__":
    sys.exit(_main(runner=run))
