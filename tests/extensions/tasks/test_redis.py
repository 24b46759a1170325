"""RedisTaskStore passes the task store conformance suite on a real ``redis-server``, and
two processes' worth of clients share its tasks: one winner per race, expiry by Redis."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import uuid4

import pytest
from redis.asyncio import Redis

from mcpkit.errors import StoreUnavailable
from mcpkit.extensions.tasks.records import TaskRecord
from mcpkit.extensions.tasks.redis import RedisTaskStore
from mcpkit.extensions.tasks.states import IllegalTransition, TaskStatus
from mcpkit.extensions.tasks.store import TaskEvent, TaskStore
from mcpkit.stores.redis import RedisStore
from tests.extensions.tasks.conformance import ASK, RESULT, MakeStore, TaskStoreConformance
from tests.redis_server import RedisServer


@pytest.fixture
async def clients(redis_url: str) -> AsyncIterator[list[Redis]]:
    """Two clients with pools of their own: two nodes of a cluster."""
    made = [Redis.from_url(redis_url), Redis.from_url(redis_url)]
    try:
        yield made
    finally:
        for client in made:
            await client.aclose()


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid4().hex}:"


class TestRedisTaskStore(TaskStoreConformance):
    @pytest.fixture
    def make_store(self, clients: list[Redis], prefix: str) -> MakeStore:
        def make(max_per_owner: int = 100) -> TaskStore:
            store = RedisTaskStore(clients[0], prefix=prefix, max_per_owner=max_per_owner)
            assert isinstance(store, TaskStore)
            return store

        return make


async def test_of_two_nodes_racing_to_finish_a_task_exactly_one_wins(
    clients: list[Redis], prefix: str
) -> None:
    one, two = (RedisTaskStore(c, prefix=prefix) for c in clients)
    for _ in range(40):
        record = TaskRecord.new(ttl_ms=60_000, node_id="n1")
        await one.create(record)
        outcomes = await asyncio.gather(
            one.transition(record.task_id, TaskStatus.COMPLETED, result=RESULT),
            two.transition(record.task_id, TaskStatus.CANCELLED),
            return_exceptions=True,
        )
        won = [o for o in outcomes if isinstance(o, TaskRecord)]
        lost = [o for o in outcomes if isinstance(o, IllegalTransition)]
        assert len(won) == 1 and len(lost) == 1, outcomes
        assert lost[0].current is won[0].status
        assert await two.get(record.task_id) == won[0]


async def test_many_in_place_updates_from_two_nodes_all_land(
    clients: list[Redis], prefix: str
) -> None:
    """The compare-and-set retries a lost write instead of dropping or duplicating it: 20
    concurrent status messages, then the record holds one of them and is still working."""
    one, two = (RedisTaskStore(c, prefix=prefix) for c in clients)
    record = TaskRecord.new(ttl_ms=60_000)
    await one.create(record)
    moves = [
        (one if i % 2 else two).transition(
            record.task_id, TaskStatus.WORKING, status_message=f"step {i}"
        )
        for i in range(20)
    ]
    results = await asyncio.gather(*moves)
    assert all(r is not None and r.status is TaskStatus.WORKING for r in results)
    final = await one.get(record.task_id)
    assert final is not None and final.status_message in {f"step {i}" for i in range(20)}


async def test_a_task_made_on_one_node_is_read_and_moved_on_another(
    clients: list[Redis], prefix: str
) -> None:
    one, two = (RedisTaskStore(c, prefix=prefix) for c in clients)
    record = TaskRecord.new(ttl_ms=60_000, owner="alice", node_id="n1")
    await one.create(record)
    assert await two.get(record.task_id) == record
    cancelled = await two.transition(record.task_id, TaskStatus.CANCELLED)
    assert await one.get(record.task_id) == cancelled
    assert (await two.list_by_owner("alice"))[0] == [cancelled]


async def test_redis_itself_expires_the_record_at_creation_plus_ttl(
    clients: list[Redis], prefix: str
) -> None:
    store = RedisTaskStore(clients[0], prefix=prefix)
    record = TaskRecord.new(ttl_ms=60_000, owner="alice")
    await store.create(record)
    await store.transition(record.task_id, TaskStatus.WORKING, status_message="later")
    pttl = await clients[0].pttl(f"{prefix}task:{record.task_id}")
    assert 55_000 < pttl <= 60_000  # KEEPTTL: the update did not restart it
    assert 55_000 < await clients[0].pttl(f"{prefix}task-owner:alice") <= 60_000
    forever = TaskRecord.new(ttl_ms=None, owner="alice")
    await store.create(forever)
    assert await clients[0].pttl(f"{prefix}task:{forever.task_id}") == -1
    assert await clients[0].pttl(f"{prefix}task-owner:alice") == -1  # it holds a forever task


async def test_the_task_store_beside_a_redis_store_shares_its_client_and_prefix(
    redis_url: str, prefix: str
) -> None:
    store = RedisStore(redis_url, prefix=prefix)
    try:
        tasks = RedisTaskStore.from_store(store)
        assert tasks.client is store.client and tasks.prefix == prefix
        record = TaskRecord.new(ttl_ms=60_000)
        await tasks.create(record)
        assert await store.client.exists(f"{prefix}task:{record.task_id}") == 1
        assert "redis://" in repr(tasks)
    finally:
        await store.aclose()


async def test_an_unreadable_record_is_a_task_that_is_gone(
    clients: list[Redis], prefix: str
) -> None:
    store = RedisTaskStore(clients[0], prefix=prefix)
    await clients[0].set(f"{prefix}task:bad", b"{not json")
    await clients[0].set(f"{prefix}task:other", TaskRecord.new(ttl_ms=None).to_json().__repr__())
    assert await store.get("bad") is None
    assert await store.get("other") is None
    assert await store.transition("bad", TaskStatus.CANCELLED) is None


async def test_a_redis_that_is_down_is_store_unavailable_naming_it(tmp_path: Path) -> None:
    server = RedisServer(tmp_path)
    server.start()
    client = Redis.from_url(server.url, socket_connect_timeout=1, socket_timeout=1)
    store = RedisTaskStore(client, prefix="t:")
    try:
        await store.create(TaskRecord.new(ttl_ms=60_000))
        server.stop()
        with pytest.raises(StoreUnavailable, match=r"127\.0\.0\.1"):
            await store.get("anything")
        with pytest.raises(StoreUnavailable):
            await store.create(TaskRecord.new(ttl_ms=60_000))
    finally:
        await client.aclose()


async def test_a_heartbeat_forgets_the_nodes_tasks_that_expired_while_running(
    clients: list[Redis], prefix: str
) -> None:
    store = RedisTaskStore(clients[0], prefix=prefix)
    short = TaskRecord.new(ttl_ms=200, node_id="n1")
    long = TaskRecord.new(ttl_ms=60_000, node_id="n1")
    await store.create(short)
    await store.create(long)
    await store.heartbeat("n1", 30.0)
    running = {m.decode() for m in await clients[0].smembers(f"{prefix}task-node:n1")}
    assert running == {short.task_id, long.task_id}
    await asyncio.sleep(0.4)
    await store.heartbeat("n1", 30.0)
    running = {m.decode() for m in await clients[0].smembers(f"{prefix}task-node:n1")}
    assert running == {long.task_id}
    assert 29_000 < await clients[0].pttl(f"{prefix}task-alive:n1") <= 30_000


async def test_a_move_on_one_node_reaches_a_watcher_on_another(
    clients: list[Redis], prefix: str
) -> None:
    one, two = (RedisTaskStore(c, prefix=prefix) for c in clients)
    record = TaskRecord.new(ttl_ms=60_000, node_id="n1")
    await one.create(record)
    heard: list[TaskEvent] = []
    try:
        await two.watch(record.task_id, heard.append)
        moved = await one.transition(record.task_id, TaskStatus.CANCELLED)
        assert await one.answer(record.task_id, {"k": {"action": "decline"}}) == 1
        async with asyncio.timeout(5):
            while len(heard) < 2:
                await asyncio.sleep(0.01)
        assert heard == [
            TaskEvent(record.task_id, record=moved),
            TaskEvent(record.task_id, answers={"k": {"action": "decline"}}),
        ]
    finally:
        await one.aclose()
        await two.aclose()


async def _heard_within(heard: list[TaskEvent], count: int, seconds: float) -> None:
    async with asyncio.timeout(seconds):
        while len(heard) < count:
            await asyncio.sleep(0.01)


async def test_an_answer_sent_while_the_watchers_subscription_is_down_reaches_it(
    clients: list[Redis], prefix: str
) -> None:
    # A recheck period far past the test: only the read-back on reconnection can deliver.
    running = RedisTaskStore(clients[0], prefix=prefix, recheck_s=60)
    other = RedisTaskStore(clients[1], prefix=prefix)
    record = TaskRecord.new(ttl_ms=60_000, node_id="n1")
    await running.create(record)
    await running.transition(record.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK)
    heard: list[TaskEvent] = []
    try:
        await running.watch(record.task_id, heard.append)
        await clients[1].client_kill_filter(_type="pubsub")
        # Nobody subscribed at this instant: pub/sub alone would lose it.
        assert await other.answer(record.task_id, {"name": {"action": "accept"}}) == 0
        await _heard_within(heard, 1, 5)
        assert heard == [TaskEvent(record.task_id, answers={"name": {"action": "accept"}})]
        await running.recheck()  # read back again: nothing new
        assert len(heard) == 1
    finally:
        await running.aclose()
        await other.aclose()


async def test_a_cancel_recorded_while_the_watchers_subscription_is_down_reaches_it(
    clients: list[Redis], prefix: str
) -> None:
    running = RedisTaskStore(clients[0], prefix=prefix, recheck_s=60)
    other = RedisTaskStore(clients[1], prefix=prefix)
    record = TaskRecord.new(ttl_ms=60_000, node_id="n1")
    await running.create(record)
    heard: list[TaskEvent] = []
    try:
        await running.watch(record.task_id, heard.append)
        await clients[1].client_kill_filter(_type="pubsub")
        cancelled = await other.transition(record.task_id, TaskStatus.CANCELLED)
        await _heard_within(heard, 1, 5)
        assert heard == [TaskEvent(record.task_id, record=cancelled)]
        await running.recheck()
        assert len(heard) == 1
    finally:
        await running.aclose()
        await other.aclose()


async def test_answers_stored_before_the_watch_are_read_back_within_the_recheck_period(
    clients: list[Redis], prefix: str
) -> None:
    running = RedisTaskStore(clients[0], prefix=prefix, recheck_s=0.2)
    other = RedisTaskStore(clients[1], prefix=prefix)
    record = TaskRecord.new(ttl_ms=60_000, node_id="n1")
    await running.create(record)
    await running.transition(record.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK)
    heard: list[TaskEvent] = []
    try:
        assert await other.answer(record.task_id, {"name": {"action": "decline"}}) == 0
        await running.watch(record.task_id, heard.append)
        await _heard_within(heard, 1, 5)
        assert heard == [TaskEvent(record.task_id, answers={"name": {"action": "decline"}})]
    finally:
        await running.aclose()
        await other.aclose()


async def test_stored_answers_live_with_the_record_and_go_once_input_is_no_longer_needed(
    clients: list[Redis], prefix: str
) -> None:
    store = RedisTaskStore(clients[0], prefix=prefix)
    record = TaskRecord.new(ttl_ms=60_000, node_id="n1")
    key = f"{prefix}task-answers:{record.task_id}"
    await store.create(record)
    await store.answer(record.task_id, {"name": {"action": "accept"}})
    assert not await clients[0].exists(key)  # working: no question to answer
    await store.transition(record.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK)
    await store.answer(record.task_id, {"name": {"action": "accept"}})
    assert 59_000 < await clients[0].pttl(key) <= 60_000
    await store.transition(record.task_id, TaskStatus.WORKING)
    assert not await clients[0].exists(key)
    await store.transition(record.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK)
    await store.answer(record.task_id, {"name": {"action": "accept"}})
    await store.transition(record.task_id, TaskStatus.CANCELLED)
    assert not await clients[0].exists(key)
    await store.aclose()
