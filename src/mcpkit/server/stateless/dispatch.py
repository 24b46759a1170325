"""Serving one request of the 2026-07-28 era with the same handlers as the handshake era.

A 2026-07-28 request brings its own envelope (see :mod:`mcpkit.protocol.envelope`);
the session it runs in lives for that request only. This module wraps the
ordinary dispatch: it refuses the methods the revision removed, reads the
envelope into the session (capabilities, client info, the log level the
request asked for), runs the handler (in an input round when it may ask for
input, :mod:`.input_required`), and completes the result with what the revision
requires: ``resultType`` on every result, the server's identity in ``_meta``
and, on list and read results, the caching hints ``ttlMs`` and ``cacheScope``
(:mod:`.cache_hints`). It also answers ``server/discover``, the era's probe;
the era's other own method, ``subscriptions/listen``, is :mod:`.listen`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from ...errors import METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, MCPError, MethodNotFound
from ...protocol import jsonrpc
from ...protocol.envelope import (
    CACHEABLE_METHODS,
    REMOVED_METHODS,
    SERVER_INFO,
    Envelope,
    Refusal,
    read_envelope,
)
from ...protocol.versions import REVISIONS
from ..context import LOG_LEVELS
from ..middleware import serve_round
from .inline import NOT_PAUSABLE, Restart, runs_inline
from .input_required import INPUT_METHODS

if TYPE_CHECKING:
    from ..session import Request, Send, ServerSession

log = logging.getLogger("mcpkit.server")

__all__ = ["complete_result", "discover", "serve_stateless"]

# Above every level: a request without io.modelcontextprotocol/logLevel gets no
# notifications/message at all (changelog 2026-07-28 §5).
_SILENT: Final = max(LOG_LEVELS.values()) + 1


Run = Callable[[dict[str, Any], "Send", Any], Awaitable[dict[str, Any] | None]]


async def serve_stateless(
    session: ServerSession,
    msg: dict[str, Any],
    send: Send,
    auth_info: Any,
    envelope: Envelope | Refusal | None = None,
    run: Run | None = None,
) -> dict[str, Any] | None:
    """Admit ``msg`` by its envelope, ``run`` it (by default with the session's own
    dispatch), and complete the response for the revision. ``ServerSession.serve_stateless``
    is this function: a transport that steps the coroutine gets it from there."""
    if run is None:
        run = session.dispatch
    rid = msg["id"]
    method = msg["method"]
    if method in REMOVED_METHODS:
        return jsonrpc.error_response(
            rid, METHOD_NOT_FOUND, f"Method not found: {method} (removed in 2026-07-28)"
        )
    if envelope is None:
        envelope = read_envelope(msg.get("params"))
    if isinstance(envelope, Refusal):
        return {"jsonrpc": "2.0", "id": rid, "error": envelope.error()}
    session.revision = envelope.revision
    session.client_capabilities = envelope.capabilities
    session.client_info = envelope.client_info
    session.log_level = LOG_LEVELS[envelope.log_level] if envelope.log_level else _SILENT
    chain = session.server.middleware_chains.requests.get(method)
    if chain is not None and method in session.server.methods:
        # Middleware wraps the whole round: a retry with inputResponses passes through
        # it again, and sees the input_required result of a round that asks for more.
        resp = await serve_round(
            chain,
            session,
            msg,
            auth_info,
            functools.partial(_serve_round, session, send=send, auth_info=auth_info, run=run),
            functools.partial(complete_result, session, method),
        )
        if resp is None or "error" not in resp:
            return resp
    elif method not in INPUT_METHODS:
        resp = await run(msg, send, auth_info)
        if resp is None:
            return None
    else:
        # _serve_round written out for the common case, a tool that completes without
        # asking for input: one coroutine level less on every 2026-07-28 call.
        resp = None
        inline = runs_inline(session, msg)
        if inline:
            session.inputs = NOT_PAUSABLE
            try:
                resp = await run(msg, send, auth_info)
            except Restart:
                log.debug("the tool asked for input: run again as a pausable call")
                inline = False
            finally:
                session.inputs = None
        if not inline:
            resp = await _paused_round(session, msg, send, auth_info, run)
        if resp is None:
            return None
    error = resp.get("error")
    if error is not None:
        if error.get("code") == RESOURCE_NOT_FOUND:  # SEP-2164: -32602 from 2026-07-28 on
            resp["error"] = {**error, "code": session.revision.resource_not_found_code}
        return resp
    resp["result"] = complete_result(session, method, resp["result"])
    return resp


async def _serve_round(
    session: ServerSession, msg: dict[str, Any], send: Send, auth_info: Any, run: Run
) -> dict[str, Any] | None:
    """``run`` the request, in an input round when its method may ask for input (MRTR)."""
    if msg["method"] not in INPUT_METHODS:
        return await run(msg, send, auth_info)
    inline = runs_inline(session, msg)
    if inline:  # in this task (see runs_inline), unless the tool asks for input
        session.inputs = NOT_PAUSABLE
        try:
            return await run(msg, send, auth_info)
        except Restart:
            log.debug("the tool asked for input: run again as a pausable call")
        finally:
            session.inputs = None
    return await _paused_round(session, msg, send, auth_info, run)


async def _paused_round(
    session: ServerSession, msg: dict[str, Any], send: Send, auth_info: Any, run: Run
) -> dict[str, Any] | None:
    """``run`` the request as a call that may pause for input (:mod:`.input_required`)."""
    rid = msg["id"]
    try:
        return await session.server.input_rounds.serve(session, msg, send, auth_info, run)
    except MCPError as exc:  # a bad requestState: the handler never sees it
        return {"jsonrpc": "2.0", "id": rid, "error": exc.to_error()}
    finally:
        # A handler paused for input is still registered under this id: the
        # answer (input_required) frees the id all the same.
        session.answered(rid)


def complete_result(session: ServerSession, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with ``resultType``, ``_meta`` server info and, if cacheable, caching hints."""
    server = session.server
    out = dict(result)  # the handler's dict may be the caller's own: never changed in place
    if "resultType" not in out:
        out["resultType"] = "complete"
    meta = out.get("_meta")
    info = server.implementation_info(session.revision)
    out["_meta"] = {**meta, SERVER_INFO: info} if isinstance(meta, dict) else {SERVER_INFO: info}
    if method in CACHEABLE_METHODS and out["resultType"] == "complete":
        # A handler may have set the hint of the resource it read; fill what it left.
        hint = server.cache_hints.get(method)
        if hint is not None:
            for key, value in hint.fields().items():
                out.setdefault(key, value)
        out.setdefault("ttlMs", server.cache_ttl_ms)
        out.setdefault("cacheScope", server.cache_scope)
    return out


async def discover(session: ServerSession, req: Request) -> dict[str, Any]:
    """``server/discover``: versions, capabilities and identity (2026-07-28 server/discover)."""
    if session.revision.era != "stateless":
        raise MethodNotFound("Method not found: server/discover (use initialize)")
    server = session.server
    result: dict[str, Any] = {
        # Both eras are served at the one endpoint; the newest first.
        "supportedVersions": list(reversed(REVISIONS)),
        "capabilities": server.capabilities(session.revision),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result
