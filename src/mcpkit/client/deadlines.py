"""Timeouts for many concurrent calls on one event-loop timer.

Every request waits at most its timeout (2025-11-25 basic/lifecycle § timeouts),
but a timer per request (``asyncio.timeout``: a handle pushed on the loop's
heap, then cancelled) costs more than the rest of a round trip's client-side
bookkeeping. Calls here only record their deadline; one timer is armed for the
earliest one, and is re-armed only when a call needs to fire sooner. With a
uniform timeout, deadlines arrive in increasing order, so a busy session arms
about one timer per timeout period instead of one per call.

An expired call's task is cancelled, exactly as ``asyncio.timeout`` would do;
the caller recognises the cancellation as its own through :attr:`Deadline.expired`
and ``Task.uncancel()``, so a cancellation from outside still propagates.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

__all__ = ["Deadline", "Deadlines", "timeout_problem", "valid_timeout"]

# call_at may run a handle up to the clock resolution early: treat that as due.
_SLACK = 1e-3


def valid_timeout(value: Any, *, infinite: bool = False) -> bool:
    """A timeout mcpkit can wait for: a positive, finite number of seconds (not a bool).

    ``infinite``: ``math.inf`` is allowed too (one call meant to stay open, such as
    a subscription stream; never a default).
    """
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and value > 0
        and (math.isfinite(value) or (infinite and value == math.inf))
    )


def timeout_problem(what: str, value: Any, *, infinite: bool = False) -> str:
    """The message for a ``value`` that :func:`valid_timeout` refused."""
    if infinite:
        return f"{what} must be a positive number of seconds (or math.inf), not {value!r}"
    return f"{what} must be a positive, finite number of seconds, not {value!r}"


class Deadline:
    __slots__ = ("expired", "task", "when")

    def __init__(self, when: float, task: asyncio.Task[Any]) -> None:
        self.when = when
        self.task = task
        self.expired = False


class Deadlines:
    """The deadlines of a session's calls in flight, keyed by request id."""

    __slots__ = ("_calls", "_loop", "_timer", "_timer_at")

    def __init__(self) -> None:
        self._calls: dict[Any, Deadline] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def add(self, key: Any, timeout: float) -> Deadline:
        """Start timing the current task's call ``key``."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        assert task is not None, "calls must run inside a task"
        call = Deadline(loop.time() + timeout, task)
        self._calls[key] = call
        if call.when < self._timer_at:
            self._arm(call.when)
        return call

    def discard(self, key: Any) -> None:
        self._calls.pop(key, None)

    def close(self) -> None:
        self._calls.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = math.inf

    def _arm(self, when: float) -> None:
        assert self._loop is not None
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._fire)
        self._timer_at = when

    def _fire(self) -> None:
        assert self._loop is not None
        self._timer = None
        self._timer_at = math.inf
        now = self._loop.time() + _SLACK
        upcoming = math.inf
        for call in self._calls.values():
            if call.expired:
                continue
            if call.when <= now:
                call.expired = True
                call.task.cancel()
            elif call.when < upcoming:
                upcoming = call.when
        if upcoming < math.inf:
            self._arm(upcoming)
