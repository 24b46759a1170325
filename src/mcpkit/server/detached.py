"""Work detached from its request: where its progress and its requests to the client go.

A request's ``ctx.progress`` goes to the request's stream and ``ctx.elicit`` /
``ctx.sample`` / ``ctx.list_roots`` to its client. Work that goes on after its request
is answered (a task of the tasks extension, SEP-2663) has neither: within
:func:`progress_reported_to` and :func:`requests_answered_by`, or from
:func:`report_and_ask_through` on, they go to a sink and an asker of its own. The values
live in ``contextvars``, so the tasks and worker threads the work starts see them too.
:class:`~mcpkit.server.context.Context` reads them (:func:`progress_sink`,
:func:`request_asker`); ``mcpkit.server.context`` re-exports every name here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Iterator
from contextvars import ContextVar
from typing import Any

__all__ = [
    "ProgressSink",
    "RequestAsker",
    "progress_reported_to",
    "progress_sink",
    "report_and_ask_through",
    "request_asker",
    "requests_answered_by",
]

#: ``await sink(progress, total, message)``: where ``ctx.progress`` reports instead of the wire.
ProgressSink = Callable[[float, float | None, str | None], Coroutine[Any, Any, None]]

_progress_sink: ContextVar[ProgressSink | None] = ContextVar("mcpkit_progress", default=None)

#: ``await ask(method, params, key, timeout) -> result``: who answers requests to the client.
RequestAsker = Callable[
    [str, "dict[str, Any] | None", "str | None", "float | None"],
    Coroutine[Any, Any, "dict[str, Any]"],
]

_asker: ContextVar[RequestAsker | None] = ContextVar("mcpkit_asker", default=None)


@contextlib.contextmanager
def progress_reported_to(sink: ProgressSink) -> Iterator[None]:
    """Within this block (and the tasks and worker threads it starts), ``ctx.progress``
    awaits ``sink(progress, total, message)`` instead of sending
    ``notifications/progress``.

    For work that outlives its request: a task of the tasks extension (SEP-2663) runs
    after its ``tools/call`` was answered, so its progress has no request stream to go
    to and becomes the task's status message instead. Such work is detached from its
    request in one more way: on 2026-07-28 no retry will come back with a
    ``requestState``, so its ``tools/call`` runs in the caller's task (cancelling that
    task cancels the tool) rather than as a call that may pause for input
    (:func:`~mcpkit.server.stateless.input_required.runs_inline`).
    """
    token = _progress_sink.set(sink)
    try:
        yield
    finally:
        _progress_sink.reset(token)


@contextlib.contextmanager
def requests_answered_by(ask: RequestAsker) -> Iterator[None]:
    """Within this block (and the tasks it starts), a request to the client
    (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) awaits
    ``ask(method, params, key, timeout)`` for its result instead of going to the client,
    once the client's capabilities have been checked as usual.

    For work detached from its request, with :func:`progress_reported_to`: a task of
    the tasks extension (SEP-2663) asks through its own record (``input_required``,
    answered by ``tasks/update``). A sync tool's requests see it too: its thread runs in
    a copy of this context, and its calls hop to the loop with that copy.
    """
    token = _asker.set(ask)
    try:
        yield
    finally:
        _asker.reset(token)


def report_and_ask_through(*, progress: ProgressSink, ask: RequestAsker) -> None:
    """From now on, for the rest of the current asyncio task (and what it starts from now
    on), as inside :func:`progress_reported_to` and :func:`requests_answered_by`; not
    undone: the values end with the task. ``detach_from_request`` (in
    ``mcpkit.server.context``) is this for a request's handler."""
    _progress_sink.set(progress)
    _asker.set(ask)


def request_asker() -> RequestAsker | None:
    """The asker of the enclosing :func:`requests_answered_by` block; None outside one."""
    return _asker.get()


def progress_sink() -> ProgressSink | None:
    """The sink of the enclosing :func:`progress_reported_to` block; None outside one."""
    return _progress_sink.get()
