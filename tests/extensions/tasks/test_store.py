"""MemoryTaskStore passes the task store conformance suite, and keeps to its total cap."""

from __future__ import annotations

import pytest

from mcpkit.errors import ConfigurationError
from mcpkit.extensions.tasks.records import TaskRecord
from mcpkit.extensions.tasks.store import MemoryTaskStore, TaskLimitExceeded, TaskStore
from tests.extensions.tasks.conformance import MakeStore, TaskStoreConformance


class TestMemoryTaskStore(TaskStoreConformance):
    @pytest.fixture
    def make_store(self) -> MakeStore:
        def make(max_per_owner: int = 100) -> TaskStore:
            store = MemoryTaskStore(max_per_owner=max_per_owner)
            assert isinstance(store, TaskStore)
            return store

        return make


async def test_the_memory_store_refuses_past_its_total_cap_until_a_task_expires() -> None:
    now = [1_000.0]
    store = MemoryTaskStore(max_tasks=2, clock=lambda: now[0])
    await store.create(TaskRecord.new(ttl_ms=1_000, owner="a", now=now[0]))
    await store.create(TaskRecord.new(ttl_ms=None, now=now[0]))
    with pytest.raises(TaskLimitExceeded):
        await store.create(TaskRecord.new(ttl_ms=1_000, owner="b", now=now[0]))
    now[0] += 1.0  # the first one's ttl ran out
    await store.create(TaskRecord.new(ttl_ms=1_000, owner="b", now=now[0]))
    assert len(store) == 2


@pytest.mark.parametrize("option", ["max_per_owner", "max_tasks"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_a_cap_must_be_a_positive_integer(option: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=option):
        MemoryTaskStore(**{option: value})  # type: ignore[arg-type]
