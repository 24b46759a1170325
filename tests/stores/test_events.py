"""The in-memory SSE event store: its id format and its bounds (the protocol itself: conformance.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.stores import EventStore, MemoryEventStore


def note(n: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": n},
    }


async def replay(
    store: MemoryEventStore, last_event_id: str
) -> tuple[str | None, list[tuple[str, Any]]]:
    got: list[tuple[str, Any]] = []

    async def send(event_id: str, message: dict[str, Any]) -> None:
        got.append((event_id, message))

    return await store.replay_events_after(last_event_id, send), got


def test_in_memory_store_satisfies_the_protocol() -> None:
    assert isinstance(MemoryEventStore(), EventStore)


async def test_ids_are_unique_and_name_their_stream() -> None:
    store = MemoryEventStore()
    ids = [await store.store_event(stream, note(i)) for i in range(3) for stream in ("s/1", "s/2")]
    assert len(set(ids)) == 6
    assert all(i.rpartition("#")[0] in ("s/1", "s/2") for i in ids)


async def test_replay_sends_only_later_events_of_the_same_stream_and_skips_priming() -> None:
    store = MemoryEventStore()
    priming = await store.store_event("a", None)
    first = await store.store_event("a", note(1))
    await store.store_event("b", note(99))
    second = await store.store_event("a", note(2))
    stream, got = await replay(store, priming)
    assert stream == "a"
    assert got == [(first, note(1)), (second, note(2))]
    stream, got = await replay(store, first)
    assert (stream, got) == ("a", [(second, note(2))])
    stream, got = await replay(store, second)
    assert (stream, got) == ("a", [])  # up to date: the stream is known, nothing to send


@pytest.mark.parametrize("bad", ["", "a", "a#", "a#x", "unknown#1", "#1"])
async def test_unknown_or_malformed_ids_replay_nothing(bad: str) -> None:
    store = MemoryEventStore()
    await store.store_event("a", note(1))
    assert await replay(store, bad) == (None, [])


async def test_streams_keep_only_their_newest_events() -> None:
    store = MemoryEventStore(max_events_per_stream=3)
    ids = [await store.store_event("a", note(i)) for i in range(6)]
    _, got = await replay(store, ids[0])  # older than what is kept: a partial replay
    assert [m["params"]["data"] for _, m in got] == [3, 4, 5]


async def test_the_least_recently_written_stream_is_dropped_first() -> None:
    store = MemoryEventStore(max_streams=2)
    a = await store.store_event("a", note(1))
    b = await store.store_event("b", note(2))
    await store.store_event("a", note(3))  # a is now the most recent
    await store.store_event("c", note(4))  # evicts b
    assert len(store) == 2
    assert (await replay(store, b))[0] is None
    assert (await replay(store, a))[0] == "a"


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError):
        MemoryEventStore(max_events_per_stream=0)
    with pytest.raises(ValueError):
        MemoryEventStore(max_streams=0)
