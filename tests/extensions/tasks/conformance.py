"""What every task store must do: one reusable test class, subclassed per store.

A store plugs in with a ``make_store`` fixture: a factory taking ``max_per_owner``
that returns a fresh, empty store (cleaned up by the fixture)::

    class TestMemoryTaskStore(TaskStoreConformance):
        @pytest.fixture
        def make_store(self) -> MakeStore:
            return lambda max_per_owner=100: MemoryTaskStore(max_per_owner=max_per_owner)

The base class is not collected itself (no ``Test`` prefix). It tests behaviour through
the :class:`~mcpkit.extensions.tasks.store.TaskStore` protocol only. Waits for expiry
are "at least" waits with margins; no assertion depends on how fast anything runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mcpkit.extensions.tasks.records import TaskRecord
from mcpkit.extensions.tasks.states import IllegalTransition, TaskStatus
from mcpkit.extensions.tasks.store import (
    NODE_LOST,
    TaskEvent,
    TaskExists,
    TaskLimitExceeded,
    TaskStore,
)

MakeStore = Callable[..., TaskStore]

RESULT: dict[str, Any] = {"content": [{"type": "text", "text": "done ✓"}], "isError": False}
ERROR: dict[str, Any] = {"code": -32603, "message": "boom"}
ASK: dict[str, Any] = {
    "name": {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    }
}


def task(**kwargs: Any) -> TaskRecord:
    kwargs.setdefault("ttl_ms", 60_000)
    return TaskRecord.new(**kwargs)


class TaskStoreConformance:
    @pytest.fixture
    def store(self, make_store: MakeStore) -> TaskStore:
        return make_store()

    # -- create and get ------------------------------------------------------------------

    async def test_a_created_task_is_found_at_once_with_every_field(self, store: TaskStore) -> None:
        record = task(owner="alice", node_id="n1", poll_interval_ms=500, status_message="queued")
        await store.create(record)
        assert await store.get(record.task_id) == record

    async def test_an_unknown_task_is_none(self, store: TaskStore) -> None:
        assert await store.get("no-such-task") is None
        assert await store.transition("no-such-task", TaskStatus.CANCELLED) is None

    async def test_a_second_create_of_the_same_id_is_refused_and_keeps_the_first(
        self, store: TaskStore
    ) -> None:
        first = task(owner="alice", status_message="first")
        await store.create(first)
        with pytest.raises(TaskExists):
            await store.create(task(task_id=first.task_id, owner="bob"))
        assert await store.get(first.task_id) == first

    async def test_a_task_of_unlimited_ttl_is_kept(self, store: TaskStore) -> None:
        record = task(ttl_ms=None)
        await store.create(record)
        assert await store.get(record.task_id) == record

    # -- transitions ---------------------------------------------------------------------

    async def test_completing_stores_the_result_and_a_later_update_time(
        self, store: TaskStore
    ) -> None:
        record = task(now=1_000.0, ttl_ms=None)
        await store.create(record)
        done = await store.transition(record.task_id, TaskStatus.COMPLETED, result=RESULT)
        assert done is not None and done.status is TaskStatus.COMPLETED
        assert done.result == RESULT and done.updated_at > record.updated_at
        assert await store.get(record.task_id) == done

    async def test_no_move_leaves_a_terminal_task_and_it_stays_as_it_was(
        self, store: TaskStore
    ) -> None:
        record = task()
        await store.create(record)
        failed = await store.transition(record.task_id, TaskStatus.FAILED, error=ERROR)
        for target in TaskStatus:
            with pytest.raises(IllegalTransition) as caught:
                await store.transition(
                    record.task_id,
                    target,
                    result=RESULT if target is TaskStatus.COMPLETED else None,
                    error=ERROR if target is TaskStatus.FAILED else None,
                    input_requests=ASK if target is TaskStatus.INPUT_REQUIRED else None,
                )
            assert caught.value.current is TaskStatus.FAILED
        assert await store.get(record.task_id) == failed

    async def test_a_move_expecting_another_status_is_refused(self, store: TaskStore) -> None:
        record = task()
        await store.create(record)
        await store.transition(record.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK)
        with pytest.raises(IllegalTransition) as caught:
            await store.transition(
                record.task_id, TaskStatus.CANCELLED, expected=TaskStatus.WORKING
            )
        assert caught.value.current is TaskStatus.INPUT_REQUIRED
        got = await store.get(record.task_id)
        assert got is not None and got.status is TaskStatus.INPUT_REQUIRED

    async def test_input_requests_come_and_go_with_input_required(self, store: TaskStore) -> None:
        record = task()
        await store.create(record)
        asking = await store.transition(
            record.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK, status_message="?"
        )
        assert asking is not None and asking.input_requests == ASK
        back = await store.transition(record.task_id, TaskStatus.WORKING)
        assert back is not None and back.input_requests is None and back.status_message is None

    async def test_an_update_in_place_keeps_the_message_unless_given(
        self, store: TaskStore
    ) -> None:
        record = task(status_message="step 1")
        await store.create(record)
        same = await store.transition(record.task_id, TaskStatus.WORKING)
        assert same is not None and same.status_message == "step 1"
        newer = await store.transition(record.task_id, TaskStatus.WORKING, status_message="step 2")
        assert newer is not None and newer.status_message == "step 2"
        assert await store.get(record.task_id) == newer

    async def test_of_two_racing_terminal_moves_exactly_one_wins(self, store: TaskStore) -> None:
        for _ in range(10):
            record = task()
            await store.create(record)
            outcomes = await asyncio.gather(
                store.transition(record.task_id, TaskStatus.COMPLETED, result=RESULT),
                store.transition(record.task_id, TaskStatus.CANCELLED),
                return_exceptions=True,
            )
            won = [o for o in outcomes if isinstance(o, TaskRecord)]
            lost = [o for o in outcomes if isinstance(o, IllegalTransition)]
            assert len(won) == 1 and len(lost) == 1, outcomes
            assert await store.get(record.task_id) == won[0]

    # -- expiry --------------------------------------------------------------------------

    async def test_a_task_is_gone_once_its_ttl_ran_out(self, store: TaskStore) -> None:
        record = task(ttl_ms=800, owner="alice")
        keep = task(ttl_ms=60_000, owner="alice")
        await store.create(record)
        await store.create(keep)
        assert await store.get(record.task_id) is not None
        await asyncio.sleep(1.2)
        assert await store.get(record.task_id) is None
        assert await store.transition(record.task_id, TaskStatus.CANCELLED) is None
        page, _ = await store.list_by_owner("alice")
        assert [r.task_id for r in page] == [keep.task_id]

    async def test_the_ttl_counts_from_creation_not_from_the_last_update(
        self, store: TaskStore
    ) -> None:
        record = task(ttl_ms=500)
        await store.create(record)
        await asyncio.sleep(0.3)
        await store.transition(record.task_id, TaskStatus.WORKING, status_message="still")
        await asyncio.sleep(0.4)
        assert await store.get(record.task_id) is None

    # -- listing and caps ----------------------------------------------------------------

    async def test_an_owners_tasks_page_oldest_first_without_gaps_or_repeats(
        self, store: TaskStore
    ) -> None:
        # Creation times in the past (unlimited ttl, so none expired), one tie among them.
        mine = [task(owner="alice", ttl_ms=None, now=1_000.0 + i) for i in range(5)]
        mine.append(task(owner="alice", ttl_ms=None, now=1_000.0 + 2))
        others = [task(owner="bob", ttl_ms=None, now=1_000.0 + i) for i in range(2)]
        for record in [*mine, *others]:
            await store.create(record)
        seen: list[TaskRecord] = []
        cursor: str | None = None
        while True:
            page, cursor = await store.list_by_owner("alice", cursor=cursor, limit=2)
            assert 1 <= len(page) <= 2
            seen.extend(page)
            if cursor is None:
                break
        expected = sorted(mine, key=lambda r: (r.created_at, r.task_id))
        assert seen == expected
        assert await store.list_by_owner("nobody") == ([], None)

    async def test_an_owner_at_its_cap_is_refused_and_others_are_not(
        self, make_store: MakeStore
    ) -> None:
        store = make_store(max_per_owner=2)
        short = task(owner="alice", ttl_ms=1_000)
        await store.create(short)
        await store.create(task(owner="alice"))
        with pytest.raises(TaskLimitExceeded):
            await store.create(task(owner="alice"))
        await store.create(task(owner="bob"))
        await asyncio.sleep(1.4)  # the short one expired: room again
        await store.create(task(owner="alice"))
        with pytest.raises(TaskLimitExceeded):
            await store.create(task(owner="alice"))

    # -- liveness ------------------------------------------------------------------------

    async def test_a_sweep_fails_the_unfinished_tasks_of_a_node_that_stopped_beating(
        self, store: TaskStore
    ) -> None:
        await store.heartbeat("alive", 30.0)
        await store.heartbeat("dying", 1.0)
        running = task(node_id="alive")
        orphan = task(node_id="dying")
        asking = task(node_id="dying")
        finished = task(node_id="dying")
        unplaced = task()
        for record in (running, orphan, asking, finished, unplaced):
            await store.create(record)
        await store.transition(asking.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK)
        done = await store.transition(finished.task_id, TaskStatus.COMPLETED, result=RESULT)
        assert await store.sweep() == []  # every node still beats
        await asyncio.sleep(1.4)
        swept = await store.sweep()
        assert sorted(r.task_id for r in swept) == sorted([orphan.task_id, asking.task_id])
        for record in swept:
            assert record.status is TaskStatus.FAILED and record.error == dict(NODE_LOST)
            assert await store.get(record.task_id) == record
        assert await store.get(finished.task_id) == done
        for record in (running, unplaced):
            got = await store.get(record.task_id)
            assert got is not None and got.status is TaskStatus.WORKING
        assert await store.sweep() == []

    async def test_a_node_that_never_beat_counts_as_dead(self, store: TaskStore) -> None:
        record = task(node_id="ghost")
        await store.create(record)
        swept = await store.sweep()
        assert [r.task_id for r in swept] == [record.task_id]

    async def test_a_task_cancelled_before_the_sweep_stays_cancelled(
        self, store: TaskStore
    ) -> None:
        record = task(node_id="gone")
        await store.create(record)
        cancelled = await store.transition(record.task_id, TaskStatus.CANCELLED)
        assert await store.sweep() == []
        assert await store.get(record.task_id) == cancelled

    # -- events ----------------------------------------------------------------------------

    async def test_a_watcher_hears_every_move_and_the_answers_sent_to_the_task(
        self, store: TaskStore
    ) -> None:
        record = task(node_id="n1")
        other = task(node_id="n1")
        await store.create(record)
        await store.create(other)
        heard: list[TaskEvent] = []
        arrived = asyncio.Event()

        def hear(event: TaskEvent) -> None:
            heard.append(event)
            if event.record is not None and event.record.terminal:
                arrived.set()

        try:
            unwatch = await store.watch(record.task_id, hear)
            asked = await store.transition(
                record.task_id, TaskStatus.INPUT_REQUIRED, input_requests=ASK
            )
            await store.transition(other.task_id, TaskStatus.CANCELLED)  # not watched
            assert await store.answer(record.task_id, {"name": {"action": "accept"}}) >= 1
            done = await store.transition(record.task_id, TaskStatus.COMPLETED, result=RESULT)
            async with asyncio.timeout(5):
                await arrived.wait()
            assert heard == [
                TaskEvent(record.task_id, record=asked),
                TaskEvent(record.task_id, answers={"name": {"action": "accept"}}),
                TaskEvent(record.task_id, record=done),
            ]
            await unwatch()
            await unwatch()  # idempotent
            assert await store.answer(record.task_id, {"late": {}}) == 0
            await asyncio.sleep(0.05)
            assert len(heard) == 3
        finally:
            await store.aclose()

    async def test_two_watchers_of_a_task_both_hear_it_until_each_stops(
        self, store: TaskStore
    ) -> None:
        record = task(node_id="n1")
        await store.create(record)
        one: list[TaskEvent] = []
        two: list[TaskEvent] = []
        try:
            stop_one = await store.watch(record.task_id, one.append)
            await store.watch(record.task_id, two.append)
            await store.transition(record.task_id, TaskStatus.WORKING, status_message="a")
            async with asyncio.timeout(5):
                while len(two) < 1 or len(one) < 1:
                    await asyncio.sleep(0.01)
            await stop_one()
            await store.transition(record.task_id, TaskStatus.WORKING, status_message="b")
            async with asyncio.timeout(5):
                while len(two) < 2:
                    await asyncio.sleep(0.01)
            assert len(one) == 1
            assert [e.record.status_message for e in two if e.record] == ["a", "b"]
        finally:
            await store.aclose()

    # -- claiming (the queue path) -------------------------------------------------------

    async def test_a_claimed_task_lives_and_dies_with_its_new_node(self, store: TaskStore) -> None:
        queued = task()  # created by an accepting node for a queue: nobody's yet
        await store.create(queued)
        assert await store.sweep() == []  # a task of no node is nobody's to sweep
        claimed = await store.claim(queued.task_id, "worker-1")
        assert claimed is not None and claimed.node_id == "worker-1"
        assert claimed.status is TaskStatus.WORKING and claimed.updated_at == queued.updated_at
        assert await store.get(queued.task_id) == claimed
        await store.heartbeat("worker-1", 60)
        assert await store.sweep() == []  # beating: alive
        # Taken over by another worker, which never beats: that one's death fails it.
        await store.claim(queued.task_id, "worker-2")
        swept = await store.sweep()
        assert [(r.task_id, r.status) for r in swept] == [(queued.task_id, TaskStatus.FAILED)]
        assert swept[0].error == NODE_LOST

    async def test_a_finished_or_unknown_task_cannot_be_claimed(self, store: TaskStore) -> None:
        done = task(node_id="n1")
        await store.create(done)
        await store.transition(done.task_id, TaskStatus.COMPLETED, result=RESULT)
        with pytest.raises(IllegalTransition):
            await store.claim(done.task_id, "worker")
        assert await store.claim("no-such-task", "worker") is None
