"""What the Redis stores add to the protocols: key layout, prefixes, ttls, bounds,
faults and the number of Redis commands each operation costs.

All against a real ``redis-server`` (tests/stores/conftest.py), inspected with a
plain ``redis`` client or with Redis's own ``INFO commandstats``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from redis.asyncio import Redis

from mcpkit import MCPServer
from mcpkit.errors import ConfigurationError, StoreUnavailable
from mcpkit.stores import SessionRecord
from mcpkit.stores.redis import RedisStore, redact_url
from tests.redis_server import RedisServer, free_port
from tests.stores.conformance import note, replay


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisStore]:
    made = RedisStore(redis_url, prefix=f"t-{uuid4().hex}:")
    try:
        yield made
    finally:
        await made.aclose()


def record(sid: str = "sid-1") -> SessionRecord:
    return SessionRecord(sid, "2025-11-25", {"name": "c", "version": "1"}, {}, "info", None)


# -- key layout and prefixes -------------------------------------------------------------------


async def test_keys_follow_the_documented_layout(store: RedisStore, raw: Redis) -> None:
    p = store.prefix
    await store.sessions.create(record("s1"), 60)
    await store.events.store_event("s1/1", note(1))
    await store.input_rounds.claim("call.1", time.time() + 60)
    await store.events.store_event("s1/2", note(2))  # another stream of the session
    keys = sorted(k.decode() for k in await raw.keys(p + "*"))
    assert keys == [f"{p}events:s1", f"{p}round:call.1", f"{p}session:s1"]
    assert await raw.type(f"{p}events:s1") == b"stream"  # one log for the session's streams
    entries = await raw.xrange(f"{p}events:s1")
    assert [fields[b"s"] for _, fields in entries] == [b"1", b"2"]
    for key in keys:  # nothing is ever stored without an expiry
        assert 0 < await raw.pttl(key) <= 3600_000


async def test_stores_with_different_prefixes_do_not_see_each_other(redis_url: str) -> None:
    a = RedisStore(redis_url, prefix=f"a-{uuid4().hex}:")
    b = RedisStore(redis_url, prefix=f"b-{uuid4().hex}:")
    try:
        assert await a.sessions.create(record("same"), 60) is True
        assert await b.sessions.load("same") is None
        assert await b.sessions.create(record("same"), 60) is True  # its own id space
        assert await a.input_rounds.claim("call.1", time.time() + 60) is True
        assert await b.input_rounds.claim("call.1", time.time() + 60) is True
        first = await a.events.store_event("s/1", note(1))
        assert await replay(b.events, first) == (None, [])
        assert (await replay(a.events, first))[0] == "s/1"
        await b.sessions.delete("same")
        assert await a.sessions.load("same") is not None
    finally:
        await a.aclose()
        await b.aclose()


# -- ttls and bounds ---------------------------------------------------------------------------


async def test_a_session_key_expires_with_its_ttl(store: RedisStore, raw: Redis) -> None:
    await store.sessions.create(record("short"), 0.3)
    key = store.prefix + "session:short"
    assert 0 < await raw.pttl(key) <= 300
    await asyncio.sleep(0.6)
    assert await raw.exists(key) == 0
    assert await store.sessions.load("short") is None


async def test_swap_holder_returns_the_previous_holder_and_expires(
    store: RedisStore, raw: Redis
) -> None:
    # The holder of a session's GET stream (a cluster's new holder asks who held it).
    assert await store.sessions.swap_holder("s1", "node-a", 0.3) is None
    assert await store.sessions.swap_holder("s1", "node-b", 0.3) == "node-a"
    assert await store.sessions.swap_holder("s2", "node-c", 0.3) is None  # per session
    key = store.prefix + "gh:s1"
    assert await raw.get(key) == b"node-b" and 0 < await raw.pttl(key) <= 300
    await asyncio.sleep(0.6)
    assert await raw.exists(key) == 0
    assert await store.sessions.swap_holder("s1", "node-d", 60) is None


async def test_a_stream_expires_after_the_event_ttl(redis_url: str, raw: Redis) -> None:
    store = RedisStore(redis_url, prefix=f"t-{uuid4().hex}:", event_ttl=0.3)
    try:
        first = await store.events.store_event("s/1", note(1))
        await store.events.store_event("s/1", note(2))
        key = store.prefix + "events:s"
        assert 0 < await raw.pttl(key) <= 300
        await asyncio.sleep(0.6)
        assert await raw.exists(key) == 0
        assert await replay(store.events, first) == (None, [])
        # Written again after it expired: a new key, again with its ttl (never without).
        again = await store.events.store_event("s/1", note(3))
        assert 0 < await raw.pttl(key) <= 300
        assert await replay(store.events, first) == ("s/1", [(again, note(3))])
    finally:
        await store.aclose()


async def test_the_stream_ttl_is_refreshed_by_later_events(redis_url: str, raw: Redis) -> None:
    store = RedisStore(redis_url, prefix=f"t-{uuid4().hex}:", event_ttl=0.8)
    try:
        first = await store.events.store_event("s/1", note(0))
        for i in range(1, 6):  # 1 s of events, each 0.2 s apart: past the first ttl
            await asyncio.sleep(0.2)
            await store.events.store_event("s/1", note(i))
        _, got = await replay(store.events, first)
        assert [m["params"]["data"] for _, m in got] == [1, 2, 3, 4, 5]
    finally:
        await store.aclose()


async def test_an_input_round_claim_expires_with_its_state(store: RedisStore, raw: Redis) -> None:
    expires_at = time.time() + 0.4
    assert await store.input_rounds.claim("call.1", expires_at) is True
    key = store.prefix + "round:call.1"
    assert 0 < await raw.pttl(key) <= 500
    assert await store.input_rounds.claim("call.1", expires_at) is False
    await asyncio.sleep(0.7)
    assert await raw.exists(key) == 0


async def test_a_session_log_keeps_about_event_max_len_events(redis_url: str, raw: Redis) -> None:
    store = RedisStore(redis_url, prefix=f"t-{uuid4().hex}:", event_max_len=10)
    try:
        ids = [await store.events.store_event("s/1", note(i)) for i in range(500)]
        length = await raw.xlen(store.prefix + "events:s")
        # MAXLEN ~ trims whole stream nodes (up to 100 entries each): "about" 10.
        assert 10 <= length <= 110
        _, got = await replay(store.events, ids[0])  # a partial replay of what is left
        assert len(got) == length
        assert [m["params"]["data"] for _, m in got] == list(range(500 - length, 500))
    finally:
        await store.aclose()


async def test_a_sessions_streams_are_deleted_when_it_ends(store: RedisStore, raw: Redis) -> None:
    for n in range(3):
        await store.events.store_event(f"sid/{n}", note(n))
    await store.events.store_event("other/1", note(9))
    await store.events.delete_streams([f"sid/{n}" for n in range(4)])  # /3 never written
    keys = sorted(k.decode() for k in await raw.keys(store.prefix + "*"))
    assert keys == [store.prefix + "events:other"]  # the session's log went with its streams


async def test_deleting_some_streams_of_a_session_keeps_the_others(
    store: RedisStore, raw: Redis
) -> None:
    first = await store.events.store_event("sid/1", note(1))
    kept = await store.events.store_event("sid/2", note(2))
    later = await store.events.store_event("sid/2", note(3))
    await store.events.delete_streams(["sid/1"])
    assert await raw.xlen(store.prefix + "events:sid") == 2
    assert await replay(store.events, first) == (None, [])
    assert await replay(store.events, kept) == ("sid/2", [(later, note(3))])


async def test_a_priming_id_replays_the_whole_stream_once_in_order(store: RedisStore) -> None:
    priming = await store.events.store_event("s/1", None)
    ids = [await store.events.store_event("s/1", note(i)) for i in range(5)]
    assert await replay(store.events, priming) == ("s/1", [(i, note(n)) for n, i in enumerate(ids)])
    # Each later id replays exactly what follows it.
    for n, event_id in enumerate(ids):
        _, got = await replay(store.events, event_id)
        assert [m["params"]["data"] for _, m in got] == list(range(n + 1, 5))


@pytest.mark.parametrize("bad", ["s/1#99999999999999999999999-0", "s/1#1-2-3", "s/1#-1-0"])
async def test_positions_redis_would_refuse_replay_nothing(store: RedisStore, bad: str) -> None:
    await store.events.store_event("s/1", note(1))
    assert await replay(store.events, bad) == (None, [])  # no StoreUnavailable, no Redis error


# -- what each operation costs ------------------------------------------------------------------


async def test_each_operation_costs_the_documented_commands(own_redis: RedisServer) -> None:
    store = RedisStore(own_redis.url, prefix="cost:")
    await store.connect()

    async def cost(operation: Any) -> dict[str, int]:
        own_redis.reset_stats()
        await operation
        return own_redis.command_counts()

    try:
        assert await cost(store.sessions.create(record("s"), 60)) == {"set": 1}
        assert await cost(store.sessions.load("s")) == {"get": 1}
        assert await cost(store.sessions.save(record("s"), 60)) == {"set": 1}
        await store.sessions.touch("s", 60)  # loads the script once
        assert await cost(store.sessions.touch("s", 60)) == {
            "evalsha": 1,
            "pexpire": 1,
            "setrange": 1,
        }
        assert await cost(store.sessions.delete("s")) == {"del": 1}
        # A stream's priming event costs nothing; the first event of a session's log
        # XADD + PEXPIRE (one round trip), every later one XADD only, whatever its stream.
        own_redis.reset_stats()
        priming = await store.events.store_event("s/1", None)
        assert own_redis.command_counts() == {}
        assert await cost(store.events.store_event("s/1", note(1))) == {"xadd": 1, "pexpire": 1}
        assert await cost(store.events.store_event("s/1", note(2))) == {"xadd": 1}
        assert await cost(store.events.store_event("s/2", None)) == {}  # priming of another
        assert await cost(store.events.store_event("s/2", note(3))) == {"xadd": 1}
        assert await cost(store.events.store_event("s/1", None)) == {"xadd": 1}  # mid-stream
        sent: list[Any] = []

        async def send(event_id: str, message: dict[str, Any]) -> None:
            sent.append(message)

        assert await cost(store.events.replay_events_after(priming, send)) == {"xrange": 1}
        assert sent == [note(1), note(2)]
        await store.events.delete_streams(["x/1"])  # loads the script once
        assert await cost(store.events.delete_streams(["s/0", "s/1", "s/2"])) == {
            "evalsha": 1,
            "xrange": 1,
            "xdel": 1,
            "xlen": 1,
            "del": 1,
        }
        assert await cost(store.input_rounds.claim("c.1", time.time() + 60)) == {"set": 1}
    finally:
        await store.aclose()


# -- faults ------------------------------------------------------------------------------------


def test_urls_are_shown_without_their_password() -> None:
    assert redact_url("redis://:hunter2@db:6379/0") == "redis://:***@db:6379/0"
    assert redact_url("rediss://me:hunter2@db/1") == "rediss://me:***@db/1"
    assert redact_url("redis://db:6379/0") == "redis://db:6379/0"
    assert "hunter2" not in redact_url("unix:///run/redis.sock?db=0&password=hunter2")


async def test_unreachable_at_start_names_the_url_and_hides_the_password() -> None:
    port = free_port()  # nothing listens there
    store = RedisStore(f"redis://:hunter2@127.0.0.1:{port}/0", connect_timeout=1, timeout=1)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as caught:
        await store.connect()
    assert time.monotonic() - started < 5
    text = str(caught.value)
    assert f"redis://:***@127.0.0.1:{port}/0" in text
    assert "hunter2" not in text and "hunter2" not in repr(store)
    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
        await store.sessions.load("x")  # every operation says the same
    await store.aclose()


async def test_an_http_app_does_not_start_when_redis_is_unreachable() -> None:
    port = free_port()
    server = MCPServer(name="s", version="1", store=RedisStore(f"redis://127.0.0.1:{port}/0"))
    app = server.http_app()
    sent: list[dict[str, Any]] = []
    inbox = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        return inbox.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "lifespan"}, receive, send)
    assert sent[0]["type"] == "lifespan.startup.failed"
    assert f"127.0.0.1:{port}" in sent[0]["message"]


def test_a_server_process_exits_at_start_naming_the_unreachable_redis(tmp_path: Path) -> None:
    port = free_port()
    app = tmp_path / "app.py"
    app.write_text(
        "from mcpkit import MCPServer\n"
        "from mcpkit.stores.redis import RedisStore\n"
        f"store = RedisStore('redis://:hunter2@127.0.0.1:{port}/0')\n"
        "MCPServer(name='s', version='1', store=store).run_http(port=0)\n"
    )
    out = subprocess.run(
        [sys.executable, str(app)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode != 0
    assert f"cannot reach Redis at redis://:***@127.0.0.1:{port}/0" in out.stderr
    assert "hunter2" not in out.stderr + out.stdout


async def test_redis_lost_fails_fast_and_the_store_recovers_by_itself(
    own_redis: RedisServer,
) -> None:
    store = RedisStore(own_redis.url, prefix="x:", connect_timeout=0.5, timeout=0.5)
    try:
        await store.connect()
        assert await store.sessions.create(record("a"), 60) is True
        # Redis hangs (stopped, its socket still open): bounded by the timeouts.
        assert own_redis.process is not None
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match=own_redis.url):
                await store.sessions.load("a")
            assert time.monotonic() - started < 3  # a timeout, one retry: never a hang
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        assert await store.sessions.load("a") is not None  # back: the same store works
        # Redis goes away altogether: refused at once.
        own_redis.stop()
        started = time.monotonic()
        for operation in (
            store.sessions.load("a"),
            store.events.store_event("s/1", note(1)),
            store.input_rounds.claim("c.1", time.time() + 60),
        ):
            with pytest.raises(StoreUnavailable):
                await operation
        assert time.monotonic() - started < 3
        # Redis returns on the same port (empty: no persistence): no new store needed.
        own_redis.start()
        assert await store.sessions.load("a") is None
        assert await store.sessions.create(record("a"), 60) is True
        first = await store.events.store_event("s/1", note(1))
        assert (await replay(store.events, first))[0] == "s/1"
        assert await store.input_rounds.claim("c.1", time.time() + 60) is True
    finally:
        await store.aclose()


# -- options and packaging ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"event_ttl": 0},
        {"timeout": -1},
        {"connect_timeout": 0},
        {"event_max_len": 0},
        {"max_connections": 1.5},
        {"prefix": None},
    ],
)
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="RedisStore"):
        RedisStore("redis://localhost:6379/0", **options)


def test_a_bad_url_is_refused_without_its_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        RedisStore("http://:hunter2@localhost/0")
    assert "hunter2" not in str(caught.value)


async def test_a_client_of_ones_own_is_used_and_left_open(redis_url: str) -> None:
    client = Redis.from_url(redis_url)
    store = RedisStore(client, prefix=f"t-{uuid4().hex}:")
    assert store.client is client and "127.0.0.1" in store.url
    assert await store.sessions.create(record(), 60) is True
    await store.aclose()
    assert await client.ping() is True
    await client.aclose()


def test_importing_mcpkit_and_its_stores_does_not_import_redis() -> None:
    code = (
        "import json, sys, mcpkit, mcpkit.stores, mcpkit.transports.streamable_http; "
        "print(json.dumps([m for m in sys.modules if m == 'redis' or m.startswith('redis.')]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == []
