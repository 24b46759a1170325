"""The handshake-era session lifecycle, as a table.

Rules (2025-11-25 basic/lifecycle):

* ``initialize`` must come first; before it only ``ping`` is accepted.
* After the server answered ``initialize`` the client sends
  ``notifications/initialized``; requests arriving before that notification
  are tolerated (clients pipeline them) but a second ``initialize`` is not.
* Once closed, nothing is accepted.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

__all__ = ["State", "allowed", "next_state"]


class State(Enum):
    NEW = "new"
    INITIALIZING = "initializing"  # initialize answered, waiting for `initialized`
    READY = "ready"
    CLOSED = "closed"


# Requests accepted in each state: None means "any request but initialize".
_ALLOWED: Final[dict[State, frozenset[str] | None]] = {
    State.NEW: frozenset({"initialize", "ping"}),
    State.INITIALIZING: None,
    State.READY: None,
    State.CLOSED: frozenset(),
}

_TRANSITIONS: Final[dict[tuple[State, str], State]] = {
    (State.NEW, "initialize"): State.INITIALIZING,
    (State.INITIALIZING, "notifications/initialized"): State.READY,
    (State.READY, "notifications/initialized"): State.READY,
}


def allowed(state: State, method: str) -> bool:
    """May a request for ``method`` be served in ``state``?"""
    permitted = _ALLOWED[state]
    if permitted is None:
        return method != "initialize"
    return method in permitted


def next_state(state: State, method: str) -> State:
    """The state after successfully handling ``method`` (unchanged when not a transition)."""
    return _TRANSITIONS.get((state, method), state)
