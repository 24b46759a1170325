"""One client implementation timing sequential ``tools/call`` round trips, in its own process.

    python client_driver.py {minimal,mcpkit,sdk} stdio SERVER_SCRIPT [--seconds S] [--batches B]
    python client_driver.py {minimal,mcpkit,sdk} http URL [--seconds S] [--batches B]

Each client is used the way its documentation shows: mcpkit's ``Client(command=...)`` /
``Client(url=...)``, the official SDK's ``mcp.Client(StdioServerParameters(...))`` /
``mcp.Client(url)``. The baseline, ``minimal``, is the least an asyncio client can do: a
hand-written JSON-RPC exchange (orjson, one future per request) over the subprocess's pipes,
or one ``httpx`` POST per request with the session headers, and no MCP features at all.
All three run on the default asyncio event loop (``--uvloop``: on uvloop). After connecting and a
warm-up (which also sizes the batches to about ``--seconds`` each), the driver times
``--batches`` batches of ``await client.call_tool("echo", {"text": ...})`` one after the
other, checks every answer, and prints one JSON line: for each batch, wall-clock
microseconds per round trip (``us``) and the client process's own CPU microseconds per
round trip (``cpu_us``; the server is another process). Connecting and spawning are
outside the clock.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import orjson

PROTOCOL_VERSION = "2025-11-25"
INITIALIZE_PARAMS = {
    "protocolVersion": PROTOCOL_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "minimal-bench-client", "version": "0"},
}
TEXT = "x" * 20  # the same 20-byte argument as the server benchmarks
Call = Callable[[], Awaitable[str]]


def mcpkit_client(transport: str, target: str) -> tuple[AbstractAsyncContextManager[Any], Any]:
    from mcpkit.client import Client

    if transport == "stdio":
        client = Client(command=sys.executable, args=[target])
    else:
        client = Client(url=target)

    async def call_with(c: Any) -> str:
        result = await c.call_tool("echo", {"text": TEXT})
        return str(result["content"][0]["text"])

    return client, call_with


def sdk_client(transport: str, target: str) -> tuple[AbstractAsyncContextManager[Any], Any]:
    from mcp import Client, StdioServerParameters, types

    server: Any = (
        StdioServerParameters(command=sys.executable, args=[target])
        if transport == "stdio"
        else target
    )
    client = Client(server)

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


class MinimalStdio:
    """The baseline over stdio: spawn, handshake, then one line out and one line in per call."""

    def __init__(self, script: str) -> None:
        self.script = script
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


def minimal_client(transport: str, target: str) -> tuple[AbstractAsyncContextManager[Any], Any]:
    client: Any = MinimalStdio(target) if transport == "stdio" else MinimalHTTP(target)

    async def call_with(c: Any) -> str:
        result = await c.request("tools/call", {"name": "echo", "arguments": {"text": TEXT}})
        return str(result["content"][0]["text"])

    return client, call_with


async def timed(call: Call, n: int) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds for ``n`` sequential calls, answers checked.

    The CPU figure is the client's own cost: a stdio server is a child process and an HTTP
    server another process, neither counted by ``process_time``.
    """
    cpu = time.process_time()
    start = time.perf_counter()
    for _ in range(n):
        if await call() != TEXT:
            raise RuntimeError("wrong echo answer")
    return time.perf_counter() - start, time.process_time() - cpu


async def measure(
    impl: str, transport: str, target: str, seconds: float, batches: int
) -> dict[str, Any]:
    make = {"minimal": minimal_client, "mcpkit": mcpkit_client, "sdk": sdk_client}[impl]
    client, call_with = make(transport, target)
    async with client as connected:

        async def call() -> str:
            return str(await call_with(connected))

        await timed(call, 20)  # first calls: imports, caches, the GET stream opening
        probe, _ = await timed(call, 50)
        n = max(10, int(seconds / (probe / 50)))
        wall: list[float] = []
        cpu: list[float] = []
        for _ in range(batches):
            w, c = await timed(call, n)
            wall.append(w / n * 1e6)
            cpu.append(c / n * 1e6)
    return {"impl": impl, "transport": transport, "per_batch": n, "us": wall, "cpu_us": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("impl", choices=["minimal", "mcpkit", "sdk"])
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("target", help="server script (stdio) or endpoint URL (http)")
    parser.add_argument("--seconds", type=float, default=1.0, help="aim of each timed batch")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument(
        "--uvloop", action="store_true", help="run the client on uvloop instead of asyncio's loop"
    )
    args = parser.parse_args()
    work = measure(args.impl, args.transport, args.target, args.seconds, args.batches)
    if args.uvloop:
        import uvloop

        result = uvloop.run(work)
    else:
        result = asyncio.run(work)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
