"""Tool-search mode on a server with 5,000 tools: listing latency and bytes, search latency.

Two copies of one server with 5,000 generated tools (seeded: a name of two or
three words, a twelve-word description and two or three described arguments,
drawn from a 600-word vocabulary): one lists every tool, the other is in
tool-search mode (``mcpkit.compose.tool_search``). An in-memory client
(``mcpkit.testing.connect``, every message serialised as on a transport) takes:

- ``tools/list``: wall time per listing (median over the repetitions) and the
  bytes of the listing's JSON (every page; the default server has one);
- ``search_tools``: wall time per search (median over the queries, each a few
  words of one tool's description), after the first search, which builds the
  index and is reported alone (``first search``);
- ``tools/call``: a tool called directly and through ``call_tool``.

    python benchmarks/bench_tool_search.py            # 5,000 tools, 200 searches
    python benchmarks/bench_tool_search.py --quick    # 50 searches
    python benchmarks/bench_tool_search.py --tools 20000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

import orjson

from mcpkit import MCPServer
from mcpkit.compose import tool_search
from mcpkit.server.tools import create_tool
from mcpkit.testing import connect

SEED = 20


def vocabulary(rng: random.Random, size: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def build(n: int, *, search: bool) -> tuple[MCPServer, list[str]]:
    """The server, and one query per tool (words of its description)."""
    rng = random.Random(SEED)
    words = vocabulary(rng, 600)
    server = MCPServer(name="many", version="1.0.0")
    queries: list[str] = []

    async def run(**arguments: Any) -> str:
        return "ok"

    for i in range(n):
        name = "_".join(rng.sample(words, rng.randint(2, 3))) + f"_{i}"
        description = " ".join(rng.sample(words, 12)).capitalize() + "."
        props = {
            w: {"type": "string", "description": " ".join(rng.sample(words, 5))}
            for w in rng.sample(words, rng.randint(2, 3))
        }
        schema = {"type": "object", "properties": props, "required": list(props)[:1]}
        server.add_tool(
            create_tool(id=name, description=description, execute=run, input_schema=schema)
        )
        queries.append(" ".join(description.rstrip(".").split()[:4]))
    if search:
        tool_search(server)
    return server, queries


async def listing(client: Any) -> tuple[float, int]:
    start = time.perf_counter()
    tools = await client.list_tools()
    took = time.perf_counter() - start
    return took, len(orjson.dumps({"tools": tools}))


async def measure(n: int, searches: int, lists: int) -> None:
    plain, _ = build(n, search=False)
    mode, queries = build(n, search=True)
    rng = random.Random(SEED + 1)
    asked = rng.sample(queries, min(searches, len(queries)))
    async with connect(plain) as a, connect(mode) as b:
        await a.list_tools()  # warm: the listing cache is built on the first
        await b.list_tools()
        full = [await listing(a) for _ in range(lists)]
        small = [await listing(b) for _ in range(lists)]
        start = time.perf_counter()
        await b.call_tool("search_tools", {"query": asked[0]})
        first = time.perf_counter() - start
        times: list[float] = []
        hits = 0
        for query in asked:
            start = time.perf_counter()
            result = await b.call_tool("search_tools", {"query": query})
            times.append(time.perf_counter() - start)
            found = result["structuredContent"]["tools"]
            wanted = queries.index(query)
            hits += any(t["name"].endswith(f"_{wanted}") for t in found)
        name = (await a.list_tools())[0]["name"]
        direct, through = [], []
        for _ in range(200):
            start = time.perf_counter()
            await b.call_tool(name, {})
            direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            await b.call_tool("call_tool", {"name": name, "arguments": {}})
            through.append(time.perf_counter() - start)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1e3:.2f} ms"

    print(f"{n} tools")
    print(f"tools/list, every tool:   {ms([t for t, _ in full])}  {full[0][1]:,} bytes")
    print(f"tools/list, search mode:  {ms([t for t, _ in small])}  {small[0][1]:,} bytes")
    print(f"first search (builds the index): {first * 1e3:.1f} ms")
    print(
        f"search_tools (median of {len(times)}): {ms(times)}  "
        f"[{min(times) * 1e3:.2f}..{max(times) * 1e3:.2f}]"
    )
    print(f"the queried tool in the top 5: {hits}/{len(asked)}")
    print(f"tools/call direct: {ms(direct)}; through call_tool: {ms(through)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=5000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    searches = 50 if args.quick else 200
    lists = 5 if args.quick else 20
    asyncio.run(measure(args.tools, searches, lists))


if __name__ == "__main__":
    main()
