"""Middleware: code that runs around every request a server serves.

A middleware is an async function ``mw(ctx, call_next)``, as in Starlette:

.. code-block:: python

    async def timing(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return await call_next(ctx)
        finally:
            log.info("%s took %.1f ms", ctx.method, (time.perf_counter() - started) * 1e3)

    server = MCPServer(name="demo", version="1.0.0", middleware=[timing])

``call_next(ctx)`` runs the rest of the chain and the method's handler, and
returns the request's ``result`` dict. It raises :class:`~mcpkit.errors.MCPError`
when the request ends in a JSON-RPC error (the exception carries the code,
message and data the client gets; an unexpected exception in a handler has
become the same ``Internal error`` the client sees), and
:class:`asyncio.CancelledError` when the client cancelled it. A middleware may
*short-circuit*: return a result without calling ``call_next``, or raise an
``MCPError`` (for example :class:`~mcpkit.errors.Forbidden`); the handler then
never runs. The list order is the nesting order: ``middleware=[a, b]`` runs
``a`` around ``b`` around the handler.

What passes through the chain (the rules are the same on every transport:
stdio, Streamable HTTP with or without sessions, legacy SSE, in memory):

- every *request* the server accepts for a method of its table
  (:data:`~mcpkit.server.methods.METHODS`), ``initialize`` included, on both
  protocol eras, and each member of a JSON-RPC batch. Requests refused by the
  protocol itself never reach it: an unknown method, a request before
  ``initialize``, a duplicate id, a bad 2026-07-28 envelope or header;
- on 2026-07-28, *each round* of an input-required exchange: a retry that
  carries ``inputResponses`` is a new request and passes through the chain
  again; the result of a round that asks for more input is the
  ``input_required`` result (``result["resultType"] == "input_required"``).
  Middleware sees each result as it goes on the wire, completed with
  ``resultType`` and the server's ``_meta`` on that era;
- not notifications (``notifications/initialized``, ``notifications/cancelled``,
  ...), which have no result to wrap and no one to refuse to, nor the
  client's answers to the server's own requests.

The chain is built once (at construction, and again by
:meth:`MCPServer.add_middleware`); a server without middleware serves exactly
as before, with no step added to the request path.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ConfigurationError,
    InvalidParams,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    to_jsonrpc_error,
)

if TYPE_CHECKING:
    from ..auth.info import AuthInfo
    from .server import MCPServer
    from .session import Request, ServerSession

__all__ = ["CallNext", "Middleware", "MiddlewareContext", "build_chain", "wrap_methods"]

log = logging.getLogger("mcpkit.server")

#: ``async handler(session, request) -> result``: one MCP method (``methods.METHODS``).
Handler = Callable[["ServerSession", "Request"], Awaitable[dict[str, Any]]]

#: ``await call_next(ctx)``: the rest of the chain, then the handler; returns the result.
CallNext = Callable[["MiddlewareContext"], Awaitable[dict[str, Any]]]
#: ``async def mw(ctx, call_next) -> result``.
Middleware = Callable[["MiddlewareContext", CallNext], Awaitable[dict[str, Any]]]


class MiddlewareContext:
    """What a middleware knows about the request it wraps.

    ``method``, ``params`` (the request's params, ``{}`` when it had none;
    treat them as read-only), ``request_id``, ``auth_info`` (what the HTTP auth
    middleware put in the ASGI scope as ``mcpkit.auth``; None on stdio, in
    memory and for unauthenticated requests), the ``session`` it arrived on
    with its ``session_id``, ``transport``, ``client_info``,
    ``client_capabilities``, ``revision`` and ``era``, the ``server`` and its ``lifespan_state``.

    On 2026-07-28 every request carries its own client info, capabilities and
    revision (in ``_meta``): they are read before the chain runs, so a
    middleware sees them already.
    """

    __slots__ = ("_endpoint", "auth_info", "method", "params", "request_id", "session")

    def __init__(
        self,
        session: ServerSession,
        method: str,
        params: dict[str, Any],
        request_id: Any,
        auth_info: Any,
        endpoint: Callable[[], Awaitable[dict[str, Any]]],
    ) -> None:
        self.session = session
        self.method = method
        self.params = params
        self.request_id = request_id
        self.auth_info = auth_info
        self._endpoint = endpoint

    @property
    def server(self) -> MCPServer:
        return self.session.server

    @property
    def auth(self) -> AuthInfo | None:
        """``auth_info`` typed as mcpkit's :class:`~mcpkit.auth.AuthInfo` (what a
        :class:`~mcpkit.auth.ProtectedResource` supplies), as ``ctx.auth`` in handlers."""
        info: AuthInfo | None = self.auth_info
        return info

    @property
    def session_id(self) -> str | None:
        """The transport's session id (Streamable HTTP, legacy SSE); None elsewhere."""
        return self.session.session_id

    @property
    def transport(self) -> str | None:
        """What carries the request: ``"stdio"``, ``"streamable_http"``, ``"sse"`` or
        ``"memory"`` (in-process clients and tests); None when unknown."""
        return self.session.transport

    @property
    def client_info(self) -> dict[str, Any] | None:
        """The client's ``Implementation`` (``name``, ``version``), when it sent one."""
        return self.session.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.session.client_capabilities

    @property
    def revision(self) -> str:
        """The protocol revision of the request, e.g. ``"2025-11-25"`` or ``"2026-07-28"``.

        Before ``initialize`` has been answered this is the revision the
        server would offer; for ``initialize`` itself read ``params``.
        """
        return self.session.revision.name

    @property
    def era(self) -> str:
        """``"handshake"`` (2024-11-05 .. 2025-11-25) or ``"stateless"`` (2026-07-28)."""
        return self.session.revision.era

    @property
    def lifespan_state(self) -> Any:
        """What the server's lifespan yielded (see ``MCPServer(lifespan=...)``)."""
        return self.session.server.lifespan_state

    def __repr__(self) -> str:
        return f"<MiddlewareContext {self.method} id={self.request_id!r} era={self.era}>"


# The chain's links are plain functions that return the next awaitable rather than
# coroutines that await it: a coroutine per link per request (a frame, a send, a
# return) is most of what an empty middleware costs.
def _endpoint(ctx: MiddlewareContext) -> Awaitable[dict[str, Any]]:
    return ctx._endpoint()


def _link(mw: Middleware, call_next: CallNext, ctx: MiddlewareContext) -> Awaitable[dict[str, Any]]:
    return mw(ctx, call_next)


def check_middleware(middleware: Sequence[Middleware] | None) -> list[Middleware]:
    """``MCPServer(middleware=...)``: a sequence of async callables."""
    if middleware is None:
        return []
    if isinstance(middleware, str | bytes) or not isinstance(middleware, Sequence):
        raise ConfigurationError(
            "middleware must be a list of async functions mw(ctx, call_next), "
            f"not {type(middleware).__name__}"
        )
    for i, mw in enumerate(middleware):
        if not callable(mw):
            raise ConfigurationError(
                f"middleware[{i}]: {mw!r} is not callable; a middleware is an async "
                "function mw(ctx, call_next)"
            )
    return list(middleware)


def build_chain(middleware: Sequence[Middleware]) -> CallNext | None:
    """The chain as one callable (``middleware[0]`` outermost); None for no middleware."""
    if not middleware:
        return None
    call: CallNext = _endpoint
    for mw in reversed(middleware):
        call = functools.partial(_link, mw, call)
    return call


def _checked(result: dict[str, Any], ctx: MiddlewareContext) -> dict[str, Any]:
    """``result``, what the chain returned for ``ctx``, if it is a result dict."""
    if type(result) is not dict:
        # A middleware that forgot to return call_next's result: say so in the log; the
        # client gets an internal error rather than a response without a result.
        raise TypeError(
            f"middleware returned {type(result).__name__} for {ctx.method}, not the result "
            "dict (return await call_next(ctx))"
        )
    return result


# -- the handshake era: the chain wraps each handler of the table -------------------------------


def wrap_methods(methods: Mapping[str, Handler], chain: CallNext | None) -> dict[str, Handler]:
    """The table a handshake-era session dispatches with: each handler inside ``chain``.

    The session has already registered the request (so a client's cancel reaches
    the middleware as :class:`asyncio.CancelledError`) and maps what the chain
    raises to the JSON-RPC error, as it does for a handler.
    """
    if chain is None:
        return dict(methods)
    return {name: _wrapped(name, handler, chain) for name, handler in methods.items()}


def _wrapped(method: str, handler: Handler, chain: CallNext) -> Handler:
    async def through_chain(session: ServerSession, req: Request) -> dict[str, Any]:
        endpoint = functools.partial(_call_handler, handler, session, req)
        ctx = MiddlewareContext(session, method, req.params, req.id, req.auth_info, endpoint)
        return _checked(await chain(ctx), ctx)

    return through_chain


async def _call_handler(handler: Handler, session: ServerSession, req: Request) -> dict[str, Any]:
    try:
        return await handler(session, req)
    except MCPError:
        raise
    except Exception as exc:
        # What the client gets, raised as the one exception type call_next raises; logged
        # here, where the traceback still points at the handler.
        log.exception("handler for %s failed", req.method)
        raise error_from_wire(to_jsonrpc_error(exc, debug=session.server.debug)) from exc


# -- the 2026-07-28 era: the chain wraps each round ---------------------------------------------

_BY_CODE: dict[int, type[MCPError]] = {
    INVALID_REQUEST: InvalidRequest,
    INVALID_PARAMS: InvalidParams,
    METHOD_NOT_FOUND: MethodNotFound,
}


def error_from_wire(error: dict[str, Any]) -> MCPError:
    """The exception ``call_next`` raises for a JSON-RPC error object ``error``."""
    code = error.get("code")
    message = str(error.get("message", ""))
    kind = _BY_CODE.get(code) if type(code) is int else None
    if kind is not None:
        return kind(message, data=error.get("data"))
    return MCPError(message, code=code if type(code) is int else None, data=error.get("data"))


class _Unanswered(asyncio.CancelledError):
    """The round ended without a response (the client cancelled it)."""


async def serve_round(
    chain: CallNext,
    session: ServerSession,
    msg: dict[str, Any],
    auth_info: Any,
    round_: Callable[[], Awaitable[dict[str, Any] | None]],
    complete: Callable[[dict[str, Any]], dict[str, Any]],
) -> dict[str, Any] | None:
    """One 2026-07-28 request (one round) through ``chain``; returns the response.

    ``round_`` serves it as without middleware (input rounds included) and
    returns the response; ``complete`` completes a result for the wire
    (``resultType``, ``_meta``, caching hints), also one a middleware made up.
    """
    rid = msg["id"]

    async def endpoint() -> dict[str, Any]:
        resp = await round_()
        if resp is None:
            raise _Unanswered
        error = resp.get("error")
        if error is not None:
            raise error_from_wire(error)
        return complete(resp["result"])

    params = msg.get("params")
    ctx = MiddlewareContext(
        session, msg["method"], params if isinstance(params, dict) else {}, rid, auth_info, endpoint
    )
    try:
        result = _checked(await chain(ctx), ctx)
    except _Unanswered:
        return None
    except MCPError as exc:
        return {"jsonrpc": "2.0", "id": rid, "error": exc.to_error()}
    except Exception as exc:
        log.exception("middleware for %s failed", msg["method"])
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "error": to_jsonrpc_error(exc, debug=session.server.debug),
        }
    return {"jsonrpc": "2.0", "id": rid, "result": complete(result)}
