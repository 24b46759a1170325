"""The cluster bus on Redis (:class:`mcpkit.stores.redis_bus.RedisBus`): directed and
broadcast messages, joined channels, node liveness, prefixes, losing Redis and getting
it back. Against a real ``redis-server`` (tests/stores/conftest.py), several buses in
one process standing for the nodes of a cluster (one in a child process where it must
die without closing).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from redis.asyncio import Redis

from mcpkit.errors import StoreUnavailable
from mcpkit.stores import Bus, MemoryStore
from mcpkit.stores.redis import RedisStore
from mcpkit.stores.redis_bus import RedisBus
from tests.redis_server import RedisServer, free_port
from tests.stores.conformance import note, replay


class Inbox:
    """A bus handler that keeps what it is given."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    def __call__(self, channel: str, message: dict[str, Any]) -> None:
        self.queue.put_nowait((channel, message))

    async def next(self, timeout: float = 2.0) -> tuple[str, dict[str, Any]]:
        return await asyncio.wait_for(self.queue.get(), timeout)

    async def nothing(self, wait: float = 0.3) -> None:
        await asyncio.sleep(wait)
        assert self.queue.empty(), self.queue.get_nowait()


Starter = Callable[..., Any]


@pytest.fixture
async def nodes(redis_url: str) -> AsyncIterator[Starter]:
    """``await nodes(prefix=..., **options)`` -> a started ``(bus, inbox)``; all closed after."""
    made: list[RedisBus] = []
    default_prefix = f"bus-{uuid4().hex}:"

    async def start(prefix: str = default_prefix, **options: Any) -> tuple[RedisBus, Inbox]:
        bus = RedisBus(redis_url, prefix=prefix, **options)
        made.append(bus)
        inbox = Inbox()
        await bus.start(inbox)
        return bus, inbox

    try:
        yield start
    finally:
        for bus in made:
            await bus.aclose()


@pytest.fixture
async def raw(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


# -- messages ----------------------------------------------------------------------------------


async def test_each_bus_has_its_own_node_id(nodes: Starter) -> None:
    (a, _), (b, _) = await nodes(), await nodes()
    assert isinstance(a, Bus)
    for bus in (a, b):
        assert re.fullmatch(r"[a-z2-7]{8}", bus.node_id)
    assert a.node_id != b.node_id


async def test_a_directed_message_reaches_only_its_node(nodes: Starter) -> None:
    (a, inbox_a), (b, inbox_b) = await nodes(), await nodes()
    assert await a.publish(f"n:{b.node_id}", {"k": "a", "msg": {"id": 1}}) == 1
    assert await inbox_b.next() == (f"n:{b.node_id}", {"k": "a", "msg": {"id": 1}})
    await inbox_a.nothing()
    assert await b.publish("n:nobody42", {"k": "a"}) == 0  # no such node: nobody got it


async def test_a_broadcast_reaches_every_node_the_sender_too(nodes: Starter) -> None:
    (a, inbox_a), (_, inbox_b) = await nodes(), await nodes()
    assert await a.publish("bc", {"k": "b", "o": a.node_id, "m": "x"}) == 2
    for inbox in (inbox_a, inbox_b):
        assert await inbox.next() == ("bc", {"k": "b", "o": a.node_id, "m": "x"})


async def test_messages_arrive_in_the_order_they_were_published(nodes: Starter) -> None:
    (a, _), (b, inbox_b) = await nodes(), await nodes()
    for i in range(200):
        await a.publish(f"n:{b.node_id}", {"i": i})
    assert [(await inbox_b.next())[1]["i"] for _ in range(200)] == list(range(200))


async def test_join_and_leave_a_session_channel(nodes: Starter) -> None:
    (a, inbox_a), (b, inbox_b) = await nodes(), await nodes()
    assert await a.publish("c:x", {"id": "x/0#1-0"}) == 0
    await b.join("c:x")
    await b.join("c:x")  # idempotent: still one subscription
    assert await a.publish("c:x", {"id": "x/0#2-0"}) == 1
    assert await inbox_b.next() == ("c:x", {"id": "x/0#2-0"})
    await b.leave("c:x")
    await b.leave("c:x")  # idempotent
    assert await a.publish("c:x", {"id": "x/0#3-0"}) == 0
    await b.join("c:x")  # and back
    assert await a.publish("c:x", {"id": "x/0#4-0"}) == 1
    assert await inbox_b.next() == ("c:x", {"id": "x/0#4-0"})
    await inbox_a.nothing(0.1)
    await inbox_b.nothing(0.1)


async def test_a_failing_handler_or_a_bad_message_does_not_stop_the_reader(
    redis_url: str, raw: Redis
) -> None:
    bus = RedisBus(redis_url, prefix=f"bus-{uuid4().hex}:")
    got: list[dict[str, Any]] = []

    def handler(channel: str, message: dict[str, Any]) -> None:
        if message.get("boom"):
            raise ValueError("boom")
        got.append(message)

    await bus.start(handler)
    try:
        channel = f"{bus.prefix}n:{bus.node_id}"
        await raw.publish(channel, b"not json")
        await raw.publish(channel, b"[1, 2]")  # JSON, but not an object
        await bus.publish(f"n:{bus.node_id}", {"boom": True})
        await bus.publish(f"n:{bus.node_id}", {"after": 1})
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.02)
        assert got == [{"after": 1}]
    finally:
        await bus.aclose()


async def test_buses_with_different_prefixes_do_not_hear_each_other(nodes: Starter) -> None:
    (a, inbox_a), (b, inbox_b) = (
        await nodes(prefix="p1-" + uuid4().hex),
        await nodes(prefix="p2-" + uuid4().hex),
    )
    assert await a.publish("bc", {"from": "a"}) == 1  # a itself only
    await b.join("c:same")
    assert await a.publish("c:same", {"from": "a"}) == 0
    assert await inbox_a.next() == ("bc", {"from": "a"})
    await inbox_b.nothing()
    assert await a.node_alive(b.node_id) is False
    assert await b.node_alive(b.node_id) is True


# -- liveness ----------------------------------------------------------------------------------


async def test_the_node_key_is_refreshed_and_deleted_on_close(redis_url: str, raw: Redis) -> None:
    a = RedisBus(redis_url, prefix=f"bus-{uuid4().hex}:", node_ttl=0.5)
    b = RedisBus(redis_url, prefix=a.prefix)
    await a.start(Inbox())
    await b.start(Inbox())
    try:
        key = f"{a.prefix}node:{a.node_id}"
        assert 0 < await raw.pttl(key) <= 500
        value = await raw.get(key)
        assert value is not None and b'"pid":' + str(os.getpid()).encode() in value
        await asyncio.sleep(1.2)  # more than twice its ttl: alive because refreshed
        assert await b.node_alive(a.node_id) is True
        await a.aclose()
        assert await b.node_alive(a.node_id) is False
        assert await raw.exists(key) == 0
    finally:
        await a.aclose()
        await b.aclose()


def bus_process(redis_url: str, prefix: str, node_ttl: float) -> subprocess.Popen[bytes]:
    """A child process running a started bus; it prints its node id."""
    code = textwrap.dedent(
        f"""
        import asyncio, sys
        from mcpkit.stores.redis_bus import RedisBus

        async def main():
            bus = RedisBus({redis_url!r}, prefix={prefix!r}, node_ttl={node_ttl!r})
            await bus.start(lambda channel, message: None)
            print(bus.node_id, flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
        """
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)


async def test_a_killed_node_is_dead_at_once_though_its_key_lives(
    redis_url: str, raw: Redis
) -> None:
    # Issue 18 item 9: Redis drops the subscriptions of a connection the kernel closed
    # for a killed process; the key would say "alive" for node_ttl more seconds.
    prefix = f"bus-{uuid4().hex}:"
    child = bus_process(redis_url, prefix, 30.0)
    observer = RedisBus(redis_url, prefix=prefix)
    await observer.start(Inbox())
    try:
        assert child.stdout is not None
        node_id = (await asyncio.to_thread(child.stdout.readline)).decode().strip()
        assert await observer.node_alive(node_id) is True
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        killed = time.monotonic()
        while await observer.node_alive(node_id):
            assert time.monotonic() - killed < 1.0, "still alive 1 s after kill -9"
            await asyncio.sleep(0.01)
        assert await raw.exists(f"{prefix}node:{node_id}") == 1  # its key is still there
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        await observer.aclose()


DOCUMENTED_ACL = re.search(
    r"^  user mcpkit on (.*)$",
    (Path(__file__).parents[2] / "docs" / "deployment.md").read_text(),
    re.MULTILINE,
)


async def acl_user(raw: Redis, redis_url: str, prefix: str, *, numsub: bool) -> str:
    """A URL with a new ACL user of docs/deployment.md's rules, on ``prefix``'s keys and
    channels (without ``+pubsub|numsub`` unless ``numsub``)."""
    assert DOCUMENTED_ACL is not None
    name, password = f"u-{uuid4().hex[:12]}", uuid4().hex
    rules = DOCUMENTED_ACL[1].replace("mcpkit:*", prefix + "*").split()
    rules = [f">{password}" if r.startswith(">") else r for r in rules]
    assert "+pubsub|numsub" in rules  # the documented user may ask who is alive
    if not numsub:
        rules.remove("+pubsub|numsub")
    await raw.acl_setuser(name, reset=True)
    await raw.execute_command("ACL", "SETUSER", name, "on", *rules)
    return redis_url.replace("redis://", f"redis://{name}:{password}@")


@pytest.mark.parametrize("numsub", [True, False])
async def test_liveness_with_the_documented_acl_user(
    redis_url: str, raw: Redis, numsub: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # Without +pubsub|numsub (an ACL written before the signal) the key alone tells, as
    # before, with one warning.
    prefix = f"acl-{uuid4().hex}:"
    url = await acl_user(raw, redis_url, prefix, numsub=numsub)
    a, b = RedisBus(url, prefix=prefix), RedisBus(url, prefix=prefix)
    await a.start(Inbox())
    await b.start(Inbox())
    try:
        for _ in range(2):
            assert await b.node_alive(a.node_id) is True
        await a.aclose()
        assert await b.node_alive(a.node_id) is False
    finally:
        await a.aclose()
        await b.aclose()
        await raw.acl_deluser(url.split("//")[1].split(":")[0])
    warned = [r for r in caplog.records if "PUBSUB NUMSUB" in r.getMessage()]
    assert len(warned) == (0 if numsub else 1), [r.getMessage() for r in warned]


async def test_a_killed_node_is_dead_once_its_key_expires(redis_url: str) -> None:
    prefix = f"bus-{uuid4().hex}:"
    child = bus_process(redis_url, prefix, 0.5)
    observer = RedisBus(redis_url, prefix=prefix)
    await observer.start(Inbox())
    try:
        assert child.stdout is not None
        node_id = (await asyncio.to_thread(child.stdout.readline)).decode().strip()
        assert await observer.node_alive(node_id) is True
        await asyncio.sleep(0.8)
        assert await observer.node_alive(node_id) is True  # its heartbeat goes on
        os.kill(child.pid, signal.SIGKILL)  # no aclose: the key must expire by itself
        child.wait()
        await asyncio.sleep(0.7)
        assert await observer.node_alive(node_id) is False
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        await observer.aclose()


# -- faults ------------------------------------------------------------------------------------


async def test_start_against_a_closed_port_raises_naming_the_url() -> None:
    port = free_port()
    bus = RedisBus(f"redis://:hunter2@127.0.0.1:{port}/0", connect_timeout=0.5, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}") as caught:
        await bus.start(Inbox())
    assert time.monotonic() - started < 3
    assert "hunter2" not in str(caught.value)
    await bus.aclose()


async def test_the_bus_comes_back_after_redis_restarts(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpkit.stores.redis_bus")
    prefix = "restart:"
    a = RedisBus(own_redis.url, prefix=prefix, node_ttl=3.0, connect_timeout=0.5, timeout=0.5)
    b = RedisBus(own_redis.url, prefix=prefix, node_ttl=3.0, connect_timeout=0.5, timeout=0.5)
    inbox_a, inbox_b = Inbox(), Inbox()
    back = asyncio.Event()
    a.on_reconnect(back.set)
    await a.start(inbox_a)
    await b.start(inbox_b)
    try:
        await a.join("c:s1")
        own_redis.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=own_redis.url):
            await b.publish("c:s1", {"lost": True})
        assert time.monotonic() - started < 2
        await asyncio.sleep(1.2)  # a few reconnection attempts fail meanwhile
        assert not back.is_set()
        own_redis.start()  # same port, empty (no persistence)
        await asyncio.wait_for(back.wait(), 5)
        # Every channel is subscribed again, and the heartbeat is back.
        assert await b.publish("c:s1", {"i": 1}) == 1
        assert await b.publish(f"n:{a.node_id}", {"i": 2}) == 1
        assert await inbox_a.next() == ("c:s1", {"i": 1})
        assert await inbox_a.next() == (f"n:{a.node_id}", {"i": 2})
        for _ in range(50):  # b reconnects on its own schedule
            if await a.publish("bc", {"i": 3}) == 2:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("b never subscribed bc again")
        assert await b.node_alive(a.node_id) is True
        await a.join("c:s2")  # joining works on the new connection
        assert await b.publish("c:s2", {"i": 4}) == 1
    finally:
        await a.aclose()
        await b.aclose()
    warnings = [
        r for r in caplog.records if r.levelno == logging.WARNING and a.node_id in r.getMessage()
    ]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # once per outage
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def _until(what: str, seconds: float, check: Callable[[], bool]) -> None:
    """Poll ``check`` until true; fail within ``seconds`` saying what did not happen."""
    try:
        async with asyncio.timeout(seconds):
            while not check():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"{what} within {seconds} s") from None


async def test_a_silent_redis_is_noticed_by_the_idle_ping(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A frozen server closes no connection: only an unanswered PING tells the bus.
    # Every wait is bounded and says what failed (a loaded machine may be slow, never hang),
    # and the server stays frozen until the bus said it noticed (its one warning), so a
    # stalled test process cannot miss the outage.
    caplog.set_level(logging.WARNING, logger="mcpkit.stores.redis_bus")
    bus = RedisBus(own_redis.url, prefix="frozen:", node_ttl=1.5, connect_timeout=0.5, timeout=0.5)
    back = asyncio.Event()
    bus.on_reconnect(back.set)
    inbox = Inbox()
    await bus.start(inbox)
    assert own_redis.process is not None
    try:
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        try:  # idle 0.5 s, then no PONG within 0.5 s
            await _until(
                "the bus did not notice the frozen Redis",
                10,
                lambda: any("no answer to PING" in r.getMessage() for r in caplog.records),
            )
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        # on_reconnect runs once Redis confirmed every subscription: publishing is safe.
        await _until("the bus did not get Redis back", 10, back.is_set)
        assert await bus.publish(f"n:{bus.node_id}", {"after": True}) == 1
        assert await inbox.next() == (f"n:{bus.node_id}", {"after": True})
    finally:
        async with asyncio.timeout(5):
            await bus.aclose()


async def test_join_while_redis_is_down_fails_within_the_timeout(own_redis: RedisServer) -> None:
    bus = RedisBus(own_redis.url, prefix="down:", connect_timeout=0.5, timeout=0.5)
    await bus.start(Inbox())
    try:
        own_redis.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="c:s1"):
            await bus.join("c:s1")
        assert time.monotonic() - started < 2
        await bus.leave("c:s1")  # nothing to leave; never raises
    finally:
        await bus.aclose()


# -- on the store ------------------------------------------------------------------------------


async def test_a_redis_store_is_shared_and_gives_a_bus_with_its_prefix(
    redis_url: str, raw: Redis
) -> None:
    assert MemoryStore().shared is False
    store = RedisStore(redis_url, prefix=f"st-{uuid4().hex}:", node_ttl=2.0)
    assert store.shared is True
    bus = store.bus
    assert bus is store.bus and isinstance(bus, Bus)
    assert bus.prefix == store.prefix and bus.node_ttl == 2.0
    inbox = Inbox()
    await bus.start(inbox)
    key = f"{store.prefix}node:{bus.node_id}"
    assert 0 < await raw.pttl(key) <= 2000
    assert await raw.publish(f"{store.prefix}bc", b'{"k":"b"}') == 1
    assert await inbox.next() == ("bc", {"k": "b"})
    await store.aclose()  # closes the bus too
    assert await raw.exists(key) == 0
    assert await raw.publish(f"{store.prefix}bc", b"{}") == 0


async def test_the_bus_reads_bytes_whatever_the_clients_decoding(redis_url: str) -> None:
    client = Redis.from_url(redis_url, decode_responses=True)
    store = RedisStore(client, prefix=f"st-{uuid4().hex}:")
    try:
        inbox = Inbox()
        await store.bus.start(inbox)
        await store.bus.join("c:s")
        assert await store.bus.publish("c:s", {"ü": [1]}) == 1
        assert await inbox.next() == ("c:s", {"ü": [1]})
        assert await store.bus.node_alive(store.bus.node_id) is True
    finally:
        await store.aclose()
        await client.aclose()


async def test_the_request_state_key_is_one_per_prefix(redis_url: str) -> None:
    prefix = f"rsk-{uuid4().hex}:"
    a, b = RedisStore(redis_url, prefix=prefix), RedisStore(redis_url, prefix=prefix)
    other = RedisStore(redis_url, prefix=f"rsk-{uuid4().hex}:")
    try:
        keys = await asyncio.gather(a.request_state_key(), b.request_state_key())
        assert keys[0] == keys[1] and len(keys[0]) == 32
        assert await a.request_state_key() == keys[0]  # kept
        assert await other.request_state_key() != keys[0]
    finally:
        for store in (a, b, other):
            await store.aclose()


async def test_the_request_state_key_fails_fast_without_redis() -> None:
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.5, timeout=0.5)
    try:
        with pytest.raises(StoreUnavailable):
            await store.request_state_key()
    finally:
        await store.aclose()


# -- the standalone stream across nodes: append_and_publish, read_after -------------------------


def entry_of(event_id: str) -> tuple[int, int]:
    ms, _, seq = event_id.rpartition("#")[2].partition("-")
    return int(ms), int(seq)


@pytest.fixture
async def two_stores(redis_url: str) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    prefix = f"ev-{uuid4().hex}:"
    a, b = RedisStore(redis_url, prefix=prefix), RedisStore(redis_url, prefix=prefix)
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


async def test_standalone_events_are_delivered_in_their_id_order(
    two_stores: tuple[RedisStore, RedisStore], raw: Redis
) -> None:
    a, b = two_stores
    inbox = Inbox()
    await b.bus.start(inbox)  # b holds the session's GET stream
    await b.bus.join("c:s1")

    async def emit(store: RedisStore, who: str) -> list[str]:
        ids = []
        for i in range(50):
            event_id, receivers = await store.events.append_and_publish(
                "s1", note(i) | {"who": who}
            )
            assert receivers == 1
            ids.append(event_id)
        return ids

    ids_a, ids_b = await asyncio.gather(emit(a, "a"), emit(b, "b"))
    delivered = [await inbox.next() for _ in range(100)]
    assert {channel for channel, _ in delivered} == {"c:s1"}
    order = [message["id"] for _, message in delivered]
    assert order == sorted(order, key=entry_of)  # the publish order is the id order
    assert sorted(order) == sorted(ids_a + ids_b)
    assert all(i.startswith("s1/0#") for i in order)
    # The messages as given, and the same ones in the log, in the same order.
    by_id = {message["id"]: message["m"] for _, message in delivered}
    assert [by_id[i]["params"]["data"] for i in ids_a] == list(range(50))
    logged = await raw.xrange(f"{a.prefix}events:s1")
    assert [f"s1/0#{entry.decode()}" for entry, _ in logged] == order
    assert {fields[b"s"] for _, fields in logged} == {b"0"}
    await inbox.nothing(0.1)


async def test_append_and_publish_gives_the_log_a_ttl(
    two_stores: tuple[RedisStore, RedisStore], raw: Redis
) -> None:
    a, _ = two_stores
    event_id, receivers = await a.events.append_and_publish("s2", note(1))
    assert receivers == 0  # nobody holds its GET: logged all the same
    key = f"{a.prefix}events:s2"
    assert 0 < await raw.pttl(key) <= a.events.ttl * 1000
    # A log that somehow has no ttl gets one; one that has keeps it.
    await raw.persist(key)
    await a.events.append_and_publish("s2", note(2))
    assert 0 < await raw.pttl(key) <= a.events.ttl * 1000
    await raw.pexpire(key, 50_000)
    await a.events.append_and_publish("s2", note(3))
    assert 0 < await raw.pttl(key) <= 50_000
    # The standalone stream's events replay like any other stream's.
    got = await replay(a.events, event_id)
    assert [m["params"]["data"] for _, m in got[1]] == [2, 3]


async def test_read_after_returns_the_streams_events_after_an_id(
    two_stores: tuple[RedisStore, RedisStore],
) -> None:
    a, b = two_stores
    first = await a.events.store_event("s/1", note(1))
    await a.events.store_event("s/2", note(100))  # another stream of the session
    second = await a.events.store_event("s/1", note(2))
    await a.events.store_event("s/1", None)  # a priming position mid-stream: no event
    last_other = await a.events.store_event("s/2", note(101))
    read = await b.events.read_after("s/1", first, 0)
    assert read.events == [(second, note(2))]
    assert read.position == "s/1#" + last_other.rpartition("#")[2]  # read up to the end
    events, position = await b.events.read_after("s/1", None, 0)  # from the start
    assert events == [(first, note(1)), (second, note(2))]
    assert await b.events.read_after("s/1", position, 0) == ([], position)  # caught up
    priming = await a.events.store_event("s/3", None)  # before any entry of the stream
    third = await a.events.store_event("s/3", note(3))
    assert (await b.events.read_after("s/3", priming, 0)).events == [(third, note(3))]
    with pytest.raises(ValueError, match="not an event id"):
        await b.events.read_after("s/1", "garbage", 0)


async def test_read_after_waits_for_an_event_another_node_appends(
    two_stores: tuple[RedisStore, RedisStore],
) -> None:
    a, b = two_stores
    first = await a.events.store_event("w/1", note(1))
    started = time.monotonic()
    reading = asyncio.create_task(b.events.read_after("w/1", first, 5000))
    await asyncio.sleep(0.3)
    assert not reading.done()
    await a.events.store_event("w/2", note(50))  # another stream: read past, still waiting
    await asyncio.sleep(0.2)
    assert not reading.done()
    appended = await a.events.store_event("w/1", note(2))
    events, position = await asyncio.wait_for(reading, 2)
    assert events == [(appended, note(2))]
    assert position == appended
    assert time.monotonic() - started < 2


async def test_read_after_returns_nothing_after_block_ms(
    two_stores: tuple[RedisStore, RedisStore],
) -> None:
    a, b = two_stores
    first = await a.events.store_event("q/1", note(1))
    other = await a.events.store_event("q/2", note(2))
    started = time.monotonic()
    events, position = await b.events.read_after("q/1", first, 400)
    elapsed = time.monotonic() - started
    assert events == []
    assert position == "q/1#" + other.rpartition("#")[2]  # past the other stream's entry
    assert 0.35 < elapsed < 1.5


async def test_waiting_readers_do_not_hold_the_shared_pool(redis_url: str) -> None:
    store = RedisStore(redis_url, prefix=f"ev-{uuid4().hex}:", max_connections=2)
    try:
        first = await store.events.store_event("p/1", note(1))
        reads = [asyncio.create_task(store.events.read_after("p/1", first, 1500)) for _ in range(5)]
        await asyncio.sleep(0.2)  # all five are blocked in XREAD now
        started = time.monotonic()
        for _ in range(3):  # the two pooled connections are free for other commands
            assert await store.sessions.load("nothing") is None
        assert time.monotonic() - started < 0.5
        assert not any(read.done() for read in reads)
        second = await store.events.store_event("p/1", note(2))
        for read in reads:
            assert (await asyncio.wait_for(read, 2)).events == [(second, note(2))]
    finally:
        await store.aclose()


async def test_read_after_fails_fast_without_redis(own_redis: RedisServer) -> None:
    store = RedisStore(own_redis.url, prefix="x:", connect_timeout=0.5, timeout=0.5)
    try:
        first = await store.events.store_event("s/1", note(1))
        own_redis.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=own_redis.url):
            await store.events.read_after("s/1", first, 300)
        assert time.monotonic() - started < 3
    finally:
        await store.aclose()
