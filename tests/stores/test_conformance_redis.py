"""The Redis stores pass the conformance suite every store implementation must pass.

Against a real ``redis-server`` (tests/stores/conftest.py); each test gets a
store of its own under a fresh key prefix, closed afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from mcpkit.stores import EventStore, InputRoundStore, SessionStore, StateStore, Store
from mcpkit.stores.redis import RedisStore
from tests.stores.conformance import (
    EventStoreConformance,
    InputRoundStoreConformance,
    SessionStoreConformance,
    StateStoreConformance,
)


@pytest.fixture
async def redis_store(redis_url: str) -> AsyncIterator[RedisStore]:
    store = RedisStore(redis_url, prefix=f"test-{uuid4().hex}:")
    assert isinstance(store, Store)
    await store.connect()
    try:
        yield store
    finally:
        await store.aclose()


class TestRedisEventStore(EventStoreConformance):
    @pytest.fixture
    def store(self, redis_store: RedisStore) -> EventStore:
        return redis_store.events


class TestRedisSessionStore(SessionStoreConformance):
    @pytest.fixture
    def store(self, redis_store: RedisStore) -> SessionStore:
        return redis_store.sessions


class TestRedisInputRoundStore(InputRoundStoreConformance):
    @pytest.fixture
    def store(self, redis_store: RedisStore) -> InputRoundStore:
        return redis_store.input_rounds


class TestRedisStateStore(StateStoreConformance):
    @pytest.fixture
    def store(self, redis_store: RedisStore) -> StateStore:
        return redis_store.state
