"""The in-memory input-round store's own bounds (the protocol itself: conformance.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from mcpkit.errors import INVALID_REQUEST, ConfigurationError, TooManyInputRounds
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


def test_the_per_principal_bound_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="max_entries_per_principal"):
        MemoryInputRoundStore(max_entries_per_principal=0)


async def test_one_principal_at_its_bound_is_refused_and_the_others_keep_their_claims() -> None:
    store = MemoryInputRoundStore(max_entries=10, max_entries_per_principal=3)
    later = time.time() + 60
    assert await store.claim("victim.1", later, owner="victim") is True
    for n in range(3):
        assert await store.claim(f"flood.{n}", later, owner="flooder") is True
    with pytest.raises(TooManyInputRounds) as refused:
        await store.claim("flood.3", later, owner="flooder")
    error = refused.value.to_error()
    assert error["code"] == INVALID_REQUEST
    assert error["data"] == {"maxRoundsPerPrincipal": 3}
    assert "retry later" in error["message"]
    # The refused state was not used up, nobody's claim gave way, the others go on.
    assert store.owned("flooder") == 3 and len(store) == 4
    assert await store.claim("victim.1", later, owner="victim") is False  # still single-use
    assert await store.claim("victim.2", later, owner="victim") is True
    assert await store.claim("anon.1", later) is True  # unauthenticated: an owner of its own


async def test_a_principal_at_its_bound_gets_room_as_its_own_claims_expire() -> None:
    store = MemoryInputRoundStore(max_entries_per_principal=2)
    now = time.time()
    assert await store.claim("p.1", now + 0.2, owner="p") is True
    assert await store.claim("p.2", now + 60, owner="p") is True
    with pytest.raises(TooManyInputRounds):
        await store.claim("p.3", now + 60, owner="p")
    await asyncio.sleep(0.3)  # p.1's state has expired: its claim no longer counts
    assert await store.claim("p.3", now + 60, owner="p") is True
    assert store.owned("p") == 2
    with pytest.raises(TooManyInputRounds):
        await store.claim("p.4", now + 60, owner="p")


async def test_a_released_claim_can_be_claimed_once_more() -> None:
    store = MemoryInputRoundStore(max_entries_per_principal=1)
    later = time.time() + 60
    assert await store.claim("s.1", later, owner="p") is True
    await store.release("s.1")
    assert store.owned("p") == 0 and len(store) == 0
    assert await store.claim("s.1", later, owner="p") is True
    assert await store.claim("s.1", later, owner="p") is False
    await store.release("never-claimed")  # nothing to forget: no error
