"""Observers: the hook that watches each message a session sends or answers, for telemetry.

Both ends of MCP send requests and notifications and answer the peer's
requests; an observer (OpenTelemetry spans and metrics, :mod:`mcpkit.observability`)
follows one such exchange from its message to its outcome. The contract is
written here once, without I/O, so that the client session (its calls, and the
server's requests it answers) and the server session (its requests to the
client) call it the same way:

- ``hook(session, kind, method)`` is asked when an exchange begins; it returns
  an :class:`Observer`, or None to leave the exchange unobserved (what it does
  while no telemetry is configured: the cost is then this call alone). ``kind``
  is ``"request"`` or ``"notification"`` for what the session sends,
  ``"served"`` for a peer's request the session answers;
- ``observer.opened(message)``: the JSON-RPC message, as it goes on the wire
  (a sent one, id assigned) or as it arrived (a served one). For a sent message
  the observer may replace ``message["params"]`` (a copy, never the caller's
  dict) to add to its ``_meta`` (trace context, SEP-414); a sent request that
  is retried (a new HTTP session) is opened again with its new message;
- ``observer.finished(result, error)``: the result, or the exception the
  exchange ended with (None and None for a notification sent);
- ``hook(session, "closed", "")`` when the session ends (its answer is ignored):
  the session's duration.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any, Final, Literal, Protocol, TypeVar

__all__ = ["Kind", "ObserveHook", "Observer", "notify_observed", "observed", "telemetry_module"]

#: ``MCPKIT_TELEMETRY`` values that switch the automatic telemetry off.
_OFF: Final = frozenset({"0", "off", "false", "no"})

T = TypeVar("T")

Kind = Literal["request", "notification", "served", "closed"]


class Observer(Protocol):
    """One exchange being observed (see the module docstring)."""

    def opened(self, message: dict[str, Any]) -> None: ...
    def finished(self, result: dict[str, Any] | None, error: BaseException | None) -> None: ...


ObserveHook = Callable[[Any, Kind, str], "Observer | None"]
"""``hook(session, kind, method)``: an :class:`Observer` for the exchange, or None."""


async def observed(observer: Observer, outcome: Awaitable[T]) -> T:
    """Await ``outcome`` and tell ``observer`` how it ended (then return or raise it)."""
    try:
        result = await outcome
    except BaseException as exc:
        observer.finished(None, exc)
        raise
    observer.finished(result if isinstance(result, dict) else None, None)
    return result


async def notify_observed(
    hook: ObserveHook,
    session: Any,
    send: Callable[[dict[str, Any]], Awaitable[Any]],
    message: dict[str, Any],
) -> None:
    """``await send(message)``, a notification, observed by ``hook`` (callers test for a
    hook first, so that an unobserved notification costs no coroutine more)."""
    observer = hook(session, "notification", message["method"])
    if observer is None:
        await send(message)
        return
    observer.opened(message)
    await observed(observer, send(message))


def telemetry_module() -> ModuleType | None:
    """``mcpkit.observability.auto`` when OpenTelemetry is loaded, else None (cheaply).

    An application that configured a provider has imported ``opentelemetry`` already,
    so while it is not in ``sys.modules`` nothing is imported here. ``MCPKIT_TELEMETRY=off``
    (or ``0``, ``false``, ``no``) keeps the automatic telemetry off.
    """
    if "opentelemetry.trace" not in sys.modules:
        return None
    if os.environ.get("MCPKIT_TELEMETRY", "").strip().lower() in _OFF:
        return None
    return importlib.import_module("mcpkit.observability.auto")
