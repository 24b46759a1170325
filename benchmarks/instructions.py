"""Instructions per request, counted by callgrind: a figure the machine's load cannot move.

Wall-clock A/B runs on a shared 2-core machine swing by 10-20 %, too much to tell
whether a change cost 2 %. Instruction counts do not depend on load: this script
runs one mcpkit server under ``valgrind --tool=callgrind`` (the whole process,
instrumented from the start), sends it a fixed number of sequential ``tools/call``
echo requests from a blocking driver, and reads the total from callgrind's output.
It does that twice, with ``N1`` and ``N2`` requests, and reports
``(total(N2) - total(N1)) / (N2 - N1)``: start-up, imports and shutdown cancel
out, so what is left is the cost of one request once the server is warm. String
hashing is randomised per process, which moves dict probing and so the count by
up to ~1 % between runs; each run therefore fixes ``PYTHONHASHSEED``, and the
figure is the median over a few seeds (``--seeds``, default 1,2,3), each of which
repeats exactly. The median also drops the rare run in which wall-clock timers
fire differently under valgrind's ~50x slowdown (handshake-era stateless HTTP
starts its disconnect watcher for a request still running after 5 ms); the
script prints every seed's figure so such a run shows.

    python benchmarks/instructions.py                        # all four paths
    python benchmarks/instructions.py --paths stdio,http-2026 --n1 200 --n2 1200

Paths: ``stdio`` (``servers/mcpkit_stdio.py``, 2025-11-25 session), ``stdio-otel``
and ``stdio-otel-sdk`` (the same traced by ``otel_middleware``, with no tracer
provider and with the SDK's exporting to nowhere: ``servers/mcpkit_stdio_otel.py``;
``stdio-mw``: a middleware that only calls ``call_next``, the chain's own share;
``stdio-ratelimit``, ``stdio-cache``, ``stdio-log``, ``stdio-log-off``, ``stdio-mask``,
``stdio-size``: one built-in middleware of :mod:`mcpkit.middleware` each, and
``stdio-state``: a tool that reads and writes ``ctx.state``, against ``stdio-ctx``, one
that takes a ``Context`` and leaves it; ``stdio-depends``, ``stdio-depends-yield``: a tool
with one ``Depends`` parameter, a plain function or a generator, against ``stdio``:
``servers/mcpkit_stdio_mw.py``),
``stdio-auto-api``, ``stdio-auto-sdk``, ``stdio-auto-sdk-metrics``: no middleware given,
the automatic telemetry with OpenTelemetry imported and no provider, with the SDK's
tracer provider, and with its meter provider too; ``http-auto-sdk``: ``http-stateful``
with the SDK's tracer provider installed; ``stdio-auto-sdk-batch``: the
tracer provider with ``BatchSpanProcessor``; ``stdio-sdk-floor``: a middleware that
only opens the SDK's span, fixed attributes, against ``stdio-mw``; ``http-auto-sdk-batch``:
``http-stateful`` with the SDK's batch processor; ``http-2026-auto-sdk``: ``http-2026`` with
the SDK's tracer provider),
``http-proxy`` (``http-stateful`` through a proxy: the proxy process, ``mcpkit-proxy``
of ``servers/http_server.py``, is the one counted; its upstream, ``mcpkit-counted``,
runs uninstrumented: compare with ``http-stateful`` for issue 24's CPU ratio;
``http-proxy-floor``: the same with ``mcpkit-floor`` in the proxy's place, a tool making
one bare HTTP round trip to that upstream, the least any proxy in Python does),
``http-stateful`` and ``http-stateless`` (``servers/http_server.py``, uvicorn with
uvloop and httptools, JSON answers, handshake era with and without a session),
``http-2026`` (the same stateful app answering 2026-07-28 requests: envelope in
``_meta``, ``Mcp-Method``/``Mcp-Name`` headers). Each HTTP request goes on one
keep-alive connection and is answered before the next is sent, so the count also
holds the event loop's own work per request. ``http-auth`` is ``http-stateful``
protected by ``ProtectedResource`` with a ``JWTVerifier`` (RS256, keys handed to the
server in a file, the verified token cached as deployed), every request carrying
its bearer token: compare it with ``http-stateful`` for what protection costs, and
with ``http-bearer`` (the unprotected server sent the same header, which it
ignores) for what is mcpkit's own part of that cost rather than the bigger request.

To compare two commits, check the older one out in a second worktree and run the
script once with each on ``PYTHONPATH`` (``git worktree add /tmp/before <commit>``;
``PYTHONPATH=/tmp/before/src python benchmarks/instructions.py``). The figure also
reports ``start-up``: the whole process for an ``initialize`` and no calls, which
covers the imports. Needs valgrind (``apt-get install valgrind``); a request costs
~50x its normal time under it, so the default run takes a few minutes.
"""

from __future__ import annotations

import argparse
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import orjson
from _util import PROTOCOL_VERSION, SERVERS, child_env, free_port, jwt_protection
from bench_http import INITIALIZE, INITIALIZED, TEXT

PATHS = (
    "stdio",
    "http-stateful",
    "http-stateless",
    "http-2026",
    "http-auth",
    "http-bearer",
    "stdio-mw",
    "stdio-otel",
    "stdio-otel-sdk",
    "stdio-ratelimit",
    "stdio-cache",
    "stdio-log",
    "stdio-log-off",
    "stdio-mask",
    "stdio-size",
    "stdio-state",
    "stdio-ctx",
    "stdio-hooks",
    "stdio-hooks-list",
    "stdio-none-list",
    "stdio-depends",
    "stdio-depends-yield",
    "stdio-many",
    "stdio-many-tagged",
    "stdio-many-list",
    "stdio-many-tagged-list",
    "stdio-auto-api",
    "stdio-auto-sdk",
    "stdio-auto-sdk-metrics",
    "stdio-auto-sdk-batch",
    "stdio-sdk-floor",
    "http-auto-sdk",
    "http-proxy",
    "http-proxy-floor",
    "http-auto-sdk-batch",
    "http-2026-auto-sdk",
)
# The stdio paths: the server script and its arguments.
STDIO: dict[str, list[str]] = {
    "stdio": [str(SERVERS / "mcpkit_stdio.py")],
    "stdio-mw": [str(SERVERS / "mcpkit_stdio_otel.py"), "pass"],
    "stdio-otel": [str(SERVERS / "mcpkit_stdio_otel.py"), "api"],
    "stdio-otel-sdk": [str(SERVERS / "mcpkit_stdio_otel.py"), "sdk"],
    **{
        f"stdio-{variant}": [str(SERVERS / "mcpkit_stdio_mw.py"), variant]
        for variant in (
            "ratelimit",
            "cache",
            "log",
            "log-off",
            "mask",
            "size",
            "state",
            "ctx",
            "depends",
            "depends-yield",
        )
    },
    # Issue 20 (typed hooks): a Hooks watching tools/call only; "-list": tools/list, which
    # it does not watch, against the same server without middleware.
    "stdio-hooks": [str(SERVERS / "mcpkit_stdio_mw.py"), "hooks"],
    "stdio-hooks-list": [str(SERVERS / "mcpkit_stdio_mw.py"), "hooks"],
    "stdio-none-list": [str(SERVERS / "mcpkit_stdio_mw.py"), "none"],
    # Issue 20: 5,000 tools with 10 % disabled by tag, against the 4,500 enabled alone;
    # "-list" paths send tools/list instead of the echo call (use small --n1/--n2).
    "stdio-many": [str(SERVERS / "mcpkit_stdio_many.py"), "enabled"],
    "stdio-many-tagged": [str(SERVERS / "mcpkit_stdio_many.py"), "tagged"],
    "stdio-many-list": [str(SERVERS / "mcpkit_stdio_many.py"), "enabled"],
    "stdio-many-tagged-list": [str(SERVERS / "mcpkit_stdio_many.py"), "tagged"],
    "stdio-auto-api": [str(SERVERS / "mcpkit_stdio_otel.py"), "auto-api"],
    "stdio-auto-sdk": [str(SERVERS / "mcpkit_stdio_otel.py"), "auto-sdk"],
    "stdio-auto-sdk-metrics": [str(SERVERS / "mcpkit_stdio_otel.py"), "auto-sdk-metrics"],
    "stdio-auto-sdk-batch": [str(SERVERS / "mcpkit_stdio_otel.py"), "auto-sdk-batch"],
    "stdio-sdk-floor": [str(SERVERS / "mcpkit_stdio_otel.py"), "floor"],
}
ENVELOPE_2026 = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpkit-bench", "version": "0"},
}


def echo(rid: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": TEXT}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def server_env(seed: int) -> dict[str, str]:
    env = child_env()
    env["PYTHONHASHSEED"] = str(seed)
    return env


def callgrind(out: Path) -> list[str]:
    # sys.executable is the real interpreter, not a shell shim that valgrind would trace.
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]


def total(out: Path) -> int:
    """The process's instruction count from a callgrind output file."""
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def drive_stdio(out: Path, n: int, seed: int, path: str = "stdio") -> int:
    proc = subprocess.Popen(
        [*callgrind(out), *STDIO[path]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(seed),
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def ask(msg: dict[str, Any]) -> bytes:
        stdin.write(orjson.dumps(msg) + b"\n")
        stdin.flush()
        return stdout.readline()

    try:
        if b'"result"' not in ask(INITIALIZE):
            raise RuntimeError("initialize failed")
        stdin.write(orjson.dumps(INITIALIZED) + b"\n")
        listing = path.endswith("-list")
        expected = b'"tools":[' if listing else TEXT.encode()
        for rid in range(1, n + 1):
            msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"} if listing else echo(rid)
            answer = ask(msg)
            if expected not in answer or b'"id":%d' % rid not in answer:
                raise RuntimeError(f"bad answer: {answer[:200]!r}")
        stdin.close()
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return total(out)


class Connection:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file: IO[bytes] = self.sock.makefile("rb")

    def post(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        data = orjson.dumps(body)
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(data)}\r\n"
        ) + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.sock.sendall(head.encode() + b"\r\n" + data)
        status = int(self.file.readline().split()[1])
        fields: dict[str, str] = {}
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            fields[name.strip().lower()] = value.strip()
        if "content-length" in fields:
            return status, fields, self.file.read(int(fields["content-length"]))
        payload = b""  # chunked
        while (size := int(self.file.readline().strip(), 16)) != 0:
            payload += self.file.read(size)
            self.file.readline()
        self.file.readline()
        return status, fields, payload

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def drive_http(out: Path, n: int, path: str, seed: int) -> int:
    port = free_port()
    mode = "stateless" if path == "http-stateless" else "stateful"
    env = server_env(seed)
    impl, auth_headers = "mcpkit", {}
    if "-auto-sdk" in path:
        impl = "mcpkit-otel-sdk-batch" if path.endswith("-batch") else "mcpkit-otel-sdk"
    if path in ("http-auth", "http-bearer"):
        impl = "mcpkit-auth" if path == "http-auth" else "mcpkit"
        auth_headers = jwt_protection(env, out.parent, f"http://127.0.0.1:{port}/mcp")
    upstream: subprocess.Popen[bytes] | None = None
    if path in ("http-proxy", "http-proxy-floor"):
        up_port = free_port()
        upstream = subprocess.Popen(
            [sys.executable, str(SERVERS / "http_server.py"), "mcpkit-counted", mode, str(up_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        impl = "mcpkit-proxy" if path == "http-proxy" else "mcpkit-floor"
        env = {**env, "BENCH_UPSTREAM": f"http://127.0.0.1:{up_port}/mcp"}
    proc = subprocess.Popen(
        [*callgrind(out), str(SERVERS / "http_server.py"), impl, mode, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                conn = Connection(port)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.2)
        meta: dict[str, Any] | None = None
        headers = {"MCP-Protocol-Version": PROTOCOL_VERSION, **auth_headers}
        if path in (
            "http-stateful",
            "http-auth",
            "http-bearer",
            "http-proxy",
            "http-proxy-floor",
        ) or path.startswith("http-auto"):
            _, fields, _ = conn.post(INITIALIZE, headers)
            headers["Mcp-Session-Id"] = fields["mcp-session-id"]
            conn.post(INITIALIZED, headers)
        elif path.startswith("http-2026"):
            headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
            headers["Mcp-Name"] = "echo"
            meta = ENVELOPE_2026
        for rid in range(1, n + 1):
            status, _, body = conn.post(echo(rid, meta), headers)
            if status != 200 or TEXT.encode() not in body:
                raise RuntimeError(f"bad answer {status}: {body[:200]!r}")
        conn.close()
        # uvicorn shuts down on SIGTERM; callgrind writes its output as the process ends.
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        if upstream is not None:
            upstream.terminate()
            upstream.wait(timeout=60)
    return total(out)


def count(path: str, n: int, workdir: Path, seed: int) -> int:
    out = workdir / f"{path}-{n}.out"
    if path in STDIO:
        return drive_stdio(out, n, seed, path)
    return drive_http(out, n, path, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated: {PATHS}")
    parser.add_argument("--n1", type=int, default=200, help="requests in the first run")
    parser.add_argument("--n2", type=int, default=1200, help="requests in the second run")
    parser.add_argument("--seeds", default="1,2,3", help="PYTHONHASHSEED values (median)")
    args = parser.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    unknown = set(paths) - set(PATHS)
    if unknown or args.n2 <= args.n1:
        parser.error(f"unknown paths {sorted(unknown)}" if unknown else "--n2 must exceed --n1")
    import mcpkit

    print(f"mcpkit from {Path(mcpkit.__file__).parent}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for path in paths:
            count(path, 1, workdir, 0)  # unmeasured: writes the .pyc files the runs then read
            per = []
            for seed in seeds:
                low = count(path, args.n1, workdir, seed)
                high = count(path, args.n2, workdir, seed)
                per.append((high - low) / (args.n2 - args.n1))
            each = " ".join(f"{p:,.0f}" for p in per)
            print(f"{path:15} {statistics.median(per):10,.0f} per tools/call (seeds: {each})")
            sys.stdout.flush()
        start = [count("stdio", 0, workdir, seed) for seed in seeds]
        print(f"{'start-up':15} {statistics.median(start):10,.0f} (stdio: initialize, no call)")


if __name__ == "__main__":
    main()
