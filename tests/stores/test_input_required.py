"""The in-memory input-round store's own bounds (the protocol itself: conformance.py)."""

from __future__ import annotations

import time

import pytest

from mcpkit.errors import ConfigurationError
from mcpkit.stores import MemoryInputRoundStore


async def test_the_memory_store_forgets_expired_claims_and_stays_bounded() -> None:
    store = MemoryInputRoundStore(max_entries=3)
    later = time.time() + 60
    assert await store.claim("a", later) is True
    assert await store.claim("a", later) is False
    assert await store.claim("gone", time.time() - 1) is True
    assert await store.claim("gone", later) is True  # its first claim had expired
    for token in ("b", "c", "d"):
        assert await store.claim(token, later) is True
    assert len(store) == 3  # the oldest claims gave way


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="max_entries"):
        MemoryInputRoundStore(max_entries=0)
