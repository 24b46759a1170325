"""What every store implementation must do: reusable test classes, one per protocol.

A store implementation plugs in by subclassing with a ``store`` fixture that
yields a fresh, empty store (and cleans up after)::

    class TestRedisSessionStore(SessionStoreConformance):
        @pytest.fixture
        async def store(self, redis_url: str) -> AsyncIterator[SessionStore]:
            store = RedisStore(redis_url, prefix=f"test-{uuid4().hex}:")
            yield store.sessions
            await store.aclose()

(``test_conformance_redis.py`` does this for the three Redis stores.)

The base classes are not collected themselves (no ``Test`` prefix). They test
behaviour through the protocol only: nothing here looks inside a store, and
nothing relies on a record or message being the same Python object as the one
stored. Waits for expiry are "at least" waits with generous margins; no
assertion depends on how fast anything runs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mcpkit.stores import EventStore, InputRoundStore, SessionRecord, SessionStore, StateStore

JSON_MESSAGE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "notifications/message",
    "params": {
        "level": "info",
        "data": {"text": 'héllo ✓ \u2028 "quoted"\n', "n": 2**62, "f": 0.5, "list": [None, True]},
    },
}


def note(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": n}}


async def replay(store: EventStore, last_event_id: str) -> tuple[str | None, list[Any]]:
    got: list[tuple[str, Any]] = []

    async def send(event_id: str, message: dict[str, Any]) -> None:
        got.append((event_id, message))

    return await store.replay_events_after(last_event_id, send), got


class EventStoreConformance:
    """:class:`mcpkit.stores.EventStore`: the SSE event log behind resumable streams."""

    @pytest.fixture
    def store(self) -> EventStore:
        raise NotImplementedError("a subclass gives the store to test")

    def test_satisfies_the_protocol(self, store: EventStore) -> None:
        assert isinstance(store, EventStore)

    async def test_event_ids_are_unique_single_line_strings(self, store: EventStore) -> None:
        ids = [await store.store_event(s, note(i)) for i in range(5) for s in ("s/1", "s/2")]
        ids.append(await store.store_event("s/3", None))
        assert len(set(ids)) == len(ids)
        assert all(type(i) is str and i and "\n" not in i and "\r" not in i for i in ids)

    async def test_a_replay_sends_the_later_events_of_that_stream_only(
        self, store: EventStore
    ) -> None:
        priming = await store.store_event("s/1", None)
        first = await store.store_event("s/1", note(1))
        await store.store_event("s/2", note(99))
        await store.store_event("s/10", note(98))  # a stream whose id extends the other's
        second = await store.store_event("s/1", note(2))
        assert await replay(store, priming) == ("s/1", [(first, note(1)), (second, note(2))])
        assert await replay(store, first) == ("s/1", [(second, note(2))])
        # Up to date: the stream is known, nothing to send.
        assert await replay(store, second) == ("s/1", [])

    async def test_events_stored_after_a_replay_are_found_by_the_next_one(
        self, store: EventStore
    ) -> None:
        # The transport replays, takes the stream over, then replays after the last id
        # it sent to catch what was stored in between.
        start = await store.store_event("s/1", None)
        _, got = await replay(store, start)
        assert got == []
        later = await store.store_event("s/1", note(1))
        assert await replay(store, start) == ("s/1", [(later, note(1))])

    async def test_a_priming_event_mid_stream_marks_the_position_after_the_earlier_ones(
        self, store: EventStore
    ) -> None:
        await store.store_event("s/1", note(1))
        mark = await store.store_event("s/1", None)
        later = await store.store_event("s/1", note(2))
        assert await replay(store, mark) == ("s/1", [(later, note(2))])

    async def test_messages_come_back_as_equal_json(self, store: EventStore) -> None:
        start = await store.store_event("s/1", None)
        stored = await store.store_event("s/1", JSON_MESSAGE)
        _, got = await replay(store, start)
        assert got == [(stored, JSON_MESSAGE)]

    async def test_stream_ids_may_hold_any_visible_ascii(self, store: EventStore) -> None:
        # Stream ids are "<session id>/<n>", and session ids are any visible ASCII.
        odd = "a#b:c/d%20e#1/3"
        start = await store.store_event(odd, None)
        stored = await store.store_event(odd, note(1))
        assert await replay(store, start) == (odd, [(stored, note(1))])

    @pytest.mark.parametrize("bad", ["", "x", "#", "s/1#", "s/1#x", "unknown#1", "\n"])
    async def test_unknown_or_malformed_ids_replay_nothing(
        self, store: EventStore, bad: str
    ) -> None:
        await store.store_event("s/1", note(1))
        assert await replay(store, bad) == (None, [])

    async def test_deleted_streams_are_forgotten_and_others_kept(self, store: EventStore) -> None:
        gone = await store.store_event("s/1", note(1))
        kept = await store.store_event("s/2", None)
        after = await store.store_event("s/2", note(2))
        await store.delete_streams(["s/1", "never/seen"])
        assert await replay(store, gone) == (None, [])
        assert await replay(store, kept) == ("s/2", [(after, note(2))])
        await store.delete_streams([])


class SessionStoreConformance:
    """:class:`mcpkit.stores.SessionStore`: the durable records of handshake-era sessions."""

    TTL = 600.0

    @pytest.fixture
    def store(self) -> SessionStore:
        raise NotImplementedError("a subclass gives the store to test")

    @staticmethod
    def record(sid: str = "sid-1", **fields: Any) -> SessionRecord:
        values: dict[str, Any] = {
            "protocol_version": "2025-11-25",
            "client_info": {"name": "cliënt", "version": "1.0"},
            "client_capabilities": {"elicitation": {"form": {}}, "roots": {"listChanged": True}},
            "log_level": "info",
            "principal": "user-7",
        }
        values.update(fields)
        return SessionRecord(session_id=sid, **values)

    def test_satisfies_the_protocol(self, store: SessionStore) -> None:
        assert isinstance(store, SessionStore)

    async def test_a_created_record_loads_back_equal(self, store: SessionStore) -> None:
        record = self.record()
        assert await store.create(record, self.TTL) is True
        assert await store.load("sid-1") == record
        assert await store.load("other") is None

    async def test_subscriptions_round_trip(self, store: SessionStore) -> None:
        uris = ["file:///a.txt", "db://shop/orders/{id}", "file:///ü.txt"]
        assert await store.create(self.record(subscriptions=list(uris)), self.TTL) is True
        loaded = await store.load("sid-1")
        assert loaded is not None and loaded.subscriptions == uris
        loaded.subscriptions.append("file:///changed")  # the caller's own list
        again = await store.load("sid-1")
        assert again is not None and again.subscriptions == uris
        assert await store.save(self.record(subscriptions=uris[:1]), self.TTL) is True
        saved = await store.load("sid-1")
        assert saved is not None and saved.subscriptions == uris[:1]
        await store.create(self.record("sid-2"), self.TTL)
        plain = await store.load("sid-2")
        assert plain is not None and plain.subscriptions == []

    async def test_create_refuses_an_id_in_use(self, store: SessionStore) -> None:
        assert await store.create(self.record(principal="first"), self.TTL) is True
        assert await store.create(self.record(principal="second"), self.TTL) is False
        loaded = await store.load("sid-1")
        assert loaded is not None and loaded.principal == "first"

    async def test_a_loaded_record_is_the_callers_own(self, store: SessionStore) -> None:
        record = self.record()
        expected = SessionRecord.from_json(record.to_json())  # a copy of its own
        await store.create(record, self.TTL)
        loaded = await store.load("sid-1")
        assert loaded is not None
        loaded.log_level = "debug"  # changing it changes nothing in the store
        loaded.client_capabilities["sampling"] = {}
        assert loaded.client_info is not None
        loaded.client_info["name"] = "changed"
        assert await store.load("sid-1") == expected

    async def test_save_replaces_an_existing_record_only(self, store: SessionStore) -> None:
        await store.create(self.record(), self.TTL)
        assert await store.save(self.record(log_level="debug"), self.TTL) is True
        loaded = await store.load("sid-1")
        assert loaded is not None and loaded.log_level == "debug"
        assert await store.save(self.record("never-created"), self.TTL) is False
        assert await store.load("never-created") is None

    async def test_touch_marks_the_session_seen(self, store: SessionStore) -> None:
        await store.create(self.record(last_seen=time.time() - 100), self.TTL)
        before = time.time()
        assert await store.touch("sid-1", self.TTL) is True
        loaded = await store.load("sid-1")
        assert loaded is not None and loaded.last_seen >= before - 1
        assert await store.touch("unknown", self.TTL) is False
        assert await store.load("unknown") is None

    async def test_a_deleted_session_stays_deleted(self, store: SessionStore) -> None:
        await store.create(self.record(), self.TTL)
        assert await store.delete("sid-1") is True
        assert await store.delete("sid-1") is False
        assert await store.load("sid-1") is None
        # A late write from another worker does not bring it back.
        assert await store.save(self.record(), self.TTL) is False
        assert await store.touch("sid-1", self.TTL) is False
        assert await store.load("sid-1") is None
        assert await store.create(self.record(), self.TTL) is True  # the id is free again

    async def test_records_expire_after_their_ttl(self, store: SessionStore) -> None:
        await store.create(self.record("short"), 0.2)
        await store.create(self.record("long"), self.TTL)
        await asyncio.sleep(0.6)
        assert await store.load("short") is None
        assert await store.touch("short", self.TTL) is False
        assert await store.load("long") is not None
        assert await store.create(self.record("short"), self.TTL) is True  # free again

    async def test_touch_and_save_restart_the_ttl(self, store: SessionStore) -> None:
        await store.create(self.record("touched"), 0.5)
        await store.create(self.record("saved"), 0.5)
        await store.create(self.record("shortened"), self.TTL)
        assert await store.touch("touched", self.TTL) is True
        assert await store.save(self.record("saved"), self.TTL) is True
        assert await store.touch("shortened", 0.2) is True
        await asyncio.sleep(0.9)
        assert await store.load("touched") is not None
        assert await store.load("saved") is not None
        assert await store.load("shortened") is None

    async def test_concurrent_creates_of_one_id_let_exactly_one_win(
        self, store: SessionStore
    ) -> None:
        wins = await asyncio.gather(
            *(store.create(self.record(principal=str(i)), self.TTL) for i in range(20))
        )
        assert wins.count(True) == 1


class InputRoundStoreConformance:
    """:class:`mcpkit.stores.InputRoundStore`: each ``requestState`` is used at most once."""

    @pytest.fixture
    def store(self) -> InputRoundStore:
        raise NotImplementedError("a subclass gives the store to test")

    def test_satisfies_the_protocol(self, store: InputRoundStore) -> None:
        assert isinstance(store, InputRoundStore)

    async def test_only_the_first_claim_wins(self, store: InputRoundStore) -> None:
        later = time.time() + 60
        assert await store.claim("call.1", later) is True
        assert await store.claim("call.1", later) is False
        assert await store.claim("call.1", later + 60) is False
        assert await store.claim("call.2", later) is True  # another round of the call
        assert await store.claim("other.1", later) is True

    async def test_concurrent_claims_let_exactly_one_win(self, store: InputRoundStore) -> None:
        later = time.time() + 60
        wins = await asyncio.gather(*(store.claim("raced.1", later) for _ in range(20)))
        assert wins.count(True) == 1

    async def test_a_released_claim_is_free_again(self, store: InputRoundStore) -> None:
        # release is optional in the protocol; mcpkit's own stores have it (a round its
        # server's shutdown stopped hands its state back for the client's retry).
        later = time.time() + 60
        assert await store.claim("freed.1", later) is True
        await store.release("freed.1")  # type: ignore[attr-defined]
        assert await store.claim("freed.1", later) is True
        assert await store.claim("freed.1", later) is False

    async def test_a_claim_holds_until_its_expiry(self, store: InputRoundStore) -> None:
        assert await store.claim("soon.1", time.time() + 2) is True
        await asyncio.sleep(0.2)
        assert await store.claim("soon.1", time.time() + 60) is False


class StateStoreConformance:
    """``ctx.state``'s store: bytes by key, with an optional ttl."""

    @pytest.fixture
    def store(self) -> StateStore:
        raise NotImplementedError

    async def test_a_value_set_is_read_back_until_deleted(self, store: StateStore) -> None:
        assert await store.get("s:1:cart") is None
        await store.set("s:1:cart", b'{"n":1}', None)
        assert await store.get("s:1:cart") == b'{"n":1}'
        assert await store.get("s:2:cart") is None  # another scope's key
        assert await store.delete("s:1:cart") is True
        assert await store.get("s:1:cart") is None
        assert await store.delete("s:1:cart") is False

    async def test_a_later_set_replaces_the_value(self, store: StateStore) -> None:
        await store.set("k", b"1", None)
        await store.set("k", b"\x00binary\xff", 60.0)
        assert await store.get("k") == b"\x00binary\xff"

    async def test_a_value_expires_after_its_ttl(self, store: StateStore) -> None:
        await store.set("short", b"1", 0.05)
        await store.set("long", b"2", 60.0)
        assert await store.get("short") == b"1"
        await asyncio.sleep(0.2)
        assert await store.get("short") is None
        assert await store.get("long") == b"2"

    async def test_a_set_without_ttl_drops_an_earlier_ttl(self, store: StateStore) -> None:
        await store.set("k", b"1", 0.05)
        await store.set("k", b"2", None)
        await asyncio.sleep(0.2)
        assert await store.get("k") == b"2"
