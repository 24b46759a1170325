"""One client implementation timing ``tools/call`` round trips, in its own process.

    python client_driver.py {minimal,mcpkit,sdk} stdio SERVER_SCRIPT [options]
    python client_driver.py {minimal,mcpkit,sdk} http URL [options]

Each client is used the way its documentation shows: mcpkit's ``Client(command=...)`` /
``Client(url=...)``, the official SDK's ``mcp.Client(StdioServerParameters(...))`` /
``mcp.Client(url)``. The baseline, ``minimal``, is the least an asyncio client can do: a
hand-written JSON-RPC exchange (orjson, one future per request) over the subprocess's pipes
with asyncio's own pipe transports, or one ``httpx`` POST per request with the session
headers, and no MCP features at all.

Every client speaks the same revision to the same server: ``--era 2025-11-25`` (the
default) is the handshake era (mcpkit's ``protocol_version="2025-11-25"``, the SDK's
``mode="legacy"``); ``--era 2026-07-28`` is the stateless revision, which both mcpkit's
and the SDK's clients choose by default with a server that offers it (a ``_meta``
envelope on every request and result; the baseline sends the envelope without probing).

All run on the default asyncio event loop (``--uvloop``: on uvloop). After connecting and a
warm-up (which also sizes the batches to about ``--seconds`` each), the driver times
``--batches`` batches of ``await client.call_tool("echo", {"text": ...})``, checking every
answer, in two ways:

* ``seq``: one call after the other (latency);
* ``pipe`` (``--inflight N``, default 64): N tasks each calling in a loop on the one
  connection, so N calls are in flight; the figure is wall time / calls (throughput).

It prints one JSON line: for each mode and batch, wall-clock microseconds per call
(``us``), the client process's own CPU microseconds per call (``cpu_us``), and for stdio
the server process's CPU microseconds per call (``server_cpu_us``, from ``/proc``; the
server is the driver's child). Connecting and spawning are outside the clock.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import orjson

PROTOCOL_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
ERAS = (PROTOCOL_VERSION, STATELESS_VERSION)
CLIENT_INFO = {"name": "minimal-bench-client", "version": "0"}
INITIALIZE_PARAMS = {
    "protocolVersion": PROTOCOL_VERSION,
    "capabilities": {},
    "clientInfo": CLIENT_INFO,
}
# 2026-07-28: every request carries the revision, capabilities and client info in `_meta`.
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
}
TEXT = "x" * 20  # the same 20-byte argument as the server benchmarks
Call = Callable[[], Awaitable[str]]


def mcpkit_client(
    transport: str, target: str, era: str
) -> tuple[AbstractAsyncContextManager[Any], Any]:
    from mcpkit.client import Client

    if transport == "stdio":
        client = Client(command=sys.executable, args=[target], protocol_version=era)
    else:
        client = Client(url=target, protocol_version=era)

    async def call_with(c: Any) -> str:
        result = await c.call_tool("echo", {"text": TEXT})
        return str(result["content"][0]["text"])

    return client, call_with


def sdk_client(
    transport: str, target: str, era: str
) -> tuple[AbstractAsyncContextManager[Any], Any]:
    from mcp import Client, StdioServerParameters, types

    server: Any = (
        StdioServerParameters(command=sys.executable, args=[target])
        if transport == "stdio"
        else target
    )
    # "legacy": the initialize handshake (2025-11-25); "auto" (its default): 2026-07-28.
    client = Client(server, mode="legacy" if era == PROTOCOL_VERSION else "auto")

    async def call_with(c: Any) -> str:
        result = await c.call_tool("echo", {"text": TEXT})
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        return block.text

    return client, call_with


class _Lines(asyncio.Protocol):
    """Newline-delimited JSON-RPC answers from the server's stdout, to their futures."""

    def __init__(self, pending: dict[int, asyncio.Future[Any]]) -> None:
        self.pending = pending
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            message = orjson.loads(line)
            future = self.pending.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message)

    def connection_lost(self, exc: Exception | None) -> None:
        # The server died (say, it failed to import): fail the calls instead of hanging.
        for future in self.pending.values():
            if not future.done():
                future.set_exception(RuntimeError("the server closed its stdout"))
        self.pending.clear()


class MinimalStdio:
    """The baseline over stdio: spawn, handshake, then one line out and one line in per call.

    In the stateless era there is no handshake: every request carries the envelope.
    """

    def __init__(self, script: str, era: str) -> None:
        self.script = script
        self.stateless = era == STATELESS_VERSION
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.ids = itertools.count(1)
        self.proc: subprocess.Popen[bytes] | None = None
        self.stdin: asyncio.WriteTransport | None = None

    async def __aenter__(self) -> MinimalStdio:
        loop = asyncio.get_running_loop()
        self.proc = subprocess.Popen(
            [sys.executable, self.script], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, _ = await loop.connect_write_pipe(asyncio.Protocol, self.proc.stdin)  # type: ignore[assignment]
        await loop.connect_read_pipe(lambda: _Lines(self.pending), self.proc.stdout)
        if not self.stateless:
            await self.request("initialize", INITIALIZE_PARAMS)
            self.notify("notifications/initialized")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None and self.stdin is not None
        self.stdin.close()  # the server exits at end of input
        try:
            await asyncio.to_thread(self.proc.wait, 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def notify(self, method: str) -> None:
        assert self.stdin is not None
        self.stdin.write(orjson.dumps({"jsonrpc": "2.0", "method": method}) + b"\n")

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.stdin is not None
        rid = next(self.ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        if self.stateless:
            params = {**params, "_meta": ENVELOPE}
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.stdin.write(orjson.dumps(msg) + b"\n")
        answer: dict[str, Any] = (await future)["result"]
        return answer


class MinimalHTTP:
    """The baseline over HTTP: one httpx POST per request, JSON or one-event SSE answers."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ids = itertools.count(1)
        self.headers = {"accept": "application/json, text/event-stream"}
        self.http: Any = None

    async def __aenter__(self) -> MinimalHTTP:
        import httpx

        self.http = httpx.AsyncClient()
        await self.request("initialize", INITIALIZE_PARAMS)
        await self.http.post(
            self.url,
            content=orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            headers={**self.headers, "content-type": "application/json"},
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        msg = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        resp = await self.http.post(
            self.url,
            content=orjson.dumps(msg),
            headers={**self.headers, "content-type": "application/json"},
        )
        if "mcp-session-id" in resp.headers:
            self.headers["mcp-session-id"] = resp.headers["mcp-session-id"]
            self.headers["mcp-protocol-version"] = PROTOCOL_VERSION
        body = resp.content
        if resp.headers.get("content-type", "").startswith("text/event-stream"):
            body = next(line[5:] for line in body.splitlines() if line.startswith(b"data:"))
        answer: dict[str, Any] = orjson.loads(body)["result"]
        return answer


def minimal_client(
    transport: str, target: str, era: str
) -> tuple[AbstractAsyncContextManager[Any], Any]:
    if transport == "http" and era != PROTOCOL_VERSION:
        raise SystemExit("the baseline speaks only the handshake era over HTTP")
    client: Any = MinimalStdio(target, era) if transport == "stdio" else MinimalHTTP(target)

    async def call_with(c: Any) -> str:
        result = await c.request("tools/call", {"name": "echo", "arguments": {"text": TEXT}})
        return str(result["content"][0]["text"])

    return client, call_with


def children_cpu() -> float:
    """CPU seconds used so far by this process's children (the stdio server), from /proc."""
    total = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(stat[11]) + int(stat[12])
    return total / os.sysconf("SC_CLK_TCK")


async def run_calls(call: Call, n: int, inflight: int) -> None:
    """``n`` calls, answers checked: one after the other, or ``inflight`` at a time."""

    async def worker(count: int) -> None:
        for _ in range(count):
            if await call() != TEXT:
                raise RuntimeError("wrong echo answer")

    if inflight <= 1:
        await worker(n)
        return
    share, extra = divmod(n, inflight)
    await asyncio.gather(*(worker(share + (i < extra)) for i in range(inflight)))


async def timed(call: Call, n: int, inflight: int, server: bool) -> tuple[float, float, float]:
    """Wall, client CPU and server CPU seconds for ``n`` calls.

    The client CPU figure is this process's own cost: a stdio server is a child process
    and an HTTP server another process, neither counted by ``process_time``.
    """
    server_cpu = children_cpu() if server else 0.0
    cpu = time.process_time()
    start = time.perf_counter()
    await run_calls(call, n, inflight)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    return wall, cpu, (children_cpu() - server_cpu) if server else 0.0


async def measure(
    impl: str, transport: str, target: str, era: str, seconds: float, batches: int, inflight: int
) -> dict[str, Any]:
    make = {"minimal": minimal_client, "mcpkit": mcpkit_client, "sdk": sdk_client}[impl]
    client, call_with = make(transport, target, era)
    server = transport == "stdio"
    result: dict[str, Any] = {"impl": impl, "transport": transport, "era": era}
    async with client as connected:

        async def call() -> str:
            return str(await call_with(connected))

        await run_calls(call, 20, 1)  # first calls: imports, caches, the GET stream opening
        modes = {"seq": 1, "pipe": inflight} if inflight > 1 else {"seq": 1}
        for mode, width in modes.items():
            await run_calls(call, 2 * width, width)  # warm up this mode
            probe, _, _ = await timed(call, 50, width, False)
            n = max(10, int(seconds / (probe / 50)))
            got: dict[str, list[float]] = {"us": [], "cpu_us": [], "server_cpu_us": []}
            for _ in range(batches):
                w, c, s = await timed(call, n, width, server)
                got["us"].append(w / n * 1e6)
                got["cpu_us"].append(c / n * 1e6)
                got["server_cpu_us"].append(s / n * 1e6)
            result[mode] = {"per_batch": n, "inflight": width, **got}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("impl", choices=["minimal", "mcpkit", "sdk"])
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("target", help="server script (stdio) or endpoint URL (http)")
    parser.add_argument("--seconds", type=float, default=1.0, help="aim of each timed batch")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--era", choices=ERAS, default=PROTOCOL_VERSION, help="the revision spoken")
    parser.add_argument(
        "--inflight", type=int, default=64, help="calls in flight in the pipelined mode (1: none)"
    )
    parser.add_argument(
        "--uvloop", action="store_true", help="run the client on uvloop instead of asyncio's loop"
    )
    args = parser.parse_args()
    work = measure(
        args.impl,
        args.transport,
        args.target,
        args.era,
        args.seconds,
        args.batches,
        args.inflight,
    )
    if args.uvloop:
        import uvloop

        result = uvloop.run(work)
    else:
        result = asyncio.run(work)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
