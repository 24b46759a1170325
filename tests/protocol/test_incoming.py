"""The incoming-request rules (sans-IO): admission, duplicates, the cap, cancellation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings, stateful
from hypothesis import strategies as st

from mcpkit.protocol.correlation import Admission, admit, cancelled, finish, refusal, release
from mcpkit.protocol.jsonrpc import exact_ids

ids = st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=4)


class Handle:
    """What a driver stores: compared by identity only."""


def test_an_admitted_request_is_found_by_its_id_until_finished() -> None:
    table: dict[Any, Any] = {}
    a = Handle()
    assert admit(table, 7, a, None) is None
    assert table == {7: a}
    assert cancelled(table, {"requestId": 7}) is a
    finish(table, 7, a)
    assert table == {}


def test_a_duplicate_of_an_id_in_flight_is_refused_and_the_first_keeps_it() -> None:
    table: dict[Any, Any] = {}
    first, second = Handle(), Handle()
    assert admit(table, "x", first, None) is None
    assert refusal(table, "x", None) == Admission.DUPLICATE
    assert admit(table, "x", second, None) == Admission.DUPLICATE
    assert table["x"] is first
    assert cancelled(table, {"requestId": "x"}) is first
    # Once the first is done the id is free again.
    finish(table, "x", first)
    assert admit(table, "x", second, None) is None and table["x"] is second


def test_finish_forgets_only_the_request_it_names() -> None:
    table: dict[Any, Any] = {}
    old, new = Handle(), Handle()
    admit(table, 1, old, None)
    assert release(table, 1) is old  # answered early: the id is free
    admit(table, 1, new, None)
    finish(table, 1, old)  # the old work finishing must not drop the new request
    assert table[1] is new


def test_the_limit_refuses_requests_beyond_it_until_one_is_done() -> None:
    table: dict[Any, Any] = {}
    a, b, c = Handle(), Handle(), Handle()
    assert admit(table, 1, a, 2) is None and admit(table, 2, b, 2) is None
    assert refusal(table, 3, 2) == Admission.FULL
    assert admit(table, 3, c, 2) == Admission.FULL
    assert 3 not in table and len(table) == 2
    # A duplicate is a duplicate even when the table is full.
    assert admit(table, 1, c, 2) == Admission.DUPLICATE
    finish(table, 2, b)
    assert admit(table, 3, c, 2) is None and len(table) == 2
    assert admit(table, 4, Handle(), None) is None and len(table) == 3


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
    table: dict[Any, Any] = {}
    admit(table, 1, Handle(), None)
    assert cancelled(table, params) is None
    assert len(table) == 1


def test_cancelled_leaves_the_entry_until_the_work_is_done() -> None:
    table: dict[Any, Any] = {}
    a = Handle()
    admit(table, 5, a, None)
    assert cancelled(table, {"requestId": 5, "reason": "user"}) is a
    assert table[5] is a  # the driver stops the work; it leaves when it is done
    finish(table, 5, a)
    assert cancelled(table, {"requestId": 5}) is None


def test_ids_beyond_64_bits_stay_exact() -> None:
    big = 2**64 + 1
    data = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}' % big
    cancel = exact_ids(orjson.loads(data), data)
    table: dict[Any, Any] = {}
    near, far = Handle(), Handle()
    admit(table, 2**64, near, None)  # equal to big as a float, not as an integer
    admit(table, big, far, None)
    assert cancelled(table, cancel["params"]) is far
    assert admit(table, big, Handle(), None) == Admission.DUPLICATE
    assert admit(table, big + 2, Handle(), None) is None


def test_unhashable_ids_are_never_found() -> None:
    table: dict[Any, Any] = {}
    admit(table, 1, Handle(), None)
    assert release(table, [1]) is None
    assert cancelled(table, {"requestId": {"a": 1}}) is None
    assert len(table) == 1


class IncomingMachine(stateful.RuleBasedStateMachine):
    """The table against a plain model: id → handle, at most ``limit`` entries."""

    def __init__(self) -> None:
        super().__init__()
        self.limit = 4
        self.table: dict[Any, Any] = {}
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
        assert refusal(self.table, rid, self.limit) == expected
        assert admit(self.table, rid, handle, self.limit) == expected
        if expected is None:
            self.model[rid] = handle
        return rid

    @stateful.rule(rid=served)
    def finish(self, rid: Any) -> None:
        handle = self.model.get(rid)
        finish(self.table, rid, Handle())  # someone else's handle: nothing happens
        if handle is not None:
            finish(self.table, rid, handle)
            del self.model[rid]

    @stateful.rule(rid=served)
    def release(self, rid: Any) -> None:
        assert release(self.table, rid) is self.model.pop(rid, None)

    @stateful.rule(rid=served | ids)
    def cancel(self, rid: Any) -> None:
        assert cancelled(self.table, {"requestId": rid}) is self.model.get(rid)

    @stateful.invariant()
    def agrees(self) -> None:
        assert len(self.table) <= self.limit
        assert self.table == self.model
        assert all(self.table[rid] is handle for rid, handle in self.model.items())


IncomingMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestIncomingTable = IncomingMachine.TestCase


@given(st.lists(ids, max_size=30))
def test_every_admitted_request_finished_leaves_an_empty_table(rids: list[Any]) -> None:
    table: dict[Any, Any] = {}
    admitted = []
    for rid in rids:
        handle = Handle()
        if admit(table, rid, handle, None) is None:
            admitted.append((rid, handle))
    assert len(table) == len(set(rids))
    for rid, handle in admitted:
        finish(table, rid, handle)
    assert table == {}
