"""The handshake lifecycle table (sans-IO: no event loop)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpkit.protocol.lifecycle import State, allowed, next_state

METHODS = ["initialize", "ping", "tools/list", "tools/call", "logging/setLevel", "x/unknown"]


@pytest.mark.parametrize(
    ("state", "method", "ok"),
    [
        (State.NEW, "initialize", True),
        (State.NEW, "ping", True),
        (State.NEW, "tools/list", False),
        (State.NEW, "tools/call", False),
        (State.NEW, "x/unknown", False),
        (State.INITIALIZING, "initialize", False),
        (State.INITIALIZING, "ping", True),
        (State.INITIALIZING, "tools/call", True),  # clients may pipeline before `initialized`
        (State.READY, "initialize", False),
        (State.READY, "tools/call", True),
        (State.READY, "ping", True),
        (State.CLOSED, "ping", False),
        (State.CLOSED, "initialize", False),
        (State.CLOSED, "tools/call", False),
    ],
)
def test_allowed_requests_per_state(state: State, method: str, ok: bool) -> None:
    assert allowed(state, method) is ok


def test_transitions() -> None:
    assert next_state(State.NEW, "initialize") is State.INITIALIZING
    assert next_state(State.INITIALIZING, "notifications/initialized") is State.READY
    assert next_state(State.READY, "notifications/initialized") is State.READY
    # `initialized` before `initialize` changes nothing.
    assert next_state(State.NEW, "notifications/initialized") is State.NEW


@given(st.sampled_from(list(State)), st.text(max_size=20) | st.sampled_from(METHODS))
def test_every_state_and_method_has_an_answer(state: State, method: str) -> None:
    assert isinstance(allowed(state, method), bool)
    assert isinstance(next_state(state, method), State)


@given(st.lists(st.sampled_from([*METHODS, "notifications/initialized"]), max_size=30))
def test_closed_is_absorbing_and_initialize_is_accepted_once(methods: list[str]) -> None:
    state = State.NEW
    accepted_initialize = 0
    for method in methods:
        if method == "initialize" and allowed(state, method):
            accepted_initialize += 1
        if method.startswith("notifications/") or allowed(state, method):
            state = next_state(state, method)
    assert accepted_initialize <= 1
    closed = State.CLOSED
    for method in methods:
        assert next_state(closed, method) is closed
        assert not allowed(closed, method)
