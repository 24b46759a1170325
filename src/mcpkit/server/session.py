"""One client's session on a server: lifecycle, dispatch, server→client requests.

The session is transport-agnostic, and every transport feeds it the same way:
each decoded message goes to :meth:`ServerSession.receive`, which says what it
is (a :class:`~mcpkit.protocol.jsonrpc.Kind`) and takes care at once of what
needs no answer (notifications, the client's answers to our requests). A
request or a batch is left to the transport to schedule as it sees fit (a task
per request on stdio; a JSON body, an SSE stream or a 202 on HTTP), by awaiting
:meth:`~ServerSession.serve` or :meth:`~ServerSession.serve_batch` with a
``send`` coroutine for the stream it arrived on (the stdout writer for stdio,
the request's SSE stream for Streamable HTTP); they return the response to
write. Related notifications and requests made while serving a request go to
that request's ``send``; unrelated ones (list changes, resource updates) go to
``standalone`` when the transport has one. :meth:`~ServerSession.handle` does
both steps for one message, for callers that need no scheduling of their own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final

from ..errors import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ConnectionClosed,
    InvalidParams,
    MCPError,
    RemoteError,
)
from ..protocol import jsonrpc
from ..protocol.correlation import Outgoing, Reply, admit, cancelled, finish, release
from ..protocol.envelope import Envelope, is_stateless_request
from ..protocol.error_answers import shutting_down_error, to_jsonrpc_error
from ..protocol.jsonrpc import Kind, classify
from ..protocol.lifecycle import State, allowed, next_state
from ..protocol.versions import REVISIONS, STATELESS_REVISIONS, Revision, negotiate
from .context import LOG_LEVELS
from .middleware import observe_notification
from .outbound import SessionOutbound
from .request import Request, Send, stopped_for_shutdown
from .stateless.dispatch import serve_stateless

if TYPE_CHECKING:
    from .server import MCPServer
    from .stateless.input_required import ParkedCall
    from .visibility import VisibilityRules

__all__ = ["Request", "Send", "ServerSession"]

log = logging.getLogger("mcpkit.server")

_MIN_INT = -(2**63)  # the integers orjson writes (jsonrpc.wire_id)
_MAX_INT = 2**64 - 1

# Module constants: an enum member read off its class costs a slow attribute lookup,
# and receive runs for every message.
_REQUEST: Final = Kind.REQUEST
_NOTIFICATION: Final = Kind.NOTIFICATION
_INVALID: Final = Kind.INVALID
_BATCH: Final = Kind.BATCH
# Members of one batch served at once (by as many worker tasks).
_BATCH_WIDTH: Final = 16
#: Messages in one JSON-RPC batch unless ``ServerLimits(max_batch_size=...)`` says otherwise.
DEFAULT_MAX_BATCH_SIZE: Final = 1000


async def _drop(message: dict[str, Any]) -> None:
    log.debug("no stream to deliver %s", message.get("method"))


class ServerSession(SessionOutbound):
    """State of one client connection (or one request, in stateless mode)."""

    __slots__ = (
        "__weakref__",
        "_handlers",
        "_inflight",
        "_outgoing",
        "broadcast_here",
        "client_capabilities",
        "client_info",
        "detached",
        "inputs",
        "log_level",
        "max_inflight",
        "on_state_change",
        "revision",
        "server",
        "session_id",
        "standalone",
        "state",
        "stateless",
        "subscriber_scopes",
        "subscriptions",
        "transport",
        "visibility",
    )

    def __init__(
        self,
        server: MCPServer,
        *,
        session_id: str | None = None,
        standalone: Send | None = None,
        stateless: bool = False,
        revision: str | None = None,
        transport: str | None = None,
    ) -> None:
        self.server = server
        self.session_id = session_id
        # What carries the session: "stdio", "streamable_http", "sse", "memory"; None when
        # unknown (a session made directly, or server.execute_tool's detached one).
        self.transport = transport
        self.standalone: Send = standalone or _drop
        self.stateless = stateless
        # No client at all (server.execute_tool): nothing could answer a request to it.
        self.detached = False
        self.state = State.READY if stateless else State.NEW
        self.revision: Revision = REVISIONS[revision or negotiate(None)]
        self.client_info: dict[str, Any] | None = None
        self.client_capabilities: dict[str, Any] = {}
        # Set on the stateless era while a request may ask the client for input (MRTR).
        self.inputs: ParkedCall | None = None
        self.log_level = LOG_LEVELS[server.default_log_level]
        self.subscriptions: set[str] = set()
        # The scopes granted to the token behind the last resources/(un)subscribe (or
        # subscriptions/listen); None: no auth info. The updates of a resource with
        # scopes reach the session only when these cover them (resources.may_hear).
        self.subscriber_scopes: frozenset[str] | None = None
        # False when another process delivers this session's broadcasts (list_changed,
        # resources/updated): a session served by several nodes of a cluster gets them
        # from the node holding its GET stream only (transports/cluster.py).
        self.broadcast_here = True
        # This session's own enable/disable rules (ctx.enable_components; .visibility).
        self.visibility: VisibilityRules | None = None
        # Awaited after logging/setLevel and resources/(un)subscribe change the session,
        # before the answer: a cluster shares the change with the other nodes first.
        self.on_state_change: Callable[[ServerSession], Awaitable[None]] | None = None
        # The client's requests being served: id -> Request, changed only with the
        # functions of protocol/correlation.py (admit, finish, release, cancelled).
        self._inflight: dict[Any, Request] = {}
        # Requests served at once, at most (None: no cap). The HTTP transports set it:
        # their clients can leave calls running by dropping connections, with no stream
        # to slow down, unlike stdio (which stops reading instead).
        self.max_inflight: int | None = None
        # Our requests to the client: made on first use (see the ``outgoing`` property).
        self._outgoing: Outgoing | None = None
        # Handshake era: the middleware wraps each handler; on 2026-07-28 serve_stateless
        # runs the chain around each round, with the bare table inside (chain passed once).
        server.look_for_telemetry()  # switched on when a provider is set (.telemetry)
        self._handlers = (
            server.wrapped_methods if self.revision.era == "handshake" else server.methods
        )

    @property
    def outgoing(self) -> Outgoing:
        """Our requests to the client (sampling, elicitation, roots, ping) awaiting answers;
        each entry's waiter is the future its sender awaits, and "mcpkit-" ids read apart
        from the client's. Made on first use: most sessions never send a request (every
        POST of stateless HTTP and of 2026-07-28 gets a session of its own)."""
        outgoing = self._outgoing
        if outgoing is None:
            outgoing = self._outgoing = Outgoing(id_prefix="mcpkit-")
        return outgoing

    def set_request_id_prefix(self, prefix: str) -> None:
        """Begin our request ids with ``prefix``: a cluster node names itself, for answers."""
        self._outgoing = Outgoing(id_prefix=prefix)

    # -- inbound -----------------------------------------------------------------------------
    def receive(self, msg: Any, defer: Callable[..., object] | None = None) -> Kind:
        """Take one decoded message (the entry point of every transport); say what it is.

        - ``REQUEST``: the transport serves it when it chooses: ``await serve(msg, send)``.
        - ``BATCH`` (a JSON array): likewise, ``await serve_batch(msg, send)``.
        - ``NOTIFICATION``, ``RESPONSE``, ``ERROR``: handled here (lifecycle,
          cancellation, answers to our requests); nothing to write. With ``defer``
          (``loop.call_soon``) that happens in the callback it schedules instead: stdio
          does so, so that a ``notifications/cancelled`` read right after its request
          finds it, the request's task having taken its first step.
        - ``INVALID``: not JSON-RPC; the transport answers ``jsonrpc.invalid_request(msg)``.
        """
        kind = classify(msg)
        if kind is _REQUEST:
            return kind
        if kind is _INVALID:
            return _BATCH if type(msg) is list else kind
        if defer is not None:
            defer(self.receive, msg)
        elif kind is _NOTIFICATION:
            self._notification(msg)
        else:
            self._response(msg)
        return kind

    async def handle(self, msg: Any, send: Send, *, auth_info: Any = None) -> dict[str, Any] | None:
        """:meth:`receive` one message, and :meth:`serve` it if it is a request; returns
        the response to write, if any (a batch is refused here: see :meth:`serve_batch`)."""
        kind = self.receive(msg)
        if kind is Kind.REQUEST:
            return await self.serve(msg, send, auth_info=auth_info)
        if kind is Kind.INVALID or kind is Kind.BATCH:
            return jsonrpc.invalid_request(msg)
        return None

    async def serve_batch(
        self, batch: list[Any], send: Send, *, auth_info: Any = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """A JSON-RPC array: only 2025-03-26 allows batches (2025-06-18 changelog).

        Returns the list of responses to write as one array (empty when the batch
        held only notifications and responses: write nothing), or, when the batch
        as a whole is refused, one error response object (JSON-RPC 2.0 § 6: an
        invalid batch gets a single response, not an array).
        """
        if not batch:
            return jsonrpc.invalid_request(None, "empty batch")
        if self.state is State.NEW:
            # The revision is not known yet, and initialize must not be batched
            # (2025-03-26 basic/lifecycle § initialization).
            return jsonrpc.invalid_request(None, "batches are not allowed before initialization")
        if not self.revision.batching:
            return jsonrpc.invalid_request(
                None,
                f"JSON-RPC batches are not supported in protocol revision {self.revision.name}",
            )
        limit = self.server.max_batch_size
        if len(batch) > limit:
            return jsonrpc.error_response(
                None,
                INVALID_REQUEST,
                f"Invalid request: a batch of {len(batch)} messages is over the limit of "
                f"{limit} (max_batch_size); send fewer at a time",
                {"maxBatchSize": limit},
            )
        results: list[dict[str, Any] | None] = [None] * len(batch)
        finished = [False] * len(batch)
        members = iter(enumerate(batch))

        async def work() -> None:
            for i, msg in members:
                results[i] = await self.handle(msg, send, auth_info=auth_info)
                finished[i] = True

        # A few workers share the members (JSON-RPC 2.0 § 6 lets a batch run at any
        # width): a task per member cost ~1 KB each, kept until the garbage collector
        # found the gather's cycles, so 3.5 MB of pings used to take ~130 MB. Cancelling
        # a member (notifications/cancelled cancels the task it runs in) still ends that
        # member only: dispatch takes the cancellation back and the worker goes on.
        width = min(_BATCH_WIDTH, len(batch))
        workers = [asyncio.ensure_future(work()) for _ in range(width)]
        try:
            await asyncio.gather(*workers)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not (stopped_for_shutdown(task) and task is not None and task.uncancel() == 0):
                raise
            # The server stops (see dispatch): the answers there are, and for every
            # request cut short or not started, the shutting-down error.
            for i, msg in enumerate(batch):
                if not finished[i] and classify(msg) is Kind.REQUEST:
                    results[i] = {"jsonrpc": "2.0", "id": msg["id"], "error": shutting_down_error()}
        finally:
            for worker in workers:
                worker.cancel()
        return [r for r in results if r is not None]

    handle_batch = serve_batch  # its earlier name

    def serve(
        self,
        msg: dict[str, Any],
        send: Send,
        *,
        auth_info: Any = None,
        envelope: Envelope | None = None,
    ) -> Coroutine[Any, Any, dict[str, Any] | None]:
        """Serve one request (one :meth:`receive` called ``REQUEST``): await it for the
        response to write, None when the client cancelled it. ``envelope``: its
        2026-07-28 ``_meta``, when the transport has read it already.

        A plain function returning the coroutine to await, so that a handshake-era
        request (the common case) runs one coroutine level deep, not two.
        """
        if self.revision.era == "stateless" or (
            self.state is State.NEW and not self.stateless and is_stateless_request(msg)
        ):
            return self._serve_stateless_request(msg, send, auth_info, envelope)
        return self.dispatch(msg, send, auth_info)

    async def _serve_stateless_request(
        self, msg: dict[str, Any], send: Send, auth_info: Any, envelope: Envelope | None
    ) -> dict[str, Any] | None:
        if self.revision.era == "stateless":
            resp = await serve_stateless(self, msg, send, auth_info, envelope)
        else:
            # A 2026-07-28 request on a connection that has not initialized (stdio's
            # server/discover probe): the era is decided per request, so serve it alone.
            single = self.server.create_session(
                stateless=True, revision=STATELESS_REVISIONS[-1], transport=self.transport
            )
            # Shared, so notifications/cancelled on this connection reaches the request.
            single._inflight = self._inflight
            resp = await serve_stateless(single, msg, send, auth_info)
        rid = msg["id"]
        if type(rid) is int and resp is not None and (rid > _MAX_INT or rid < _MIN_INT):
            resp["id"] = jsonrpc.wire_id(rid)  # beyond what orjson writes: exact digits
        return resp

    # serve_stateless(msg, send, auth_info, envelope): the coroutine serve awaits for a request
    # of a 2026-07-28 session, for a transport that steps it itself (the Streamable HTTP
    # POST path runs its first step in the ASGI task, the rest only if it suspends, watching
    # for a disconnect). The function itself, not a wrapper: no call more per request.
    serve_stateless = serve_stateless

    async def dispatch(
        self, msg: dict[str, Any], send: Send, auth_info: Any = None
    ) -> dict[str, Any] | None:
        """One request through the session's method table (lifecycle, admission, handler,
        errors as a response): what ``serve`` runs on the handshake era, and
        ``serve_stateless`` inside a 2026-07-28 round (its default ``run``)."""
        method: str = msg["method"]
        key = rid = msg["id"]
        if type(rid) is int and (rid > _MAX_INT or rid < _MIN_INT):
            rid = jsonrpc.wire_id(rid)  # in answers: beyond what orjson writes, exact digits
        if self.state is not State.READY and not self.stateless and not allowed(self.state, method):
            return jsonrpc.error_response(rid, INVALID_REQUEST, self._refusal(method))
        if method == "initialize" and not self.stateless:
            # Claim the handshake now: a second initialize sent while the first one
            # is still being served must be refused too.
            if self.state is not State.NEW:
                return jsonrpc.error_response(rid, INVALID_REQUEST, self._refusal(method))
            self.state = next_state(self.state, method)
        handler = self._handlers.get(method)
        if handler is None:
            return jsonrpc.error_response(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
        req = Request(self, msg, send, auth_info)
        inflight = self._inflight
        if admit(inflight, key, req, self.max_inflight) is not None:  # the exact id, as
            # cancellations name it
            return self._refuse_admission(key, rid)
        req.task = asyncio.current_task()
        try:
            result = await handler(self, req)
        except MCPError as exc:
            if method == "initialize" and not self.stateless:
                self.state = State.NEW  # a refused handshake may be retried
            return {"jsonrpc": "2.0", "id": rid, "error": exc.to_error()}
        except asyncio.CancelledError:
            task = req.task
            if req.cancelled and task is not None and task.uncancel() == 0:
                return None  # cancelled by the client: no response (utilities/cancellation)
            if stopped_for_shutdown(task) and task is not None and task.uncancel() == 0:
                # The server stops with the request unfinished: say so, and that another
                # server may take it, rather than leave the client without an answer.
                return {"jsonrpc": "2.0", "id": rid, "error": shutting_down_error()}
            raise
        except Exception as exc:
            if method == "initialize" and not self.stateless:
                self.state = State.NEW
            log.exception("handler for %s failed", method)
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "error": to_jsonrpc_error(exc, debug=self.server.debug),
            }
        finally:
            finish(inflight, key, req)
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def _refuse_admission(self, key: Any, rid: Any) -> dict[str, Any]:
        if key in self._inflight:
            # The first request keeps its id (and stays cancellable by it): ids are unique
            # among the sender's unanswered requests (basic § requests).
            return jsonrpc.error_response(
                rid,
                INVALID_REQUEST,
                "Invalid request: a request with this id is still in flight; request ids "
                "must be unique among unanswered requests",
            )
        cap = self.max_inflight
        return jsonrpc.error_response(
            rid,
            INVALID_REQUEST,
            f"Invalid request: too many requests in flight on this session (the limit "
            f"is {cap}); wait for answers, or cancel requests, before sending more",
            {"maxInflight": cap},
        )

    def _refusal(self, method: str) -> str:
        if self.state is State.CLOSED:
            return f"Invalid request: the session is closed ('{method}' refused)"
        if method == "initialize":
            return "Invalid request: the session is already initialized"
        return f"Invalid request: '{method}' received before initialization"

    def _notification(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        params = msg.get("params") or {}
        observe = self.server.observe  # telemetry: a span, parented by its _meta
        observer = observe(self, "served", method) if observe is not None else None
        if observer is not None:
            observer.opened(msg)
            try:
                self._on_notification(method, params)
            finally:
                observer.finished(None, None)
            return
        self._on_notification(method, params)

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            self.state = next_state(self.state, method)
        elif method == "notifications/cancelled":
            req = cancelled(self._inflight, params)
            if req is not None:
                reason = params.get("reason")
                self._stop(req, reason if isinstance(reason, str) else None)
        elif method == "notifications/roots/list_changed":
            for callback in self.server.roots_changed_callbacks:
                asyncio.get_running_loop().call_soon(_spawn, callback, self)
        # Other notifications (progress for our requests, unknown ones) are ignored. The
        # middleware that watch notifications see them now, acted on (see .middleware).
        chain = self.server.middleware_chains.notification(method)
        if chain is not None:
            _keep(asyncio.ensure_future(observe_notification(chain, self, method, params)))

    def _response(self, msg: dict[str, Any]) -> None:
        reply, entry = self.outgoing.answer(msg)
        if entry is None:
            log.debug("response to a request id that is not pending (%s): %r", reply, msg.get("id"))
            return
        fut: asyncio.Future[dict[str, Any]] = entry.waiter
        if fut.done():
            return
        if reply == Reply.RESULT:
            fut.set_result(msg["result"])
        elif reply == Reply.ERROR:
            # classify() let this message through, so the error has its code and message.
            err = msg["error"]
            fut.set_exception(RemoteError(err["message"], code=err["code"], data=err.get("data")))
        else:
            fut.set_exception(
                RemoteError("the client answered with a result that is not an object")
            )

    def answered(self, request_id: Any) -> None:
        """The client has its answer to ``request_id`` while its handler goes on (a call
        paused for input, MRTR): the id is free for a new request (2026-07-28 basic §
        requests), and no longer cancels the paused handler."""
        release(self._inflight, request_id)

    def is_running(self, request_id: Any) -> bool:
        """Whether the client's request ``request_id`` runs here (cluster.forward_cancel)."""
        return request_id in self._inflight

    def cancel(self, request_id: Any, reason: str | None = None) -> bool:
        """Cancel an in-flight request (as ``notifications/cancelled`` does)."""
        req = self._inflight.get(request_id)
        return req is not None and self._stop(req, reason)

    def _stop(self, req: Request, reason: str | None) -> bool:
        if req.method == "initialize":  # it MUST NOT be cancelled (basic/lifecycle)
            return False
        log.debug("request %r cancelled: %s", req.id, reason)
        req.signal.mark_cancelled()
        if req.task is not None:
            req.task.cancel()
        return True

    def close(self) -> None:
        """End the session: fail pending server→client requests, cancel in-flight ones."""
        self.state = State.CLOSED
        observe = self.server.observe
        if observe is not None:  # the session ended (telemetry: its duration)
            observe(self, "closed", "")
        if self._outgoing is not None:
            for entry in self._outgoing.drain():
                fut = entry.waiter
                if not fut.done():
                    fut.set_exception(ConnectionClosed("the session was closed"))
        for req in list(self._inflight.values()):
            req.signal.mark_cancelled()
            if req.task is not None and req.task is not asyncio.current_task():
                req.task.cancel()
        self.server.discard_session(self)
        for source in self.server.component_sources:  # what they hold for it (.sources)
            source.session_closed(self)

    # -- lifecycle requests ------------------------------------------------------------------
    async def initialize(self, req: Request) -> dict[str, Any]:
        params = req.params
        if not isinstance(params.get("capabilities", {}), dict):
            raise InvalidParams("initialize: 'capabilities' must be an object")
        self.revision = REVISIONS[negotiate(params.get("protocolVersion"))]
        self.client_info = params.get("clientInfo")
        self.client_capabilities = params.get("capabilities") or {}
        self.server.add_session(self)
        return self.server.initialize_result(self.revision)

    async def set_level(self, req: Request) -> dict[str, Any]:
        level = req.params.get("level")
        if type(level) is not str or level not in LOG_LEVELS:
            got = repr(level[:40]) if type(level) is str else jsonrpc.json_type(level)
            raise InvalidParams(
                f"Invalid log level: {got} (expected one of {', '.join(LOG_LEVELS)})"
            )
        self.log_level = LOG_LEVELS[level]
        if self.on_state_change is not None:
            await self.on_state_change(self)
        return {}


def _spawn(callback: Callable[[ServerSession], Any], session: ServerSession) -> None:
    result = callback(session)
    if asyncio.iscoroutine(result):
        _keep(asyncio.ensure_future(result))


def _keep(task: asyncio.Future[Any]) -> None:
    _background.add(task)
    task.add_done_callback(_background.discard)


_background: set[asyncio.Future[Any]] = set()
