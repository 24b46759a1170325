"""The in-memory stores pass the conformance suite every store implementation must pass."""

from __future__ import annotations

import pytest

from mcpkit.stores import (
    EventStore,
    InputRoundStore,
    MemoryEventStore,
    MemoryInputRoundStore,
    MemorySessionStore,
    SessionStore,
)
from tests.stores.conformance import (
    EventStoreConformance,
    InputRoundStoreConformance,
    SessionStoreConformance,
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
