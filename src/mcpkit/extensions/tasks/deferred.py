"""A tool that asks in its own request first and becomes a task part-way: :func:`continue_as_task`.

SEP-2663 composed with SEP-2322 input rounds (ext-tasks commit 451f5e1; the conformance
suite's ``tasks-mrtr-composition``): a tool may gather input through the ordinary input
rounds of its ``tools/call`` (on 2026-07-28 an ``input_required`` result, on a
2025-11-25 session an ``elicitation/create`` request), then escalate to a task on the
final round, which answers with the ``CreateTaskResult`` (and no ``requestState``:
the rounds' state does not leak into the task). The server still decides per request:
the tool decides *when*.

A tool named in ``tasks_extension(deferred=[...])`` (and in ``tools`` as
``"optional"`` or ``"required"``) runs in its request as any tool, with the same
``await ctx.elicit(...)``; once it calls ``await continue_as_task()`` the task is
created (before the answer goes out, as always), the request is answered with it,
and the rest of the tool runs as the task: its progress becomes the task's status
message, its later questions the task's ``inputRequests``
(:func:`mcpkit.server.context.detach_from_request`), its result the task's. A tool that
returns without calling it is answered in place. Outside such a call (another tool, a
client that did not declare the extension) ``continue_as_task()`` returns False and
the tool goes on in its request.
"""

from __future__ import annotations

import asyncio
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from ...server.middleware import CallNext, MiddlewareContext
    from .records import TaskRecord

__all__ = ["Escalator", "continue_as_task", "run_deferred"]


class Escalator(Protocol):
    """What the extension does when a deferred tool continues as a task."""

    async def escalate(self, deferral: Deferral) -> TaskRecord:
        """Create the task (before the answer), start recording its outcome; the record."""
        ...


class Deferral:
    """One round of a deferred call: the rest of the chain, and the decision to make it
    a task."""

    __slots__ = ("call", "ctx", "decided", "escalator")

    def __init__(self, escalator: Escalator, ctx: MiddlewareContext) -> None:
        self.escalator = escalator
        self.ctx = ctx
        self.call: asyncio.Future[dict[str, Any]] | None = None
        self.decided: asyncio.Future[TaskRecord] = asyncio.get_running_loop().create_future()


class _Call:
    """One deferred call over all its rounds: the tool sees this in its context.

    On 2026-07-28 a tool that asked is parked between rounds and resumed by the next
    round (``mcpkit.server.stateless.input_required``): it keeps the context of the
    round that started it. So the tool holds this, and each round points it at its own
    :class:`Deferral`, finding it by the ``requestState`` the previous round returned.
    """

    __slots__ = ("current",)

    def __init__(self, current: Deferral) -> None:
        self.current = current


_call: ContextVar[_Call | None] = ContextVar("mcpkit_task_deferral", default=None)

# requestState of an input round -> the call its retry continues (resumed in this
# process). Bounded: an entry whose retry never comes is dropped after a while.
_next_rounds: dict[str, tuple[float, _Call]] = {}
_ROUND_TTL: Final = 3600.0
_MAX_ROUNDS: Final = 10_000


def _remember(state: object, call: _Call) -> None:
    if not isinstance(state, str):
        return
    now = time.monotonic()
    if len(_next_rounds) >= _MAX_ROUNDS:
        for key in [k for k, (t, _) in _next_rounds.items() if now - t > _ROUND_TTL]:
            del _next_rounds[key]
        while len(_next_rounds) >= _MAX_ROUNDS:
            del _next_rounds[next(iter(_next_rounds))]
    _next_rounds[state] = (now, call)


async def continue_as_task() -> bool:
    """From here on, run the calling tool as a task (see the module doc); False when
    it cannot (its call is not a deferred task call, or was answered already), and the
    tool then goes on in its request."""
    call = _call.get()
    deferral = None if call is None else call.current
    if deferral is None or deferral.decided.done() or deferral.call is None:
        return False
    record = await deferral.escalator.escalate(deferral)
    deferral.decided.set_result(record)
    return True


async def run_deferred(
    escalator: Escalator, ctx: MiddlewareContext, call_next: CallNext
) -> dict[str, Any] | TaskRecord:
    """Run the rest of the chain in a task of its own: its result, or the task's record
    once the tool called :func:`continue_as_task` (the tool then runs on)."""
    deferral = Deferral(escalator, ctx)
    found = _next_rounds.pop(ctx.params.get("requestState"), None)  # type: ignore[arg-type]
    if found is not None:
        call = found[1]
        call.current = deferral  # the parked tool resumes into this round
    else:
        call = _Call(deferral)
    token = _call.set(call)
    try:
        # Its own task, so that it can run on once this request is answered; it and
        # what it starts see the call (a copy of this context).
        future = deferral.call = asyncio.ensure_future(call_next(ctx))
    finally:
        _call.reset(token)
    try:
        waiting: set[asyncio.Future[Any]] = {future, deferral.decided}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        if not deferral.decided.done():
            deferral.decided.cancel()
            future.cancel()
        raise
    if deferral.decided.done() and not deferral.decided.cancelled():
        return deferral.decided.result()
    deferral.decided.cancel()  # answered in place: a late continue_as_task() is refused
    result = future.result()
    if result.get("resultType") == "input_required":
        _remember(result.get("requestState"), call)  # its retry continues this call
    return result
