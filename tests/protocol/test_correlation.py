"""The outgoing-request table (sans-IO: no event loop): ids, answers, cancellation, progress."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, stateful
from hypothesis import strategies as st

from mcpkit.protocol.correlation import Outgoing, Reply
from mcpkit.protocol.jsonrpc import Kind, classify


def result(rid: Any, value: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {} if value is None else value}


def error(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "boom"}}


def test_ids_count_up_from_one_and_the_message_is_a_request() -> None:
    out = Outgoing()
    first, msg = out.open("tools/list", None)
    second, msg2 = out.open("tools/call", {"name": "x"})
    assert (first.id, second.id) == (1, 2)
    assert msg == {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert msg2 == {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}
    assert classify(msg) is Kind.REQUEST and classify(msg2) is Kind.REQUEST
    assert len(out) == 2 and 1 in out and 2 in out


def test_a_prefix_makes_string_ids() -> None:
    out = Outgoing(id_prefix="mcpkit-")
    entry, msg = out.open("ping", None)
    assert entry.id == msg["id"] == "mcpkit-1"
    assert out.answer(result("mcpkit-1")) == (Reply.RESULT, entry)


def test_an_answer_takes_its_request_off_the_table_with_the_waiter() -> None:
    out = Outgoing()
    waiter = object()
    entry, _ = out.open("tools/list", None, waiter)
    reply, found = out.answer(result(entry.id))
    assert reply == Reply.RESULT and found is entry and found.waiter is waiter
    assert len(out) == 0
    entry2, _ = out.open("tools/list", None)
    assert out.answer(error(entry2.id)) == (Reply.ERROR, entry2)


@pytest.mark.parametrize(
    "msg",
    [
        {"jsonrpc": "2.0", "id": 1, "result": []},
        {"jsonrpc": "2.0", "id": 1, "result": None},
        {"jsonrpc": "2.0", "id": 1, "error": "boom"},
        {"jsonrpc": "2.0", "id": 1},
    ],
)
def test_an_answer_without_a_result_or_error_object_is_malformed(msg: dict[str, Any]) -> None:
    out = Outgoing()
    entry, _ = out.open("tools/list", None)
    assert out.answer(msg) == (Reply.MALFORMED, entry)
    assert len(out) == 0  # the driver fails the waiter: the request is over


def test_a_second_or_late_answer_is_stale_and_a_foreign_id_unknown() -> None:
    out = Outgoing()
    a, _ = out.open("tools/list", None)
    b, _ = out.open("tools/call", None)
    out.answer(result(a.id))
    assert out.answer(result(a.id)) == (Reply.STALE, None)  # answered twice
    assert out.cancel(b.id, "timeout") is not None
    assert out.answer(result(b.id)) == (Reply.STALE, None)  # after we gave up
    for foreign in (3, 0, -1, "1", None, 1.5, True, [1], {"a": 1}):
        assert out.answer(result(foreign)) == (Reply.UNKNOWN, None), foreign


@pytest.mark.parametrize("foreign", ["mcpkit-0", "mcpkit-01", "mcpkit-3", "mcpkit-", "1", 1, "x-1"])
def test_only_the_exact_ids_a_prefixed_table_wrote_are_stale(foreign: Any) -> None:
    out = Outgoing(id_prefix="mcpkit-")
    for _ in range(2):
        entry, _ = out.open("ping", None)
        out.answer(result(entry.id))
    assert out.issued("mcpkit-1") and out.issued("mcpkit-2")
    assert out.answer(result(foreign)) == (Reply.UNKNOWN, None)


def test_cancel_builds_the_notification_and_forgets_the_request() -> None:
    out = Outgoing()
    entry, _ = out.open("tools/call", None)
    msg = out.cancel(entry.id, "timed out after 5 s")
    assert msg == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "timed out after 5 s"},
    }
    assert classify(msg) is Kind.NOTIFICATION
    assert len(out) == 0
    assert out.cancel(entry.id, "again") is None  # nothing pending: nothing to cancel
    other, _ = out.open("tools/call", None)
    assert out.cancel(other.id) == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 2},
    }


@pytest.mark.parametrize("method", ["initialize", "server/discover"])
def test_initialize_and_the_discovery_probe_are_never_cancelled(method: str) -> None:
    out = Outgoing()
    entry, _ = out.open(method, {})
    assert out.cancel(entry.id, "timeout") is None
    assert len(out) == 0  # given up on all the same: a late answer is stale
    assert out.answer(result(entry.id)) == (Reply.STALE, None)


def test_progress_token_is_the_request_id_and_finds_its_request() -> None:
    out = Outgoing()
    callback = object()
    params = {"name": "slow", "_meta": {"trace": "t"}}
    entry, msg = out.open("tools/call", params, None, callback)
    assert entry.progress_token == entry.id == 1
    assert msg["params"] == {"name": "slow", "_meta": {"trace": "t", "progressToken": 1}}
    assert params == {"name": "slow", "_meta": {"trace": "t"}}  # the caller's dict is untouched
    _, bare = out.open("tools/call", None, None, callback)
    assert bare["params"] == {"_meta": {"progressToken": 2}}
    found = out.progress({"progressToken": 1, "progress": 0.5})
    assert found is entry and found.on_progress is callback


def test_progress_for_other_tokens_finds_nothing() -> None:
    out = Outgoing()
    quiet, msg = out.open("tools/call", {"name": "x"})  # asked for no progress
    assert quiet.progress_token is None and "_meta" not in msg["params"]
    loud, _ = out.open("tools/call", None, None, object())
    for token in (quiet.id, "2", True, 2.0, None, [2], 99):
        assert out.progress({"progressToken": token}) is None, token
    assert out.progress({}) is None
    out.answer(result(loud.id))
    assert out.progress({"progressToken": loud.id}) is None  # answered: no more progress


def test_drain_returns_every_pending_request_and_empties_the_table() -> None:
    out = Outgoing()
    entries = [out.open("ping", None, i)[0] for i in range(3)]
    out.answer(result(entries[1].id))
    assert [e.waiter for e in out.drain()] == [0, 2]
    assert len(out) == 0 and out.drain() == []
    assert out.forget(entries[0].id) is None
    assert out.open("ping", None)[0].id == 4  # ids are never reused


class TableMachine(stateful.RuleBasedStateMachine):
    """Random interleavings of sends, answers, cancellations and forgetting: the table
    holds exactly the requests still pending, every answer is classified as a model of
    the rules says, and no id is ever handed out twice."""

    def __init__(self) -> None:
        super().__init__()
        self.out = Outgoing(id_prefix=None)
        self.pending: dict[int, str] = {}  # id -> method
        self.issued: set[int] = set()

    sent = stateful.Bundle("sent")

    @stateful.rule(
        target=sent,
        method=st.sampled_from(["tools/call", "initialize", "ping"]),
        progress=st.booleans(),
    )
    def send(self, method: str, progress: bool) -> int:
        entry, msg = self.out.open(method, None, None, object() if progress else None)
        rid = entry.id
        assert isinstance(rid, int) and rid not in self.issued
        assert msg["id"] == rid
        self.issued.add(rid)
        self.pending[rid] = method
        return rid

    @stateful.rule(rid=sent, as_error=st.booleans())
    def answer(self, rid: int, as_error: bool) -> None:
        reply, entry = self.out.answer(error(rid) if as_error else result(rid))
        if rid in self.pending:
            assert entry is not None and entry.id == rid
            assert reply == (Reply.ERROR if as_error else Reply.RESULT)
            del self.pending[rid]
        else:
            assert (reply, entry) == (Reply.STALE, None)

    @stateful.rule(rid=st.integers(min_value=-5, max_value=200) | st.text(max_size=3))
    def answer_anything(self, rid: Any) -> None:
        reply, entry = self.out.answer(result(rid))
        if rid in self.pending:
            assert entry is not None
            del self.pending[rid]
        elif rid in self.issued:
            assert reply == Reply.STALE
        else:
            assert reply == Reply.UNKNOWN

    @stateful.rule(rid=sent)
    def cancel(self, rid: int) -> None:
        msg = self.out.cancel(rid, "r")
        method = self.pending.pop(rid, None)
        if method is None or method == "initialize":
            assert msg is None
        else:
            assert msg is not None and msg["params"]["requestId"] == rid

    @stateful.rule(rid=sent)
    def progress(self, rid: int) -> None:
        entry = self.out.progress({"progressToken": rid, "progress": 1})
        if entry is not None:
            assert rid in self.pending and entry.on_progress is not None

    @stateful.rule(rid=sent)
    def forget(self, rid: int) -> None:
        entry = self.out.forget(rid)
        assert (entry is not None) == (self.pending.pop(rid, None) is not None)

    @stateful.rule()
    def drain(self) -> None:
        assert {e.id for e in self.out.drain()} == set(self.pending)
        self.pending.clear()

    @stateful.invariant()
    def table_is_exactly_the_pending_requests(self) -> None:
        assert len(self.out) == len(self.pending)
        for rid in self.pending:
            assert rid in self.out
        assert len(self.out) <= len(self.issued)


TableMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
test_table_stays_consistent = TableMachine.TestCase


@given(st.lists(st.sampled_from(["send", "answer", "cancel"]), max_size=200))
def test_a_settled_table_is_empty(ops: list[str]) -> None:
    """However sends, answers and cancellations interleave, once every request is answered
    or cancelled nothing is left: the table is bounded by the requests in flight."""
    out = Outgoing()
    live: list[int | str] = []
    for op in ops:
        if op == "send":
            live.append(out.open("tools/call", None)[0].id)
        elif live:
            rid = live.pop(0)
            if op == "answer":
                out.answer(result(rid))
            else:
                out.cancel(rid)
        assert len(out) == len(live)
    for rid in live:
        out.answer(result(rid))
    assert len(out) == 0
