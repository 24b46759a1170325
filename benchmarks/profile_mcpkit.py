"""Where mcpkit spends its time: profiles of the benchmarked paths.

    python benchmarks/profile_mcpkit.py stdio     # the stdio server under cProfile, echo load
    python benchmarks/profile_mcpkit.py http      # the uvicorn + mcpkit server under cProfile, wrk load
    python benchmarks/profile_mcpkit.py startup   # building the stdio server script: imports and set-up
    python benchmarks/profile_mcpkit.py layers    # µs per tools/call at each layer, in process
    python benchmarks/profile_mcpkit.py http --py-spy   # sample with py-spy instead (pip install py-spy)
    python benchmarks/profile_mcpkit.py stdio --py-spy
    python benchmarks/profile_mcpkit.py http --mode stateful --store redis --response sse
                                                  # mcpkit with RedisStore (a redis-server started here)

cProfile slows Python code down several times, so read its output for the
*shares* of time (which functions dominate), not for speeds. py-spy samples
without slowing the target and also sees time in C code (orjson, httptools,
uvloop); its report lists the functions most often on the CPU ("self") and
the mcpkit frames most often on the stack ("inclusive").
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import pstats
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _util import PROTOCOL_VERSION, PYTHON, SERVERS, child_env, emit, free_port, stop, wait_for_port
from bench_http import Client, echo_body, prepare, verify_echo, wrk
from stdio_client import StdioPeer, echo_batch, echo_request


def print_stats(path: Path, top: int) -> None:
    stats = pstats.Stats(str(path))
    by_package(stats)
    stats.strip_dirs()
    for key in ("tottime", "cumulative"):
        emit(f"--- top {top} by {key}")
        stats.sort_stats(key).print_stats(top)


def profile_stdio(work: Path, top: int, small: int, large: int, py_spy: bool) -> None:
    out = work / "stdio.prof"
    raw = work / "py-spy.txt"
    script = str(SERVERS / "mcpkit_stdio.py")
    argv = [PYTHON, script] if py_spy else [PYTHON, "-m", "cProfile", "-o", str(out), script]
    peer = StdioPeer(argv, timeout=120)
    how = "under py-spy" if py_spy else "under cProfile"
    sampler = None
    try:
        peer.handshake()
        if py_spy:
            sampler = _py_spy(peer.proc.pid, raw, None)
        text = "x" * 20
        elapsed = echo_batch(peer, [echo_request(10 + i, text) for i in range(small)], 10, text)
        emit(f"{small} small round trips in {elapsed:.2f} s {how}")
        if not py_spy:  # py-spy's shares are for the 20-byte path alone
            text = "y" * (1 << 20)
            reqs = [echo_request(100_000 + i, text) for i in range(large)]
            elapsed = echo_batch(peer, reqs, 100_000, text)
            emit(f"{large} 1 MB round trips in {elapsed:.2f} s {how}")
    finally:
        if sampler is not None:
            sampler.send_signal(signal.SIGINT)  # py-spy writes what it has on SIGINT
            sampler.wait(30)
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()  # EOF: the server exits normally and cProfile writes its file
        peer.proc.wait(30)
    if py_spy:
        summarize_collapsed(raw, top)
    else:
        print_stats(out, top)


def _py_spy(pid: int, raw: Path, seconds: int | None) -> subprocess.Popen[bytes]:
    """Start sampling ``pid`` into ``raw`` (collapsed stacks); stops after ``seconds`` or SIGINT."""
    argv = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "-o", str(raw)]
    argv += ["--rate", "200", "--nonblocking"]
    if seconds is not None:
        argv += ["--duration", str(seconds)]
    sampler = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # let it attach
    return sampler


_PACKAGE = re.compile(r"site-packages/([A-Za-z_][A-Za-z0-9_]*)|/(mcpkit|asyncio)/|/servers/")


def by_package(stats: pstats.Stats) -> None:
    """Own time per package (redis-py, mcpkit, uvicorn, asyncio, ...): whose code the CPU ran."""
    own: collections.Counter[str] = collections.Counter()
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _, func), (_, _, tottime, _, _) in raw.items():
        found = _PACKAGE.search(filename)
        if found:
            name = found.group(1) or found.group(2) or "bench server"
        elif filename == "~":
            name = "built-ins (C): " + func.split(" of ")[-1].strip("<>' ").split("'")[0][:40]
        else:
            name = "other Python (stdlib)"
        own[name] += tottime
    total = sum(own.values()) or 1.0
    emit("--- own time by package (cProfile)")
    for name, seconds in own.most_common(15):
        emit(f"  {100 * seconds / total:5.1f}%  {name}")


def _http_server(
    argv_prefix: list[str],
    mode: str,
    port: int,
    log: Path,
    impl: str = "mcpkit",
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        return subprocess.Popen(
            [*argv_prefix, str(SERVERS / "http_server.py"), impl, mode, str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env or child_env(),
        )


def profile_http(
    work: Path,
    top: int,
    mode: str,
    seconds: int,
    py_spy: bool,
    store: str = "none",
    response: str = "json",
) -> None:
    from bench_http import Target

    body = work / "echo.json"
    body.write_bytes(echo_body("__ID__"))
    port = free_port()
    out = work / "http.prof"
    prefix = [PYTHON] if py_spy else [PYTHON, "-m", "cProfile", "-o", str(out)]
    impl, env, redis = "mcpkit", child_env(), None
    if store != "none":  # bench_cluster.py's servers: MCPServer(store=...), SSE or JSON answers
        impl, env["BENCH_RESPONSE"] = f"mcpkit-{store}", response
        if store == "redis":
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from redis_server import RedisServer

            redis = RedisServer(work)
            redis.start()
            env["BENCH_REDIS_URL"] = redis.url
    proc = _http_server(prefix, mode, port, work / "server.log", impl, env)
    target = Target("mcpkit", mode, port, proc)
    try:
        wait_for_port(port, proc, timeout=60)
        prepare(target)
        raw = work / "py-spy.txt"
        sampler = _py_spy(proc.pid, raw, seconds) if py_spy else None
        rps = wrk(target, 16, seconds, body, None).rps
        emit(
            f"mcpkit/{mode}: {rps:,.0f} req/s at 16 connections{' under cProfile' if not py_spy else ''}"
        )
        client = Client(port)
        if target.session_id:
            client.session_id = target.session_id
        verify_echo(client)
        client.close()
        if sampler is not None:
            sampler.wait(seconds + 30)
    finally:
        proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly; cProfile then writes
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            stop(proc)
        if redis is not None:
            redis.stop()
    if py_spy:
        summarize_collapsed(raw, top)
    else:
        print_stats(out, top)


_LINE = re.compile(r":\d+\)$")


def summarize_collapsed(path: Path, top: int) -> None:
    """Self and inclusive sample counts per function from py-spy's collapsed stacks.

    Each line is ``frame;frame;...;frame count`` with frames like
    ``func (path/file.py:123)``; line numbers are dropped so that a function's
    samples add up.
    """
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = [_LINE.sub(")", f) for f in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            if "mcpkit" in frame or "http_server.py" in frame:
                inclusive[frame] += count
    emit(f"--- {total} samples; top {top} functions on the CPU (self)")
    for frame, count in own.most_common(top):
        emit(f"  {100 * count / total:5.1f}%  {frame}")
    emit(f"--- top {top} mcpkit frames on the stack (inclusive)")
    for frame, count in inclusive.most_common(top):
        emit(f"  {100 * count / total:5.1f}%  {frame}")


def profile_startup(work: Path, top: int) -> None:
    """The stdio server from spawn to its ``tools/list`` answer: imports, then cProfile."""
    script = str(SERVERS / "mcpkit_stdio.py")
    log = work / "importtime.txt"
    with log.open("wb") as err:
        peer = StdioPeer([PYTHON, "-X", "importtime", script], stderr=err)
        try:
            peer.handshake()
            peer.list_tools()
        finally:
            peer.close()
    rows: list[tuple[int, int, str]] = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            fields = line[len("import time:") :].split("|")
            rows.append((int(fields[0]), int(fields[1]), fields[2].rstrip()))
    emit(f"--- top {top} imports by self time (-X importtime), µs self / cumulative")
    for own, cumulative, name in sorted(rows, reverse=True)[:top]:
        emit(f"  {own:8d} {cumulative:9d}  {name.strip()}")
    emit(f"--- top {top} top-level imports by cumulative time, µs")
    for _own, cumulative, name in sorted(
        (r for r in rows if not r[2].startswith("  ")), key=lambda r: -r[1]
    )[:top]:
        emit(f"  {cumulative:9d}  {name.strip()}")
    out = work / "startup.prof"
    peer = StdioPeer([PYTHON, "-m", "cProfile", "-o", str(out), script])
    try:
        start = time.perf_counter()
        peer.handshake()
        peer.list_tools()
        emit(
            f"spawn -> tools/list answered under cProfile: {(time.perf_counter() - start) * 1000:.0f} ms"
        )
    finally:
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()
        peer.proc.wait(30)
    print_stats(out, top)


def _per_call_us(fn: Callable[[], Awaitable[object]], n: int, reps: int) -> float:
    """Median µs per ``await fn()`` over ``reps`` loops of ``n`` calls (after a warm-up)."""

    async def loop(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            await fn()
        return time.perf_counter() - start

    async def measure() -> float:
        await loop(min(n, 500))
        return statistics.median([await loop(n) for _ in range(reps)]) / n * 1e6

    return asyncio.run(measure())


def profile_layers(n: int, reps: int) -> None:
    """The cost of one echo ``tools/call`` at each layer of mcpkit's HTTP path, in process.

    No sockets, no server, no profiler: each layer is awaited in a tight loop,
    so the differences between lines are what that layer adds. The raw ASGI
    baseline on the same fake ``receive``/``send`` shows the floor.
    """
    import orjson

    sys.path.insert(0, str(SERVERS))
    from http_server import build

    from mcpkit.server.session import Request, ServerSession

    body = echo_body(7)
    msg = orjson.loads(body)
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", PROTOCOL_VERSION.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    scope: dict[str, Any] = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    request_event = {"type": "http.request", "body": body, "more_body": False}
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return request_event

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            statuses.append(event["status"])

    def call(app: Any, app_scope: dict[str, Any]) -> Callable[[], Awaitable[object]]:
        return lambda: app(app_scope, receive, send)

    minimal = build("minimal", "stateless")
    stateless = build("mcpkit", "stateless")
    stateful = build("mcpkit", "stateful")
    server = stateless.server
    sid = _open_session(stateful, receive, send)
    stateful_scope = {**scope, "headers": [*headers, (b"mcp-session-id", sid.encode())]}
    tool = server.tools.get("echo")
    assert tool is not None
    session = server.create_session(stateless=True, revision=PROTOCOL_VERSION)
    arguments = msg["params"]["arguments"]

    async def _drop(message: dict[str, Any]) -> None:
        return None

    async def handle_fresh_session() -> object:
        fresh = server.create_session(stateless=True, revision=PROTOCOL_VERSION)
        return await fresh.serve(msg, _drop)

    async def tool_run() -> object:
        return await tool.run(arguments, None)

    async def validate_only() -> object:
        return tool._validate(dict(arguments))

    async def orjson_only() -> object:
        return orjson.dumps(orjson.loads(body))

    async def session_init() -> object:
        return ServerSession(server, stateless=True, revision=PROTOCOL_VERSION)

    async def request_init() -> object:
        return Request(session, msg, _drop, None)

    layers: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("raw ASGI baseline app (minimal_asgi)", call(minimal, scope)),
        ("mcpkit app, stateless", call(stateless, scope)),
        ("mcpkit app, stateful (session lookup)", call(stateful, stateful_scope)),
        ("  create_session + session.serve", handle_fresh_session),
        ("  session.serve (reused session)", lambda: session.serve(msg, _drop)),
        ("  tool.run (validate, call, to_result)", tool_run),
        ("  argument validation (pydantic)", validate_only),
        ("  ServerSession(...) alone", session_init),
        ("  Request(...) alone", request_init),
        ("  orjson loads + dumps of the message", orjson_only),
    ]
    emit(f"--- µs per echo tools/call, median of {reps} loops of {n} (lower is better)")
    for label, fn in layers:
        statuses.clear()
        us = _per_call_us(fn, n, reps)
        if statuses and set(statuses) != {200}:
            raise RuntimeError(f"{label}: answered {sorted(set(statuses))}")
        emit(f"  {us:8.2f}  {label}")
    # The transport alone: the same app with the session's work replaced by a canned answer.
    canned = orjson.loads(
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}'
    )

    async def canned_answer(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return canned  # type: ignore[no-any-return]

    original = ServerSession.serve
    ServerSession.serve = canned_answer  # type: ignore[method-assign]
    try:
        for label, fn in (
            ("mcpkit app, stateless, session stubbed (transport only)", call(stateless, scope)),
            (
                "mcpkit app, stateful, session stubbed (transport only)",
                call(stateful, stateful_scope),
            ),
        ):
            emit(f"  {_per_call_us(fn, n, reps):8.2f}  {label}")
    finally:
        ServerSession.serve = original  # type: ignore[method-assign]


def _open_session(app: Any, receive: Any, send: Any) -> str:
    import orjson
    from bench_http import INITIALIZE

    body = orjson.dumps(INITIALIZE)
    found: dict[str, str] = {}

    async def init_receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def init_send(event: dict[str, Any]) -> None:
        for key, value in event.get("headers", []):
            if key.lower() == b"mcp-session-id":
                found["sid"] = value.decode()

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
        ],
        "server": ("127.0.0.1", 8000),
    }
    asyncio.run(app(scope, init_receive, init_send))
    return found["sid"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("part", choices=["stdio", "http", "startup", "layers"])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--mode", choices=["stateless", "stateful"], default="stateless")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument(
        "--store",
        choices=["none", "memory", "redis"],
        default="none",
        help="http: serve with MCPServer(store=MemoryStore() or RedisStore(...)) (stateful)",
    )
    parser.add_argument("--response", choices=["json", "sse"], default="json", help="with --store")
    parser.add_argument("--small", type=int, default=20_000, help="20-byte round trips (stdio)")
    parser.add_argument("--large", type=int, default=20, help="1 MB round trips (stdio)")
    parser.add_argument("--py-spy", action="store_true", help="sample with py-spy (stdio, http)")
    args = parser.parse_args()
    if args.py_spy and shutil.which("py-spy") is None:
        parser.error("py-spy is not installed (pip install py-spy)")
    work = Path(tempfile.mkdtemp(prefix="mcpkit-profile-"))
    emit(f"# profile files in {work}")
    if args.part == "stdio":
        profile_stdio(work, args.top, args.small, args.large, args.py_spy)
    elif args.part == "http":
        profile_http(
            work, args.top, args.mode, args.seconds, args.py_spy, args.store, args.response
        )
    elif args.part == "layers":
        profile_layers(20_000, 5)
    else:
        profile_startup(work, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
