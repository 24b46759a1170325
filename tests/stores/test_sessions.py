"""The in-memory session store's own bounds, and ``MemoryStore`` wiring into the server."""

from __future__ import annotations

import pytest

from mcpkit import InputRoundOptions, MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.stores import (
    MemoryEventStore,
    MemoryInputRoundStore,
    MemorySessionStore,
    MemoryStore,
    SessionRecord,
    Store,
)
from mcpkit.transports.streamable_http import StreamableHTTPApp


async def test_the_memory_session_store_keeps_at_most_max_records() -> None:
    store = MemorySessionStore(max_records=2)
    for sid in ("a", "b", "c"):
        assert await store.create(SessionRecord(sid, "2025-11-25"), 60) is True
    assert len(store) == 2
    assert await store.load("a") is None  # the record closest to expiry gave way
    assert await store.load("c") is not None


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_the_bound_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="max_records"):
        MemorySessionStore(max_records=bad)  # type: ignore[arg-type]


def test_a_record_round_trips_through_json() -> None:
    record = SessionRecord("s", "2025-06-18", {"name": "c"}, {"roots": {}}, "debug", "p", 1.0, 2.0)
    assert SessionRecord.from_json(record.to_json()) == record


def test_a_record_without_subscriptions_in_its_json_has_none() -> None:
    data = SessionRecord("s", "2025-06-18", subscriptions=["file:///a"]).to_json()
    assert data["subscriptions"] == ["file:///a"]
    del data["subscriptions"]  # a record written before the field existed
    assert SessionRecord.from_json(data).subscriptions == []


def test_a_records_visibility_rules_round_trip_and_must_be_an_object() -> None:
    rules = {"s": 1, "k": [["tools", "purge", 1, False]], "t": []}
    data = SessionRecord("s", "2025-11-25", visibility=rules).to_json()
    assert SessionRecord.from_json(data).visibility == rules
    del data["visibility"]  # a record written before the field existed: no rules
    assert SessionRecord.from_json(data).visibility is None
    with pytest.raises(ValueError, match="'visibility'"):
        SessionRecord.from_json({**data, "visibility": ["not", "rules"]})


def test_memory_store_groups_one_of_each_store() -> None:
    store = MemoryStore()
    assert isinstance(store, Store)
    assert isinstance(store.sessions, MemorySessionStore)
    assert isinstance(store.events, MemoryEventStore)
    assert isinstance(store.input_rounds, MemoryInputRoundStore)
    events = MemoryEventStore(max_bytes=1024)
    assert MemoryStore(events=events).events is events


def test_the_server_and_its_http_app_use_the_store_given() -> None:
    store = MemoryStore()
    server = MCPServer(name="s", version="1", store=store)
    assert server.input_rounds.store is store.input_rounds
    app = StreamableHTTPApp(server)
    assert app.event_store is store.events  # a shared store makes streams resumable
    assert app.session_store is store.sessions
    own = MemoryEventStore()
    assert StreamableHTTPApp(server, event_store=own).event_store is own  # the app's wins


def test_without_a_store_streams_are_not_resumable_and_sessions_kept_in_memory() -> None:
    app = StreamableHTTPApp(MCPServer(name="s", version="1"))
    assert app.event_store is None
    assert isinstance(app.session_store, MemorySessionStore)


def test_store_and_input_store_together_are_refused() -> None:
    with pytest.raises(
        ConfigurationError, match=r"either store= or InputRoundOptions\(store=...\)"
    ):
        MCPServer(
            name="s",
            version="1",
            store=MemoryStore(),
            input_rounds=InputRoundOptions(store=MemoryInputRoundStore()),
        )


def test_a_store_must_have_the_three_parts() -> None:
    with pytest.raises(ConfigurationError, match="sessions, events and input_rounds"):
        MCPServer(name="s", version="1", store=MemoryEventStore())  # type: ignore[arg-type]
