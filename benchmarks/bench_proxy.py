"""A proxied tool against the same tool called directly: latency and CPU per ``tools/call``.

An upstream server serves ``echo``; a proxy of it (``mcpkit.compose.proxy``, in
memory) serves it again. One in-memory client (``mcpkit.testing.connect``) calls the
upstream directly and another calls the proxy, in alternating batches, and the
process CPU time of each batch is taken: the proxied figure holds the whole extra
hop (the proxy's session, its upstream client, a second serialisation each way).
It also counts the upstream's ``initialize`` requests, which must be one per
downstream session however many calls it makes (issue 24: never a handshake per
call). This in-memory figure is the proxy's own share, without sockets.

``--http`` measures issue 24's targets, HTTP both ways: an upstream server process
(``servers/http_server.py mcpkit-counted``) and a proxy process of it
(``mcpkit-proxy``), on the same uvicorn settings; one keep-alive client session
calls the upstream directly and another calls the proxy, sequentially, in
alternating batches. Per call: the wall latency (target: proxied at most 2x
direct), the proxy process's CPU against the upstream process's CPU while it
serves the direct calls, i.e. serving the same tool locally (target: at most
1.5x), and the upstream's ``initialize`` count (target: one per session). Beside them,
the floor under any proxy in Python: a third process (``mcpkit-floor``) serving an
``echo`` that makes one bare HTTP round trip to the same upstream, no MCP client at all
(``servers/floor_tool.py``).

    python benchmarks/bench_proxy.py            # 20 batches of 1000 calls each way
    python benchmarks/bench_proxy.py --quick
    python benchmarks/bench_proxy.py --http [--quick] [--pin] [--peer]

``--peer`` adds the best peer's figures measured the same way in the same run: FastMCP
serving ``echo`` and FastMCP's proxy (``create_proxy``) of the same upstream.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcpkit import MCPServer
from mcpkit.compose import proxy
from mcpkit.testing import connect

initializes = 0


async def count(ctx: Any, call_next: Any) -> Any:
    global initializes
    if ctx.method == "initialize":
        initializes += 1
    return await call_next(ctx)


def build() -> MCPServer:
    async def echo(text: str) -> str:
        return text

    upstream = MCPServer(name="upstream", version="1.0.0", middleware=[count])
    upstream.add_tool(echo)
    return upstream


async def batch(client: Any, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        await client.call_tool("echo", {"text": "hello world"})
    return (time.process_time() - start) / calls


async def main(reps: int, calls: int) -> None:
    upstream = build()
    async with connect(upstream) as direct, connect(proxy(upstream)) as proxied:
        for client in (direct, proxied):  # both answer, and answer the same
            result = await client.call_tool("echo", {"text": "hello world"})
            if result["content"] != [{"type": "text", "text": "hello world"}]:
                raise SystemExit(f"echo answered {result!r}")
        await batch(direct, calls)  # warm up both paths
        await batch(proxied, calls)
        local: list[float] = []
        through: list[float] = []
        for i in range(reps):
            order = (direct, proxied) if i % 2 == 0 else (proxied, direct)
            for client in order:
                (local if client is direct else through).append(await batch(client, calls))
    lo, pr = statistics.median(local), statistics.median(through)
    print(
        f"direct  tools/call: {lo * 1e6:.1f} us CPU  [{min(local) * 1e6:.1f}..{max(local) * 1e6:.1f}]"
    )
    print(
        f"proxied tools/call: {pr * 1e6:.1f} us CPU  [{min(through) * 1e6:.1f}..{max(through) * 1e6:.1f}]"
    )
    print(f"ratio proxied/direct: {pr / lo:.2f}x (both ends in this process)")
    total = 1 + reps * calls + calls
    print(
        f"upstream initialize requests: {initializes} (the direct client's and the proxy's "
        f"one upstream session) for {total} proxied calls"
    )


# -- HTTP both ways (--http) ---------------------------------------------------------------------

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import child_env, cpu_seconds, free_port, stop, wait_for_port  # noqa: E402

HTTP_SERVER = Path(__file__).resolve().parent / "servers" / "http_server.py"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LATENCY_TARGET = 2.0
CPU_TARGET = 1.5


def start(impl: str, port: int, cpu: int | None = None, **env: str) -> subprocess.Popen[bytes]:
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    proc = subprocess.Popen(
        [*pin, sys.executable, str(HTTP_SERVER), impl, "stateful", str(port)],
        env={**child_env(), **env},
        stdin=subprocess.DEVNULL,
    )
    wait_for_port(port, proc)
    return proc


class Session:
    """One keep-alive MCP session over raw HTTP (httpx): the same client work both ways."""

    def __init__(self, url: str) -> None:
        import httpx

        self.url = url
        self.http = httpx.Client(timeout=30)
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
        answer = self.http.post(url, json=init, headers=HEADERS)
        answer.raise_for_status()
        self.headers = {
            **HEADERS,
            "Mcp-Session-Id": answer.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.http.post(url, json=note, headers=self.headers).raise_for_status()
        self.body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}'

    def call(self, name: str = "echo") -> Any:
        body = self.body if name == "echo" else self.body.replace(b'"echo"', f'"{name}"'.encode())
        answer = self.http.post(self.url, content=body, headers=self.headers)
        answer.raise_for_status()
        return answer.json()["result"]

    def batch(self, calls: int) -> float:
        """Seconds of wall time per call."""
        start = time.perf_counter()
        for _ in range(calls):
            self.call()
        return (time.perf_counter() - start) / calls


def main_http(reps: int, calls: int, pin: bool, peer: bool) -> None:
    up_port, proxy_port, floor_port = free_port(), free_port(), free_port()
    # --pin: every measured server alone on CPU 1 (the upstream serving the direct calls,
    # the proxy, the floor: one busy at a time); this script and a second upstream, the
    # one the proxy and the floor call, on CPU 0. Unpinned, a proxied call keeps three
    # processes busy on two CPUs where a direct one keeps two, and the proxy runs on
    # cold caches: a property of a 2-CPU machine more than of the proxy.
    measured, other = (1, 0) if pin else (None, None)
    upstream = start("mcpkit-counted", up_port, measured)
    up_url = f"http://127.0.0.1:{up_port}/mcp"
    behind, behind_url = upstream, up_url
    if pin:
        os.sched_setaffinity(0, {0})
        behind_port = free_port()
        behind = start("mcpkit-counted", behind_port, other)
        behind_url = f"http://127.0.0.1:{behind_port}/mcp"
    front = start("mcpkit-proxy", proxy_port, measured, BENCH_UPSTREAM=behind_url)
    floor = start("mcpkit-floor", floor_port, measured, BENCH_UPSTREAM=behind_url)
    pids = {"direct": upstream.pid, "proxied": front.pid, "floor": floor.pid}
    peers: list[subprocess.Popen[bytes]] = []
    ports = {"proxied": proxy_port, "floor": floor_port}
    heard: dict[str, int] = {}
    if peer:
        # --peer: FastMCP serving the same tool, and FastMCP's proxies of an upstream of
        # their own (the same server, so that mcpkit's proxy's count stays its own).
        peer_port = free_port()
        peers.append(start("mcpkit-counted", peer_port, other))
        peer_url = f"http://127.0.0.1:{peer_port}/mcp"
        for impl in ("fastmcp", "fastmcp-proxy", "fastmcp-proxy-shared"):
            ports[impl] = free_port()
            peers.append(start(impl, ports[impl], measured, BENCH_UPSTREAM=peer_url))
            pids[impl] = peers[-1].pid
            heard[impl] = 0
    try:
        sessions = {"direct": Session(up_url)}
        sessions.update({k: Session(f"http://127.0.0.1:{p}/mcp") for k, p in ports.items()})
        # The FastMCP proxies' upstream counts the initialize requests it answered; asked
        # around each of their batches, it tells how many a batch made.
        counter = Session(peer_url) if peer else None

        def initializes() -> int:
            assert counter is not None
            return int(counter.call("initializes")["content"][0]["text"])

        for session in sessions.values():  # all answer, and answer the same
            if session.call()["content"] != [{"type": "text", "text": "hello world"}]:
                raise SystemExit("echo answered something else")
        for session in sessions.values():
            session.batch(calls)  # warm up every path
        wall: dict[str, list[float]] = {k: [] for k in sessions}
        cpu: dict[str, list[float]] = {k: [] for k in sessions}
        names = list(sessions)
        for i in range(reps):
            turn = i % len(names)
            for which in names[turn:] + names[:turn]:  # rotated: no path always first
                # Serving the tool: the upstream process for a direct call, the proxy
                # process (not the upstream it calls) for a proxied one, the floor's own.
                asked = initializes() if which in heard else 0
                before = cpu_seconds(pids[which])
                wall[which].append(sessions[which].batch(calls))
                cpu[which].append((cpu_seconds(pids[which]) - before) / calls)
                if which in heard:
                    heard[which] += initializes() - asked
        # The upstream behind mcpkit's proxy counts the floor's session, the one asking
        # it (this script's: the direct session unpinned, a new one pinned) and the proxy's.
        counted = Session(behind_url) if pin else sessions["direct"]
        handshakes = int(counted.call("initializes")["content"][0]["text"]) - 2
    finally:
        for proc in peers:
            stop(proc)
        stop(floor)
        stop(front)
        if behind is not upstream:
            stop(behind)
        stop(upstream)
    lat = {k: statistics.median(v) for k, v in wall.items()}
    use = {k: statistics.median(v) for k, v in cpu.items()}
    # /proc counts CPU in clock ticks (10 ms): a --quick batch may show none at all.
    lat_ratio = lat["proxied"] / max(lat["direct"], 1e-9)
    cpu_ratio = use["proxied"] / max(use["direct"], 1e-9)
    floor_ratio = use["floor"] / max(use["direct"], 1e-9)
    placement = "each measured server alone on CPU 1" if pin else "unpinned"
    print(f"HTTP both ways, {reps} batches of {calls} sequential calls each way ({placement})")
    print(
        f"latency per call: direct {lat['direct'] * 1e6:.0f} us, proxied {lat['proxied'] * 1e6:.0f} us"
    )
    print(
        f"  ratio {lat_ratio:.2f}x (target <= {LATENCY_TARGET}x): {_verdict(lat_ratio <= LATENCY_TARGET)}"
    )
    print(
        f"server CPU per call: upstream serving it {use['direct'] * 1e6:.0f} us, "
        f"proxy serving it {use['proxied'] * 1e6:.0f} us"
    )
    print(
        f"  ratio {cpu_ratio:.2f}x (target <= {CPU_TARGET}x): {_verdict(cpu_ratio <= CPU_TARGET)}"
    )
    print(
        f"  floor: a server whose tool makes one bare HTTP round trip to the upstream "
        f"(no MCP client) {use['floor'] * 1e6:.0f} us, {floor_ratio:.2f}x; "
        f"the proxy is {use['proxied'] / max(use['floor'], 1e-9):.2f}x the floor"
    )
    total = (reps + 2) * calls + 1
    print(
        f"upstream initialize requests from the proxy: {handshakes} for its 1 downstream "
        f"session and {total} proxied calls (target 1): {_verdict(handshakes == 1)}"
    )
    if peer:
        print(f"FastMCP, the same way: serving it {use['fastmcp'] * 1e6:.0f} us CPU per call")
        for which, how in (
            ("fastmcp-proxy", "a session per request, its default for a URL"),
            ("fastmcp-proxy-shared", "one connected client shared"),
        ):
            print(
                f"  its proxy ({how}): {use[which] * 1e6:.0f} us CPU "
                f"({use[which] / max(use['fastmcp'], 1e-9):.2f}x its serving, "
                f"{use[which] / max(use['proxied'], 1e-9):.1f}x mcpkit's proxy); latency "
                f"{lat[which] * 1e6:.0f} us ({lat[which] / max(lat['fastmcp'], 1e-9):.2f}x); "
                f"upstream initialize requests during its {reps * calls} measured calls: "
                f"{heard[which]}"
            )


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--http", action="store_true", help="HTTP both ways (issue 24's targets)")
    parser.add_argument("--pin", action="store_true", help="--http: measured servers on CPU 1")
    parser.add_argument("--peer", action="store_true", help="--http: FastMCP's figures too")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None)
    args = parser.parse_args()
    if args.http:
        reps, calls = (4, 200) if args.quick else (10, 1000)
    else:
        reps, calls = (4, 200) if args.quick else (20, 1000)
    reps, calls = args.reps or reps, args.calls or calls
    if args.http:
        main_http(reps, calls, args.pin, args.peer)
    else:
        asyncio.run(main(reps, calls))
