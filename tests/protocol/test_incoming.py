"""The incoming-request table (sans-IO): admission, duplicates, the cap, cancellation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings, stateful
from hypothesis import strategies as st

from mcpkit.protocol.correlation import Admission, Incoming
from mcpkit.protocol.jsonrpc import exact_ids

ids = st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=4)


class Handle:
    """What a driver stores: compared by identity only."""


def test_an_admitted_request_is_found_by_its_id_until_done() -> None:
    table = Incoming()
    a = Handle()
    assert table.admit(7, a) is None
    assert 7 in table and len(table) == 1 and table.get(7) is a
    table.done(7, a)
    assert 7 not in table and len(table) == 0 and table.get(7) is None


def test_a_duplicate_of_an_id_in_flight_is_refused_and_the_first_keeps_it() -> None:
    table = Incoming()
    first, second = Handle(), Handle()
    assert table.admit("x", first) is None
    assert table.refuses("x") == Admission.DUPLICATE
    assert table.admit("x", second) == Admission.DUPLICATE
    assert table.get("x") is first
    assert table.cancelled({"requestId": "x"}) is first
    # Once the first is done the id is free again.
    table.done("x", first)
    assert table.admit("x", second) is None and table.get("x") is second


def test_done_forgets_only_the_request_it_names() -> None:
    table = Incoming()
    old, new = Handle(), Handle()
    table.admit(1, old)
    assert table.release(1) is old  # answered early: the id is free
    table.admit(1, new)
    table.done(1, old)  # the old work finishing must not drop the new request
    assert table.get(1) is new


def test_the_limit_refuses_requests_beyond_it_until_one_is_done() -> None:
    table = Incoming()
    table.limit = 2
    a, b, c = Handle(), Handle(), Handle()
    assert table.admit(1, a) is None and table.admit(2, b) is None
    assert table.refuses(3) == Admission.FULL
    assert table.admit(3, c) == Admission.FULL
    assert 3 not in table and len(table) == 2
    # A duplicate is a duplicate even when the table is full.
    assert table.admit(1, c) == Admission.DUPLICATE
    table.done(2, b)
    assert table.admit(3, c) is None and len(table) == 2
    # The limit may be changed on a live table (the HTTP transports set it).
    table.limit = None
    assert table.admit(4, Handle()) is None and len(table) == 3


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        {},
        {"requestId": None},
        {"requestId": True},  # True == 1 in Python; not an id in JSON
        {"requestId": [1]},
        {"requestId": {"a": 1}},
        {"requestId": 2},
        {"requestId": "1"},
    ],
)
def test_cancelled_finds_nothing_but_the_request_it_names(params: Any) -> None:
    table = Incoming()
    table.admit(1, Handle())
    assert table.cancelled(params) is None
    assert len(table) == 1


def test_cancelled_leaves_the_entry_until_the_work_is_done() -> None:
    table = Incoming()
    a = Handle()
    table.admit(5, a)
    assert table.cancelled({"requestId": 5, "reason": "user"}) is a
    assert table.get(5) is a  # the driver stops the work; it leaves when it is done
    table.done(5, a)
    assert table.cancelled({"requestId": 5}) is None


def test_ids_beyond_64_bits_stay_exact() -> None:
    big = 2**64 + 1
    data = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}' % big
    cancel = exact_ids(orjson.loads(data), data)
    table = Incoming()
    near, far = Handle(), Handle()
    table.admit(2**64, near)  # equal to big as a float, not as an integer
    table.admit(big, far)
    assert table.cancelled(cancel["params"]) is far
    assert table.admit(big, Handle()) == Admission.DUPLICATE
    assert table.admit(big + 2, Handle()) is None


def test_unhashable_ids_are_never_found() -> None:
    table = Incoming()
    table.admit(1, Handle())
    assert [1] not in table
    assert table.get({"a": 1}) is None
    assert table.release([1]) is None
    assert table.cancelled({"requestId": {"a": 1}}) is None
    assert len(table) == 1


def test_drain_returns_every_handle_and_empties_the_table() -> None:
    table = Incoming()
    handles = [Handle() for _ in range(3)]
    for rid, handle in enumerate(handles):
        table.admit(rid, handle)
    assert table.handles() == handles and len(table) == 3
    assert table.drain() == handles
    assert len(table) == 0 and table.handles() == []


class IncomingMachine(stateful.RuleBasedStateMachine):
    """The table against a plain model: id → handle, at most ``limit`` entries."""

    def __init__(self) -> None:
        super().__init__()
        self.limit = 4
        self.table = Incoming()
        self.table.limit = self.limit
        self.model: dict[Any, Handle] = {}

    served = stateful.Bundle("served")

    @stateful.rule(target=served, rid=ids)
    def admit(self, rid: Any) -> Any:
        handle = Handle()
        expected: str | None
        if rid in self.model:
            expected = Admission.DUPLICATE
        elif len(self.model) >= self.limit:
            expected = Admission.FULL
        else:
            expected = None
        assert self.table.refuses(rid) == expected
        assert self.table.admit(rid, handle) == expected
        if expected is None:
            self.model[rid] = handle
        return rid

    @stateful.rule(rid=served)
    def done(self, rid: Any) -> None:
        handle = self.model.get(rid)
        self.table.done(rid, Handle())  # someone else's handle: nothing happens
        if handle is not None:
            self.table.done(rid, handle)
            del self.model[rid]

    @stateful.rule(rid=served)
    def release(self, rid: Any) -> None:
        assert self.table.release(rid) is self.model.pop(rid, None)

    @stateful.rule(rid=served | ids)
    def cancel(self, rid: Any) -> None:
        assert self.table.cancelled({"requestId": rid}) is self.model.get(rid)

    @stateful.invariant()
    def agrees(self) -> None:
        assert len(self.table) == len(self.model) <= self.limit
        assert self.table.handles() == list(self.model.values())
        for rid, handle in self.model.items():
            assert rid in self.table and self.table.get(rid) is handle


IncomingMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestIncomingTable = IncomingMachine.TestCase


@given(st.lists(ids, max_size=30))
def test_every_admitted_request_done_leaves_an_empty_table(rids: list[Any]) -> None:
    table = Incoming()
    admitted = []
    for rid in rids:
        handle = Handle()
        if table.admit(rid, handle) is None:
            admitted.append((rid, handle))
    assert len(table) == len(set(rids))
    for rid, handle in admitted:
        table.done(rid, handle)
    assert len(table) == 0
