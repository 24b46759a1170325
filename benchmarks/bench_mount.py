"""A mounted tool against a local one: CPU per ``tools/call``, as a same-run ratio.

One server serves ``echo`` itself and the same function again through a mounted
server (``inner_echo``). An in-memory client (``mcpkit.testing.connect``, every
message serialised as on a transport) calls them in alternating batches, and the
process CPU time of each batch is taken. The client's work is the same for both
names, so the ratio of the medians is the mounted tool's extra cost, diluted by the
client's share (an upper bound on nothing; read it as "no extra work per call").
Target (issue 24): at most 1.05x.

    python benchmarks/bench_mount.py            # 20 batches of 2000 calls each way
    python benchmarks/bench_mount.py --quick
    python benchmarks/bench_mount.py --instructions   # callgrind: load cannot move it

``--instructions`` runs this script under ``valgrind --tool=callgrind`` once per
tool and call count (``N1`` and ``N2`` calls, ``PYTHONHASHSEED`` fixed) and reports
``(total(N2) - total(N1)) / (N2 - N1)`` per tool, as ``instructions.py`` does:
start-up cancels out, what is left is one warm in-memory round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcpkit import MCPServer
from mcpkit.testing import connect


def build() -> MCPServer:
    async def echo(text: str) -> str:
        return text

    inner = MCPServer(name="inner", version="1.0.0")
    inner.add_tool(echo)
    server = MCPServer(name="outer", version="1.0.0")
    server.add_tool(echo)
    server.mount(inner, namespace="inner")
    return server


async def batch(client: object, name: str, calls: int) -> float:
    call = client.call_tool  # type: ignore[attr-defined]
    start = time.process_time()
    for _ in range(calls):
        await call(name, {"text": "hello world"})
    return (time.process_time() - start) / calls


async def main(reps: int, calls: int) -> None:
    async with connect(build()) as client:
        for name in ("echo", "inner_echo"):  # both answer, and answer the same
            result = await client.call_tool(name, {"text": "hello world"})
            if result != {"content": [{"type": "text", "text": "hello world"}]}:
                raise SystemExit(f"{name} answered {result!r}")
        await batch(client, "echo", calls)  # warm up both paths
        await batch(client, "inner_echo", calls)
        local: list[float] = []
        mounted: list[float] = []
        for i in range(reps):
            order = ("echo", "inner_echo") if i % 2 == 0 else ("inner_echo", "echo")
            for name in order:
                (local if name == "echo" else mounted).append(await batch(client, name, calls))
    lo, mo = statistics.median(local), statistics.median(mounted)
    print(
        f"local   tools/call: {lo * 1e6:.1f} us CPU  [{min(local) * 1e6:.1f}..{max(local) * 1e6:.1f}]"
    )
    print(
        f"mounted tools/call: {mo * 1e6:.1f} us CPU  [{min(mounted) * 1e6:.1f}..{max(mounted) * 1e6:.1f}]"
    )
    print(f"ratio mounted/local: {mo / lo:.3f}x (target <= 1.05x)")


async def calls_only(name: str, calls: int) -> None:
    """The process callgrind counts: 50 warm-up calls, then ``calls`` of ``name``."""
    async with connect(build()) as client:
        for _ in range(50 + calls):
            await client.call_tool(name, {"text": "hello world"})


def instructions(n1: int, n2: int) -> None:
    def total(name: str, calls: int) -> int:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            env = {**os.environ, "PYTHONHASHSEED": "1"}
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
            args = [sys.executable, __file__, "--count", name, "--calls", str(calls)]
            subprocess.run([*cmd, *args], env=env, check=True, capture_output=True)
            for line in out.read_text().splitlines():
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        raise RuntimeError("no totals in callgrind's output")

    per: dict[str, float] = {}
    for name in ("echo", "inner_echo"):
        per[name] = (total(name, n2) - total(name, n1)) / (n2 - n1)
        print(f"{name:>10}: {per[name]:,.0f} instructions per tools/call")
    print(f"ratio mounted/local: {per['inner_echo'] / per['echo']:.4f}x (target <= 1.05x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--count", help=argparse.SUPPRESS)  # the process callgrind runs
    args = parser.parse_args()
    if args.count:
        asyncio.run(calls_only(args.count, args.calls))
        raise SystemExit(0)
    if args.instructions:
        instructions(100, 600)
        raise SystemExit(0)
    reps, calls = (4, 200) if args.quick else (args.reps, args.calls)
    asyncio.run(main(reps, calls))
