"""What one event written to Redis costs the *client* process: CPU per ``XADD``, in process.

    python benchmarks/redis_xadd_cost.py [--calls N] [--quick]

``bench_cluster.py`` finds the SSE path of the Redis store well under the
in-memory one per server CPU-second; the difference is the one ``XADD`` per
call. This isolates that command on uvloop (as the HTTP servers run), against a
``redis-server`` started here, at 1 and 16 calls in flight, and prints the
process's CPU time per call (``time.process_time``; Redis's own CPU is not in
it) for:

* ``RedisStore.events.store_event``: mcpkit's event store as the server calls it
  (the ``XADD`` on the store's lane, ``stores/redis_lane.py``: one auto-pipelined
  connection; serialising the message included);
* ``... store_event_bytes``: the same given the message's bytes (the transport
  serialises once for the wire and the store);
* ``... lane off (redis-py)``: the store with its lane removed, i.e. the ``XADD``
  through redis-py (``BlockingConnectionPool``, one retry, socket timeouts), as
  before the lane;
* ``redis-py, default pool``: ``Redis.from_url(url).xadd(...)`` (``ConnectionPool``,
  no timeouts), the same command;
* ``one pipelined connection``: a bare asyncio protocol on one connection that
  writes every command issued in a loop turn with one ``transport.write`` and
  matches replies in order (``XADD`` only; an experiment, not a client).

Whether ``hiredis`` is installed (redis-py parses replies with it when it is) is
printed; the pipelined connection parses the one reply type it expects itself.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvloop
from _util import HERE, emit

sys.path.insert(0, str(HERE.parent / "tests"))
from redis_server import RedisServer

MESSAGE = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x" * 20}]}}


class Pipelined(asyncio.Protocol):
    """One connection; commands of one loop turn go out in one write; replies FIFO."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.waiting: deque[asyncio.Future[bytes]] = deque()
        self.out: list[bytes] = []
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # (uvloop's transports are not asyncio.Transport subclasses)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:  # XADD answers a bulk string ($<n>\r\n<id>\r\n) or an error (-...\r\n)
            head, sep, rest = self.buffer.partition(b"\r\n")
            if not sep:
                return
            if head[:1] == b"$":
                size = int(head[1:])
                if size < 0:
                    value, self.buffer = b"", rest
                elif len(rest) < size + 2:
                    return
                else:
                    value, self.buffer = rest[:size], rest[size + 2 :]
            else:
                value, self.buffer = head, rest
            self.waiting.popleft().set_result(value)

    def _flush(self) -> None:
        self.transport.write(b"".join(self.out))
        self.out.clear()

    def command(self, *args: bytes) -> asyncio.Future[bytes]:
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        if not self.out:
            asyncio.get_running_loop().call_soon(self._flush)
        self.out.append(b"".join(parts))
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.waiting.append(fut)
        return fut


async def per_call_us(call: Callable[[int], Awaitable[object]], n: int, inflight: int) -> float:
    async def worker(w: int) -> None:
        for i in range(n // inflight):
            await call(w * n + i)

    await asyncio.gather(*(worker(w) for w in range(inflight)))  # warm-up
    start = time.process_time()
    await asyncio.gather(*(worker(w) for w in range(inflight)))
    return 1e6 * (time.process_time() - start) / (n // inflight * inflight)


async def measure(url: str, port: int, n: int) -> None:
    import orjson
    from redis.asyncio import Redis

    from mcpkit.stores.redis import RedisStore

    store = RedisStore(url, prefix="cost:")
    await store.connect()
    no_lane = RedisStore(url, prefix="cost-no-lane:")
    no_lane._redis.lane = None  # the redis-py path, as before the lane
    await no_lane.connect()
    plain = Redis.from_url(url)
    loop = asyncio.get_running_loop()
    _, proto = await loop.create_connection(Pipelined, "127.0.0.1", port)
    key = b"cost:raw"

    async def via_store(i: int) -> object:
        return await store.events.store_event(f"s{i % 16}/1", MESSAGE)

    async def via_store_bytes(i: int) -> object:
        return await store.events.store_event_bytes(f"s{i % 16}/1", orjson.dumps(MESSAGE))

    async def via_store_no_lane(i: int) -> object:
        return await no_lane.events.store_event(f"s{i % 16}/1", MESSAGE)

    async def via_redis_py(i: int) -> object:
        data = orjson.dumps(MESSAGE)
        return await plain.xadd(
            "cost:plain", {b"s": b"1", b"m": data}, maxlen=256, approximate=True
        )

    async def via_pipelined(i: int) -> object:
        data = orjson.dumps(MESSAGE)
        args = (b"XADD", key, b"MAXLEN", b"~", b"256", b"*", b"s", b"1", b"m", data)
        return await proto.command(*args)

    import redis.utils

    emit(f"hiredis: {'yes' if redis.utils.HIREDIS_AVAILABLE else 'no'}; {n} XADDs per figure")
    for name, call in (
        ("RedisStore.events.store_event", via_store),
        ("  ... store_event_bytes", via_store_bytes),
        ("  ... lane off (redis-py)", via_store_no_lane),
        ("redis-py, default pool", via_redis_py),
        ("one pipelined connection", via_pipelined),
    ):
        figures = [await per_call_us(call, n, k) for k in (1, 16)]
        emit(f"  {name:<32} c=1 {figures[0]:6.1f} us   c=16 {figures[1]:6.1f} us  client CPU/XADD")
    await plain.aclose()
    await store.aclose()
    await no_lane.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcpkit-xadd-") as work:
        redis = RedisServer(Path(work))
        redis.start()
        try:
            uvloop.run(measure(redis.url, redis.port, 1600 if args.quick else args.calls))
        finally:
            redis.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
