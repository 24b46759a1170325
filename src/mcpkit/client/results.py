"""Result-type handlers: how a client extension completes a result that is not final.

An extension may answer a request with a result of its own ``resultType`` instead of
the final one: the tasks extension (SEP-2663) answers ``tools/call`` with
``resultType: "task"``, a handle the client polls. A client extension with a
``result_handlers`` attribute (``{resultType: handler}``) completes such results for
``call_tool``, ``get_prompt`` and ``read_resource``: after the input rounds
(:mod:`.stateless.input_required`), a result whose ``resultType`` has a handler is
passed to ``await handler(ResultContext(...))``, and what the handler returns (the
final result) is what the caller gets. ``session.request`` is not affected: it always
returns the raw result, for callers that manage such results themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handlers import ProgressCallback
    from .request_meta import ClientExtension
    from .session import ClientSession

__all__ = ["ResultContext", "ResultHandler", "complete", "result_handlers_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultContext:
    """A result a handler completes, and the call that received it.

    ``session`` is the live session (its ``request`` sends the follow-up requests);
    ``method`` and ``params`` are the call's (without the envelope); ``timeout`` and
    ``progress`` the caller's (None: the session's timeout, no callback).
    """

    session: ClientSession
    method: str
    params: Mapping[str, Any]
    result: dict[str, Any]
    timeout: float | None
    progress: ProgressCallback | None


ResultHandler = Callable[[ResultContext], Awaitable[dict[str, Any]]]
"""``await handler(context)``: the final result of ``context.result``."""


def result_handlers_of(extensions: Iterable[ClientExtension]) -> dict[str, ResultHandler]:
    """``resultType`` -> handler, from each extension's optional ``result_handlers``
    (the first extension to claim a result type keeps it)."""
    handlers: dict[str, ResultHandler] = {}
    for ext in extensions:
        claimed = getattr(ext, "result_handlers", None)
        if isinstance(claimed, Mapping):
            for result_type, handler in claimed.items():
                handlers.setdefault(result_type, handler)
    return handlers


async def complete(
    session: ClientSession,
    method: str,
    params: Mapping[str, Any],
    result: dict[str, Any],
    *,
    timeout: float | None,
    progress: ProgressCallback | None,
) -> dict[str, Any]:
    """``result``, or what the handler of its ``resultType`` makes of it."""
    result_type = result.get("resultType")
    handler = session.result_handlers.get(result_type) if isinstance(result_type, str) else None
    if handler is None:
        return result
    context = ResultContext(
        session=session,
        method=method,
        params=params,
        result=result,
        timeout=timeout,
        progress=progress,
    )
    return await handler(context)
