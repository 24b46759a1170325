"""Part 3: what importing mcpkit costs a program.

Each figure is the time a fresh ``python -c "<snippet>"`` spends in the
snippet, clocked inside that process (so the interpreter's own start-up and
the noise of spawning processes stay out), median of several interleaved
samples. Three snippets: a bare ``import mcpkit`` (names load lazily, so this
is only the floor), ``from mcpkit import MCPServer`` (what every server
imports), and ``import`` + building an ``MCPServer`` with one tool (the server
modules and the tool's schema; pydantic only for tools that need it). The
official SDK's equivalents are measured alongside. ``from mcpkit import
MCPServer`` is also timed the way a user feels it: the wall time of a whole
``python -c`` against a bare ``python -c pass`` in the same run (target:
<= 100 ms more, issue 18). ``-X importtime`` then names the heaviest imports
behind the last figure.

Run alone: ``python benchmarks/bench_import.py [--quick] [--reps N]``.
"""

from __future__ import annotations

import subprocess
import sys
import time

from _util import PYTHON, Options, Row, child_env, emit, median, spread
from bench_stdio import main as _main

TARGET_MS = 200.0
TARGET_OVER_BARE_MS = 100.0

SNIPPETS: dict[str, str] = {
    "mcpkit import": "import mcpkit",
    "mcpkit MCPServer": "from mcpkit import MCPServer",
    "mcpkit server": (
        "from mcpkit import MCPServer\n"
        "server = MCPServer(name='bench', version='1')\n"
        "@server.tool\n"
        "async def echo(text: str) -> str:\n"
        "    return text\n"
    ),
    "sdk import": "import mcp",
    "sdk MCPServer": (
        "try:\n"
        "    from mcp.server.mcpserver import MCPServer\n"
        "except ImportError:\n"
        "    from mcp.server.fastmcp import FastMCP as MCPServer\n"
    ),
    "sdk server": (
        "try:\n"
        "    from mcp.server.mcpserver import MCPServer as Server\n"
        "except ImportError:\n"
        "    from mcp.server.fastmcp import FastMCP as Server\n"
        "server = Server('bench')\n"
        "@server.tool()\n"
        "async def echo(text: str) -> str:\n"
        "    return text\n"
    ),
}


def snippet_ms(code: str) -> float:
    """Milliseconds a fresh interpreter spends running ``code``."""
    timed = f"import time as _t\n_s = _t.perf_counter()\n{code}\nprint(_t.perf_counter() - _s)\n"
    proc = subprocess.run(
        [PYTHON, "-c", timed], check=True, capture_output=True, text=True, env=child_env()
    )
    return float(proc.stdout.split()[-1]) * 1000


def process_ms(code: str) -> float:
    """Wall milliseconds of a whole ``python -c code``, interpreter start-up included."""
    start = time.perf_counter()
    subprocess.run([PYTHON, "-c", code], check=True, capture_output=True, env=child_env())
    return (time.perf_counter() - start) * 1000


def heaviest_imports(code: str, top: int = 8) -> list[tuple[int, str]]:
    """Top-level modules by cumulative import time (µs), from ``-X importtime``."""
    proc = subprocess.run(
        [PYTHON, "-X", "importtime", "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env=child_env(),
    )
    found: list[tuple[int, str]] = []
    for line in proc.stderr.splitlines():
        # "import time: self [us] | cumulative | imported package"; depth shown by indentation.
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line[len("import time:") :].split("|")
        if name.startswith("  "):  # nested under another import
            continue
        found.append((int(cumulative), name.strip()))
    return sorted(found, reverse=True)[:top]


def run(opts: Options) -> list[Row]:
    n = opts.reps(15, 1)
    emit(f"== import: time spent in python -c <snippet>, fresh process each (samples={n})")
    samples: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    names = list(SNIPPETS)
    if not opts.quick:
        for code in SNIPPETS.values():  # warm the OS page cache and write the .pyc files
            snippet_ms(code)
    for i in range(n):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            samples[name].append(snippet_ms(SNIPPETS[name]))
    net: dict[str, float] = {}
    for name in names:
        net[name] = median(samples[name])
        emit(f"  {name:<16} {spread(samples[name]):>28} ms")
    codes = {
        "bare": "pass",
        "MCPServer": SNIPPETS["mcpkit MCPServer"],
        "sdk": SNIPPETS["sdk MCPServer"],
    }
    whole: dict[str, list[float]] = {name: [] for name in codes}
    order = list(codes)
    for i in range(n):
        for name in order[i % 3 :] + order[: i % 3]:
            whole[name].append(process_ms(codes[name]))
    over_bare = median(whole["MCPServer"]) - median(whole["bare"])
    sdk_over_bare = median(whole["sdk"]) - median(whole["bare"])
    emit(
        f"  python -c 'from mcpkit import MCPServer' {spread(whole['MCPServer'])} ms, "
        f"python -c pass {spread(whole['bare'])} ms: {over_bare:.1f} ms more"
    )
    emit("  heaviest top-level imports behind 'mcpkit server' (-X importtime, cumulative):")
    for micros, module in heaviest_imports(SNIPPETS["mcpkit server"]):
        emit(f"    {micros / 1000:8.1f} ms  {module}")
    return [
        Row(
            metric="import mcpkit",
            mcpkit=net["mcpkit import"],
            baseline=None,
            unit="ms",
            baseline_name="",
            target=f"<= {TARGET_MS:.0f} ms",
            ok=net["mcpkit import"] <= TARGET_MS,
            sdk=net["sdk import"],
        ),
        Row(
            metric="from mcpkit import MCPServer",
            mcpkit=net["mcpkit MCPServer"],
            baseline=None,
            unit="ms",
            baseline_name="",
            target=f"<= {TARGET_MS:.0f} ms",
            ok=net["mcpkit MCPServer"] <= TARGET_MS,
            sdk=net["sdk MCPServer"],
        ),
        Row(
            metric="python -c 'from mcpkit import MCPServer' over python -c pass",
            mcpkit=over_bare,
            baseline=None,
            unit="ms",
            baseline_name="",
            target=f"<= {TARGET_OVER_BARE_MS:.0f} ms",
            ok=over_bare <= TARGET_OVER_BARE_MS,
            sdk=sdk_over_bare,
        ),
        Row(
            metric="import + MCPServer with 1 tool",
            mcpkit=net["mcpkit server"],
            baseline=None,
            unit="ms",
            baseline_name="",
            target=f"<= {TARGET_MS:.0f} ms",
            ok=net["mcpkit server"] <= TARGET_MS,
            sdk=net["sdk server"],
        ),
    ]


if __name__ == "__main__":
    sys.exit(_main(runner=run))
