"""Input rounds on the client (2026-07-28 basic/patterns/mrtr, SEP-2322).

In the 2026-07-28 era a server cannot send the client requests; a ``tools/call``,
``prompts/get`` or ``resources/read`` that needs the user or the client's LLM answers
``resultType: "input_required"`` with the questions instead. :func:`with_input`
answers them with the session's sampling, elicitation and roots handlers and retries
the request until it completes, so callers of ``call_tool`` and friends only ever see
the final result. The server side is :mod:`mcpkit.server.stateless.input_required`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

from ...errors import INTERNAL_ERROR, METHOD_NOT_FOUND, MCPError

if TYPE_CHECKING:
    from ..handlers import ProgressCallback
    from ..session import ClientSession

__all__ = ["MAX_INPUT_ROUNDS", "with_input"]

# A server that keeps asking must not make a call loop forever (mrtr § server requirements:
# the server MAY ask again; the client bounds how often it answers).
MAX_INPUT_ROUNDS: Final = 10
_MRTR_PARAMS: Final = ("inputResponses", "requestState")


async def with_input(
    session: ClientSession,
    method: str,
    params: dict[str, Any],
    *,
    timeout: float | None,
    progress: ProgressCallback | None,
    first: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``method`` until it completes, answering each ``input_required`` result.

    2026-07-28 basic/patterns/mrtr § client requirements: every input request is
    answered by the session's sampling, elicitation or roots handler; the retry is a
    new request (new id) with the original params, the ``inputResponses`` and the
    ``requestState`` echoed byte for byte (omitted when the server gave none). A
    result without ``resultType`` is complete (changelog, major change 8).
    """
    current = params
    for _ in range(MAX_INPUT_ROUNDS):
        if first is not None:
            result, first = first, None
        else:
            result = await session.request(method, current, timeout=timeout, progress=progress)
        if result.get("resultType") != "input_required":
            return result
        current = {k: v for k, v in params.items() if k not in _MRTR_PARAMS}
        requests = result.get("inputRequests")
        if isinstance(requests, dict) and requests:
            keys = list(requests)
            answers = await asyncio.gather(
                *(_fulfil(session, method, requests[key]) for key in keys)
            )
            current["inputResponses"] = dict(zip(keys, answers, strict=True))
        state = result.get("requestState")
        if isinstance(state, str):
            current["requestState"] = state
    raise MCPError(
        f"MCP server {session.name!r} still asked for input after {MAX_INPUT_ROUNDS} rounds "
        f"of {method}",
        code=INTERNAL_ERROR,
    )


async def _fulfil(session: ClientSession, origin: str, request: Any) -> dict[str, Any]:
    method = request.get("method") if isinstance(request, dict) else None
    params = request.get("params") if isinstance(request, dict) else None
    if not isinstance(method, str):
        raise MCPError(
            f"MCP server {session.name!r} sent a malformed input request for {origin}: "
            f"{request!r:.200}",
            code=INTERNAL_ERROR,
        )
    try:
        return await session.handlers.fulfil(method, params if isinstance(params, dict) else {})
    except MCPError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        raise MCPError(
            f"MCP server {session.name!r} needs {method} to complete {origin}, and this client "
            "has no handler for it",
            code=INTERNAL_ERROR,
        ) from exc
