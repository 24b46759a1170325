"""The in-memory stores pass the conformance suite every store implementation must pass."""

from __future__ import annotations

import pytest

from mcpkit.stores import (
    EventStore,
    InputRoundStore,
    MemoryEventStore,
    MemoryInputRoundStore,
    MemorySessionStore,
    MemoryStateStore,
    SessionStore,
    StateStore,
)
from tests.stores.conformance import (
    EventStoreConformance,
    InputRoundStoreConformance,
    SessionStoreConformance,
    StateStoreConformance,
)


class TestMemoryEventStore(EventStoreConformance):
    @pytest.fixture
    def store(self) -> EventStore:
        return MemoryEventStore()


class TestMemorySessionStore(SessionStoreConformance):
    @pytest.fixture
    def store(self) -> SessionStore:
        return MemorySessionStore()


class TestMemoryInputRoundStore(InputRoundStoreConformance):
    @pytest.fixture
    def store(self) -> InputRoundStore:
        return MemoryInputRoundStore()


class TestMemoryStateStore(StateStoreConformance):
    @pytest.fixture
    def store(self) -> StateStore:
        return MemoryStateStore()


async def test_the_memory_state_store_forgets_the_oldest_write_beyond_its_bound() -> None:
    store = MemoryStateStore(max_entries=2)
    await store.set("a", b"1", None)
    await store.set("b", b"2", None)
    await store.set("a", b"3", None)  # rewritten: now the newest
    await store.set("c", b"4", None)
    assert [await store.get(k) for k in "abc"] == [b"3", None, b"4"]
    assert len(store) == 2
