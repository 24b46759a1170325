"""Part 5: memory held by one idle stateful Streamable HTTP session.

Two measurements of the same thing, for mcpkit, the minimal stateful ASGI
app (a dict of session ids: the floor) and the official SDK:

* **server process**: a uvicorn server (``servers/http_server.py``, stateful)
  gets ``N`` sessions opened over one keep-alive connection (``initialize``
  + ``notifications/initialized`` each); the figure is the growth of its RSS
  divided by ``N``, after a warm-up batch so one-time costs (lazy imports,
  first-request caches) are not charged to sessions. RSS moves in pages and
  the allocator keeps freed memory, so this is an upper bound.
* **in process, tracemalloc**: the ASGI app is driven directly (no server, no
  sockets) in a child interpreter; the figure is the growth of memory traced
  by ``tracemalloc`` per session, after ``gc.collect()``. This counts exactly
  the Python objects that stay alive per session.

Run alone: ``python benchmarks/bench_memory.py [--quick] [--reps N]``.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
from _util import (
    PROTOCOL_VERSION,
    PYTHON,
    Options,
    Row,
    child_env,
    emit,
    median,
    rss_kib,
    spread,
    stop,
)
from bench_http import INITIALIZE, INITIALIZED, Client, HTTPFailure, prepare, start_server
from bench_stdio import main as _main

IMPLS = ("minimal", "mcpkit", "sdk")
TARGET_BYTES = 4096


# -- server process: RSS -----------------------------------------------------------------------


def rss_per_session(
    impl: str, n: int, warmup: int, reps: int, cpu: int | None, log: Path
) -> list[float]:
    target = start_server(impl, "stateful", cpu, log)
    try:
        prepare(target)
        client = Client(target.port)
        try:
            for _ in range(warmup):
                client.initialize()
            samples = []
            for _ in range(reps):
                before = rss_kib(target.proc.pid)
                for _ in range(n):
                    client.initialize()
                samples.append((rss_kib(target.proc.pid) - before) * 1024 / n)
            return samples
        finally:
            client.close()
    finally:
        stop(target.proc)


# -- in process: tracemalloc over the bare ASGI app -------------------------------------------


class ASGIDriver:
    """Calls an ASGI app the way a server would, without sockets."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lifespan_task: asyncio.Task[Any] | None = None
        self._lifespan_in: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lifespan_out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def start(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self.lifespan_task = asyncio.create_task(
            self.app(scope, self._lifespan_in.get, self._lifespan_out.put)
        )
        await self._lifespan_in.put({"type": "lifespan.startup"})
        msg = await asyncio.wait_for(self._lifespan_out.get(), 30)
        if msg["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"lifespan startup failed: {msg}")

    async def stop(self) -> None:
        if self.lifespan_task is None:
            return
        await self._lifespan_in.put({"type": "lifespan.shutdown"})
        try:
            await asyncio.wait_for(self.lifespan_task, 30)
        except Exception:
            self.lifespan_task.cancel()

    async def post(
        self, message: Any, session_id: str | None
    ) -> tuple[int, dict[bytes, bytes], bytes]:
        body = orjson.dumps(message)
        headers = [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-protocol-version", PROTOCOL_VERSION.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        if session_id:
            headers.append((b"mcp-session-id", session_id.encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
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
            "state": {},
        }
        done = asyncio.Event()
        sent = False
        status = 0
        out_headers: dict[bytes, bytes] = {}
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(event: dict[str, Any]) -> None:
            nonlocal status
            if event["type"] == "http.response.start":
                status = event["status"]
                out_headers.update((k.lower(), v) for k, v in event.get("headers", []))
            elif event["type"] == "http.response.body":
                chunks.append(event.get("body", b""))
                if not event.get("more_body", False):
                    done.set()

        await asyncio.wait_for(self.app(scope, receive, send), 30)
        done.set()
        return status, out_headers, b"".join(chunks)

    async def open_session(self) -> None:
        status, headers, body = await self.post(INITIALIZE, None)
        sid = headers.get(b"mcp-session-id")
        if status != 200 or not sid or b'"result"' not in body:
            raise HTTPFailure(f"initialize answered {status}: {body[:200]!r}")
        status, _, body = await self.post(INITIALIZED, sid.decode())
        if status not in (200, 202):
            raise HTTPFailure(f"notifications/initialized answered {status}: {body[:200]!r}")


def build_app(impl: str) -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "servers"))
    from http_server import build

    return build(impl, "stateful")


async def traced_per_session(impl: str, n: int, warmup: int, reps: int) -> list[float]:
    driver = ASGIDriver(build_app(impl))
    # Tracing starts after the imports (tracing them is slow and they are not per session);
    # only growth after the warm-up is counted anyway.
    tracemalloc.start()
    await driver.start()
    try:
        for _ in range(warmup):
            await driver.open_session()
        samples = []
        for _ in range(reps):
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(n):
                await driver.open_session()
            gc.collect()
            samples.append((tracemalloc.get_traced_memory()[0] - before) / n)
        return samples
    finally:
        await driver.stop()
        tracemalloc.stop()


def traced_in_child(impl: str, n: int, warmup: int, reps: int) -> list[float]:
    """Run :func:`traced_per_session` in a fresh interpreter (only that implementation imported)."""
    proc = subprocess.run(
        [PYTHON, __file__, "--traced", impl, str(n), str(warmup), str(reps)],
        capture_output=True,
        env=child_env(),
        timeout=600,
    )
    if proc.returncode != 0:
        raise HTTPFailure(
            f"in-process run for {impl} failed: {proc.stderr[-800:].decode(errors='replace')}"
        )
    values: list[float] = orjson.loads(proc.stdout.splitlines()[-1])
    return values


# -- the part ----------------------------------------------------------------------------------


def run(opts: Options) -> list[Row]:
    reps = opts.reps(3, 1)
    n = 50 if opts.quick else 2000
    warmup = 10 if opts.quick else 200
    emit(f"== memory: idle stateful sessions, {n} per sample after {warmup} warm-up, reps={reps}")
    log = Path(tempfile.mkdtemp(prefix="mcpkit-bench-mem-")) / "servers.log"
    rss: dict[str, float | None] = {}
    traced: dict[str, float | None] = {}
    for impl in IMPLS:
        try:
            values = rss_per_session(impl, n, warmup, reps, opts.server_cpu, log)
            rss[impl] = median(values)
            emit(f"  {impl:<8} RSS growth      {spread(values):>30} bytes/session")
        except (HTTPFailure, RuntimeError) as exc:
            rss[impl] = None
            emit(f"  {impl:<8} RSS growth      FAILED: {exc} (server log: {log})")
        try:
            values = traced_in_child(impl, n, warmup, reps)
            traced[impl] = median(values)
            emit(f"  {impl:<8} tracemalloc     {spread(values):>30} bytes/session")
        except (HTTPFailure, subprocess.TimeoutExpired) as exc:
            traced[impl] = None
            emit(f"  {impl:<8} tracemalloc     FAILED: {exc}")
    rows = []
    for label, figures in (("server RSS", rss), ("tracemalloc", traced)):
        ours = figures["mcpkit"]
        rows.append(
            Row(
                metric=f"memory per idle session ({label})",
                mcpkit=ours,
                baseline=figures["minimal"],
                unit="B",
                baseline_name="dict of ids",
                target=f"<= {TARGET_BYTES // 1024} KB",
                ok=(ours <= TARGET_BYTES) if ours is not None else False,
                sdk=figures["sdk"],
            )
        )
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--traced":
        impl, n, warmup, reps = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        print(orjson.dumps(asyncio.run(traced_per_session(impl, n, warmup, reps))).decode())
        sys.exit(0)
    sys.exit(_main(runner=run))
