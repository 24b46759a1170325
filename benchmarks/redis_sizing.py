"""How much Redis memory an mcpkit cluster needs: bytes per session and per retained event.

Not a benchmark of speed and not part of ``benchmarks/run.py``: run it on demand
when the figures in ``docs/deployment.md`` ("Sizing Redis") need redoing::

    python benchmarks/redis_sizing.py              # 1000 sessions per kind (about a minute)
    python benchmarks/redis_sizing.py --sessions 200 --events 200   # quicker, coarser
    python benchmarks/redis_sizing.py --result-chars 430 --stream-node-max-bytes 1024

It starts a real ``redis-server`` (``tests/redis_server.py``: no persistence, a free
port, a temp directory), serves one mcpkit server with ``RedisStore`` in this process
(uvicorn on a free 127.0.0.1 port, as the tests do), and drives it over real HTTP:

1. ``--sessions`` sessions that only answer with plain JSON (``initialize``,
   ``notifications/initialized``, one ``tools/call`` with ``Accept: application/json``):
   each leaves one key, its session record;
2. as many sessions with one ``tools/call`` answered on an SSE stream: each also
   leaves its event log (a Redis stream holding that response);
3. one session whose log retains ``--events`` responses (a ``tools/call`` each, of
   ``add``, or with ``--result-chars N`` of a tool returning N characters).

After each step it reads ``INFO memory`` ``used_memory`` (what Redis's allocator
holds: the whole cost, overheads included) and ``MEMORY USAGE`` of the keys
(``SAMPLES 0``: every field counted), and prints the figures per session and per
event. The client is 2025-11-25 with a small ``clientInfo`` and three
capabilities, as a typical client sends.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
from redis.asyncio import Redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.redis_server; mcpkit comes from PYTHONPATH or site

from tests.redis_server import RedisServer  # noqa: E402

from mcpkit import MCPServer  # noqa: E402
from mcpkit.stores.redis import RedisStore  # noqa: E402

PREFIX = "size:"
VERSION = "2025-11-25"
CLIENT_INFO = {"name": "example-client", "version": "1.4.2"}
CAPABILITIES = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}
JSON = "application/json"
BOTH = "application/json, text/event-stream"
CONCURRENCY = 16


class _Quiet(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # Ctrl+C stops the script, not just uvicorn
        pass


def make_server(store: RedisStore) -> MCPServer:
    server = MCPServer(name="sizing", version="1.0.0", store=store)

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    async def text(size: int) -> str:
        """A text of ``size`` characters (for logs of larger messages)."""
        return "x" * size

    return server


async def post(
    http: httpx.AsyncClient, url: str, msg: dict[str, Any], sid: str | None, accept: str
) -> httpx.Response:
    headers = {"accept": accept, "content-type": JSON}
    if sid is not None:
        headers["mcp-session-id"] = sid
        headers["mcp-protocol-version"] = VERSION
    response = await http.post(url, content=orjson.dumps(msg), headers=headers)
    if response.status_code not in (200, 202):
        raise RuntimeError(f"{msg.get('method')}: HTTP {response.status_code}: {response.text}")
    return response


async def open_session(http: httpx.AsyncClient, url: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": CAPABILITIES,
            "clientInfo": CLIENT_INFO,
        },
    }
    response = await post(http, url, init, None, JSON)
    sid = response.headers["mcp-session-id"]
    await post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, JSON)
    return sid


async def call_add(
    http: httpx.AsyncClient, url: str, sid: str, rid: int, accept: str, size: int = 0
) -> None:
    """``tools/call`` of ``add`` or, with ``size``, of ``text`` (a result that much longer)."""
    name, arguments = ("text", {"size": size}) if size else ("add", {"a": rid, "b": 1})
    msg = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    response = await post(http, url, msg, sid, accept)
    if (str(rid + 1) if not size else "x" * size) not in response.text:
        raise RuntimeError(f"unexpected answer: {response.text}")


async def sessions(http: httpx.AsyncClient, url: str, n: int, accept: str) -> list[str]:
    """``n`` sessions, each with one ``tools/call`` answered as ``accept`` asks."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one() -> str:
        async with gate:
            sid = await open_session(http, url)
            await call_add(http, url, sid, 2, accept)
            return sid

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def used_memory(raw: Redis) -> int:
    info = await raw.info("memory")
    return int(info["used_memory"])


async def settle(raw: Redis, prefix: str, kind: str, count: int) -> None:
    """Until ``count`` keys of ``kind`` exist (the transport writes some in the background)."""
    async with asyncio.timeout(30):
        while True:
            found = [k async for k in raw.scan_iter(match=f"{prefix}{kind}:*", count=1000)]
            if len(found) >= count:
                return
            await asyncio.sleep(0.05)


async def usage(raw: Redis, keys: list[str]) -> list[int]:
    return [int(await raw.memory_usage(key, samples=0) or 0) for key in keys]


def mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


async def measure(
    redis_url: str, n: int, events: int, node_bytes: int | None, size: int = 0
) -> None:
    if node_bytes is not None:
        async with Redis.from_url(redis_url) as admin:
            await admin.config_set("stream-node-max-bytes", node_bytes)
    store = RedisStore(redis_url, prefix=PREFIX)
    server = make_server(store)
    app = server.http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = _Quiet(uvicorn.Config(app, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(uv.serve(sockets=[sock]))
    raw = Redis.from_url(redis_url)
    try:
        async with asyncio.timeout(30):
            while not uv.started:
                if serving.done():
                    serving.result()
                await asyncio.sleep(0.01)
        url = f"http://127.0.0.1:{port}/mcp"
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            server_info = await raw.info("server")
            allocator = (await raw.info("memory"))["mem_allocator"]
            node_max = (await raw.config_get("stream-node-max-bytes"))["stream-node-max-bytes"]
            print(
                f"Redis {server_info['redis_version']} ({allocator}), "
                f"stream-node-max-bytes {node_max}; mcpkit RedisStore defaults"
            )
            # Warm up: one-time costs (the node key, rsk, the scripts) are not per session.
            warm = await sessions(http, url, 10, BOTH)
            for sid in warm:
                await http.delete(
                    url, headers={"mcp-session-id": sid, "mcp-protocol-version": VERSION}
                )
            await asyncio.sleep(0.5)
            fixed = [k.decode() async for k in raw.scan_iter(match=f"{PREFIX}*")]
            print(f"keys before the sessions: {sorted(fixed)}")
            for key in sorted(fixed):
                print(
                    f"  {key}: MEMORY USAGE {await raw.memory_usage(key, samples=0)} B, "
                    f"ttl {await raw.pttl(key)} ms"
                )

            before = await used_memory(raw)
            plain = await sessions(http, url, n, JSON)
            await settle(raw, PREFIX, "session", n)
            after_plain = await used_memory(raw)
            record_keys = [f"{PREFIX}session:{sid}" for sid in plain]
            records = await usage(raw, record_keys)
            ttl = await raw.pttl(record_keys[0])
            value = await raw.get(record_keys[0])
            print(f"\n1. {n} sessions answered with plain JSON: {await raw.dbsize()} keys in Redis")
            print(
                f"   used_memory grew {after_plain - before} B: "
                f"{(after_plain - before) / n:.0f} B per session"
            )
            print(
                f"   MEMORY USAGE of a session record: mean {mean(records):.0f} B "
                f"(min {min(records)}, max {max(records)}); value {len(value or b'')} B; "
                f"ttl {ttl / 1000:.0f} s"
            )

            streamed = await sessions(http, url, n, BOTH)
            await settle(raw, PREFIX, "events", n)
            after_sse = await used_memory(raw)
            logs = await usage(raw, [f"{PREFIX}events:{sid}" for sid in streamed])
            records2 = await usage(raw, [f"{PREFIX}session:{sid}" for sid in streamed])
            log_ttl = await raw.pttl(f"{PREFIX}events:{streamed[0]}")
            print(f"\n2. {n} sessions with one tools/call answered on SSE (1 event logged each)")
            print(
                f"   used_memory grew {after_sse - after_plain} B: "
                f"{(after_sse - after_plain) / n:.0f} B per session"
            )
            print(
                f"   MEMORY USAGE: record mean {mean(records2):.0f} B, "
                f"event log mean {mean(logs):.0f} B; log ttl {log_ttl / 1000:.0f} s"
            )

            sid = await open_session(http, url)
            await call_add(http, url, sid, 2, BOTH, size)
            key = f"{PREFIX}events:{sid}"
            (one,) = await usage(raw, [key])
            for rid in range(3, events + 2):
                await call_add(http, url, sid, rid, BOTH, size)
            length = await raw.xlen(key)
            (full,) = await usage(raw, [key])
            entries = await raw.xrange(key)
            payload = sum(len(fields[b"m"]) for _, fields in entries)
            print(
                f"\n3. one session's log holding {length} responses "
                f"({payload / length:.0f} B of JSON each on average)"
            )
            print(
                f"   MEMORY USAGE {one} B with 1 event, {full} B with {length}: "
                f"{(full - one) / (length - 1):.0f} B per retained event, "
                f"{(full - one - payload * (length - 1) / length) / (length - 1):.0f} B "
                "of it beyond the message's JSON"
            )
    finally:
        await raw.aclose()
        uv.should_exit = True
        await serving
        await store.aclose()
        sock.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions of each kind")
    parser.add_argument("--events", type=int, default=1000, help="events of the one long log")
    parser.add_argument(
        "--result-chars",
        type=int,
        default=0,
        help="make the long log's responses carry a text of this many characters "
        "(default: the small result of add)",
    )
    parser.add_argument(
        "--stream-node-max-bytes",
        type=int,
        help="CONFIG SET this in Redis first (its default is 4096)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcpkit-sizing-") as directory:
        redis = RedisServer(Path(directory))
        redis.start()
        try:
            asyncio.run(
                measure(
                    redis.url,
                    args.sessions,
                    args.events,
                    args.stream_node_max_bytes,
                    args.result_chars,
                )
            )
        finally:
            redis.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
