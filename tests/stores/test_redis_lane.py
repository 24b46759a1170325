"""The hot-path lane (``mcpkit.stores.redis_lane``) against a real ``redis-server``.

One auto-pipelined connection: the commands of one loop turn leave in one write
and their replies come back matched in order, whatever their sizes (partial
reads); an error reply fails its command only; a lost or stuck Redis fails
every pending and new command with ``StoreUnavailable`` within the timeouts,
and the lane reconnects on the next command once Redis is back. Opened with the
store's URL: password (``AUTH``), user and password, db number (``SELECT``).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import orjson
import pytest
from redis.asyncio import Redis

from mcpkit.errors import StoreUnavailable
from mcpkit.stores.redis import RedisStore
from mcpkit.stores.redis_connection import lane_for, redact_url
from mcpkit.stores.redis_lane import RedisLane, _pack, _parse
from tests.redis_server import RedisServer


def make_lane(url: str, *, connect_timeout: float = 2.0, timeout: float = 2.0) -> RedisLane:
    lane = lane_for(
        Redis.from_url(url), redact_url(url), connect_timeout=connect_timeout, timeout=timeout
    )
    assert lane is not None
    return lane


@pytest.fixture
async def lane(redis_url: str) -> AsyncIterator[RedisLane]:
    made = make_lane(redis_url)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


class CountingTransport:
    """Passes everything to the real transport, counting the writes."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


async def test_commands_of_one_turn_leave_in_one_write_and_keep_their_order(
    lane: RedisLane, raw: Redis
) -> None:
    assert await lane.call(b"PING") == b"PONG"
    conn = lane._conn
    assert conn is not None
    counting = CountingTransport(conn.transport)
    conn.transport = counting
    key = f"lane-{uuid4().hex}"
    ids = await asyncio.gather(*(lane.call(b"XADD", key, b"*", b"n", str(i)) for i in range(200)))
    assert counting.writes == 1  # auto-pipelined: the 200 XADDs in one write
    positions = [tuple(int(p) for p in entry.split(b"-")) for entry in ids]
    assert positions == sorted(positions) and len(set(positions)) == 200  # increasing
    entries = await raw.xrange(key)
    assert [e[0] for e in entries] == ids  # the replies matched to their own commands
    assert [int(e[1][b"n"]) for e in entries] == list(range(200))  # sent in issue order
    assert await lane.call(b"DEL", key) == 1
    assert counting.writes == 2


async def test_many_concurrent_commands_of_random_sizes_are_all_answered_right(
    lane: RedisLane,
) -> None:
    rng = random.Random(1313)
    prefix = f"fuzz-{uuid4().hex}:"
    sizes = [rng.choice([0, 1, 10, 500, 4096, 65_535, 65_536, 70_000, 300_000]) for _ in range(120)]
    values = [rng.randbytes(size) + b"\r\n$*-:+" for size in sizes]  # RESP bytes inside data

    async def one(i: int) -> None:
        for _ in range(rng.randrange(3)):
            await asyncio.sleep(0)  # commands spread over several turns and writes
        key = f"{prefix}{i}"
        assert await lane.call(b"SET", key, values[i]) == b"OK"
        got, length, missing, pushed = await lane.call_many(
            (b"GET", key),
            (b"STRLEN", key),
            (b"GET", f"{prefix}missing-{i}"),
            (b"RPUSH", f"{prefix}list-{i}", values[i], b"", str(i)),
        )
        assert got == values[i]
        assert length == len(values[i])
        assert missing is None  # nil
        assert pushed == 3
        items = await lane.call(b"LRANGE", f"{prefix}list-{i}", 0, -1)
        assert items == [values[i], b"", str(i).encode()]  # an array of bulk strings

    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(len(values)))), 60)
    assert await lane.call(b"LRANGE", f"{prefix}none", 0, -1) == []  # an empty array
    keys = await lane.call(b"KEYS", prefix + "*")
    assert len(keys) == 2 * len(values)
    assert await lane.call(b"DEL", *keys) == len(keys)


def test_the_parser_waits_for_the_whole_reply_of_every_kind() -> None:
    cases: list[tuple[bytes, Any]] = [
        (b"+OK\r\n", b"OK"),
        (b":-42\r\n", -42),
        (b"$-1\r\n", None),
        (b"*-1\r\n", None),
        (b"$0\r\n\r\n", b""),
        (b"$7\r\nab\r\ncd\r\r\n", b"ab\r\ncd\r"),
        (b"*3\r\n$2\r\nhi\r\n:7\r\n*2\r\n$-1\r\n+x\r\n", [b"hi", 7, [None, b"x"]]),
    ]
    for data, value in cases:
        buf = bytearray(b"junk" + data + b"+next\r\n")
        for cut in range(4, 4 + len(data)):  # every strict prefix: not complete yet
            assert _parse(bytearray(buf[:cut]), 4) == (None, -1), (data, cut)
        assert _parse(buf, 4) == (value, 4 + len(data))
        assert _parse(buf, 4 + len(data)) == (b"next", len(buf))
    error, at = _parse(bytearray(b"-ERR wrong\r\n"), 0)
    assert type(error).__name__ == "_ErrorReply" and error.text == "ERR wrong" and at == 12
    assert _pack((b"SET", "k", 12)) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n12\r\n"


async def test_an_error_reply_fails_only_its_own_command(lane: RedisLane, redis_url: str) -> None:
    key = f"lane-{uuid4().hex}"
    replies = await asyncio.gather(
        lane.call(b"SET", key, b"text"),
        lane.call(b"INCR", key),  # not an integer
        lane.call(b"NOSUCHCOMMAND"),
        lane.call(b"GET", key),
        return_exceptions=True,
    )
    assert replies[0] == b"OK" and replies[3] == b"text"
    for failed in replies[1:3]:
        assert isinstance(failed, StoreUnavailable)
        assert f"Redis at {redis_url} is unavailable: ResponseError: ERR" in str(failed)
    conn = lane._conn
    with pytest.raises(StoreUnavailable, match="WRONGTYPE"):
        await lane.call_many((b"LPUSH", key, b"x"), (b"DEL", key))
    assert await lane.call(b"EXISTS", key) == 0  # the DEL after the failed LPUSH ran
    assert lane._conn is conn  # the connection stayed


async def test_a_stuck_or_stopped_redis_fails_commands_in_time_and_the_lane_recovers(
    own_redis: RedisServer,
) -> None:
    lane = make_lane(own_redis.url, connect_timeout=0.5, timeout=0.5)
    slow = make_lane(own_redis.url, connect_timeout=0.5, timeout=30)
    try:
        assert await lane.call(b"SET", b"k", b"1") == b"OK"
        assert await slow.call(b"PING") == b"PONG"
        assert own_redis.process is not None
        os.kill(own_redis.process.pid, signal.SIGSTOP)  # connected, never answers
        try:
            started = time.monotonic()
            results = await asyncio.gather(
                *(lane.call(b"GET", b"k") for _ in range(5)), return_exceptions=True
            )
            assert time.monotonic() - started < 1.5
            for failed in results:
                assert isinstance(failed, StoreUnavailable)
                assert f"Redis at {own_redis.url} is unavailable: TimeoutError" in str(failed)
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        # Pending on a live connection when Redis stops: they fail when it goes, at once.
        blocked = asyncio.ensure_future(slow.call(b"BLPOP", b"nothing", 0))
        behind = asyncio.ensure_future(slow.call(b"PING"))
        await asyncio.sleep(0.1)
        assert not blocked.done() and not behind.done()
        started = time.monotonic()
        await asyncio.to_thread(own_redis.stop)
        for pending in (blocked, behind):
            with pytest.raises(StoreUnavailable, match=f"Redis at {own_redis.url} is unavailable"):
                await asyncio.wait_for(pending, 5)
        assert time.monotonic() - started < 5
        # New commands while Redis is down: fail fast (refused), no retry loop.
        for _ in range(3):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match=f"Redis at {own_redis.url} is unavailable"):
                await lane.call(b"PING")
            assert time.monotonic() - started < 1.0
        await asyncio.to_thread(own_redis.start)
        assert await lane.call(b"PING") == b"PONG"  # the next command reconnects
        assert await lane.call(b"GET", b"k") is None  # (a new, empty Redis)
        assert await slow.call(b"PING") == b"PONG"
    finally:
        await lane.aclose()
        await slow.aclose()


async def test_a_connect_timeout_bounds_opening_the_connection() -> None:
    # A listening socket that never accepts nor answers: the connection (or its
    # handshake) never completes.
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        url = f"redis://:pw@127.0.0.1:{port}/1"
        lane = make_lane(url, connect_timeout=0.3, timeout=5)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="TimeoutError") as failed:
            await lane.call(b"PING")
        assert time.monotonic() - started < 1.5
        assert "pw" not in str(failed.value) and redact_url(url) in str(failed.value)
        await lane.aclose()


async def test_auth_with_a_password_a_user_and_a_db_number(tmp_path: Path) -> None:
    server = RedisServer(tmp_path, password="s3cret pass")  # (a space: sent as one argument)
    server.start()
    base = f"127.0.0.1:{server.port}"
    try:
        for url, db in (
            (f"redis://:s3cret%20pass@{base}/3", 3),
            (f"redis://default:s3cret%20pass@{base}/2", 2),  # AUTH <user> <password>
            (f"redis://:s3cret%20pass@{base}", 0),
        ):
            lane = make_lane(url)
            key = f"k-{uuid4().hex}"
            assert await lane.call(b"SET", key, str(db)) == b"OK"
            check = Redis(host="127.0.0.1", port=server.port, password="s3cret pass", db=db)
            assert await check.get(key) == str(db).encode()  # in the URL's db
            await check.aclose()
            await lane.aclose()
        wrong = make_lane(f"redis://:nope@{base}/4")
        with pytest.raises(StoreUnavailable, match=r"WRONGPASS|invalid password") as failed:
            await wrong.call(b"PING")
        assert "nope" not in str(failed.value)
        await wrong.aclose()
        # The store's events go through the lane, with the password and db of its URL.
        store = RedisStore(f"redis://:s3cret%20pass@{base}/5", prefix="auth:")
        server.reset_stats()
        first = await store.events.store_event("sid/1", {"n": 1})
        second = await store.events.store_event_bytes("sid/1", orjson.dumps({"n": 2}))
        assert store._redis.lane is not None and store._redis.lane._conn is not None
        counts = server.command_counts()
        assert counts == {"auth": 1, "select": 1, "xadd": 2, "pexpire": 1}  # AUTH, SELECT once
        replayed: list[tuple[str, Any]] = []

        async def send(event_id: str, message: dict[str, Any]) -> None:
            replayed.append((event_id, message))

        assert await store.events.replay_events_after("sid/1#0-1", send) == "sid/1"
        assert replayed == [(first, {"n": 1}), (second, {"n": 2})]
        check = Redis(host="127.0.0.1", port=server.port, password="s3cret pass", db=5)
        assert await check.exists("auth:events:sid") == 1
        await check.aclose()
        await store.aclose()
    finally:
        server.stop()


def test_clients_the_lane_cannot_open_keep_redis_py() -> None:
    from redis.asyncio import ConnectionPool
    from redis.asyncio.connection import Connection
    from redis.credentials import UsernamePasswordCredentialProvider

    class Custom(Connection):
        pass

    own = Redis(connection_pool=ConnectionPool(connection_class=Custom))
    assert lane_for(own, "x", connect_timeout=1, timeout=1) is None
    provider = Redis(credential_provider=UsernamePasswordCredentialProvider("u", "p"))
    assert lane_for(provider, "x", connect_timeout=1, timeout=1) is None
    tls = lane_for(
        Redis.from_url("rediss://h:7/1?ssl_cert_reqs=none"), "x", connect_timeout=1, timeout=1
    )
    assert tls is not None and tls.address.ssl is not None and tls.address.db == 1
    unix = lane_for(Redis.from_url("unix:///tmp/r.sock?db=2"), "x", connect_timeout=1, timeout=1)
    assert unix is not None and unix.address.path == "/tmp/r.sock" and unix.address.db == 2


def test_a_lane_used_from_another_event_loop_opens_a_connection_there(redis_url: str) -> None:
    lane = make_lane(redis_url)

    async def use() -> tuple[Any, Any]:
        reply = await lane.call(b"PING")
        return reply, lane._conn

    one, two = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        first_reply, first = one.run_until_complete(use())
        second_reply, second = two.run_until_complete(use())
        assert first_reply == second_reply == b"PONG"
        assert first is not second and first.loop is one and second.loop is two
        # The first loop's connection is dropped, on its own loop, when that loop runs.
        one.run_until_complete(asyncio.sleep(0.05))
        assert first.lost and not second.lost
        two.run_until_complete(lane.aclose())
        assert second.lost
    finally:
        one.close()
        two.close()
