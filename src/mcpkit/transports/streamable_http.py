"""Streamable HTTP transport (2025-03-26 … 2026-07-28): a lean ASGI app.

A POST of the stateless 2026-07-28 revision (named by its ``MCP-Protocol-Version`` header
or, without one, by its ``_meta`` envelope) is served by :mod:`.streamable_http_stateless`;
everything below describes the handshake era, whose clients share the endpoint.

One endpoint (``path``) answers POST (client messages), GET (the session's standalone SSE
stream, or a resumed stream with ``Last-Event-ID``) and DELETE (end the session). The hot
path is: check headers from one ``dict`` of the raw header list → read the body →
``orjson.loads`` once → ``session.handle`` → ``orjson.dumps`` once → two ``send`` calls.
No framework, no queue, no extra task per request. The POST path is here; creating,
finding, streaming (GET) and ending (DELETE) sessions is :mod:`.streamable_sessions`, and
reading the POST body is :mod:`.http_intake`.

Choices the spec leaves open (2025-11-25 basic/transports):

* **Response type.** A request is answered with an SSE stream when the client accepts
  ``text/event-stream`` (related notifications and server→client requests go on it before
  the response), with plain JSON when ``json_response`` is set or the client accepts only
  JSON. Stateless apps default to JSON. In JSON mode related messages go to the session's
  standalone stream (the GET stream, if one is open).
* **Accept.** Lenient: a missing ``Accept`` or ``*/*`` accepts anything; 406 only when
  neither JSON nor SSE is acceptable.
* **Sessions.** ``initialize`` creates one; its id (``secrets.token_urlsafe``, 256 bits)
  comes back in ``Mcp-Session-Id``. Sessions idle for ``session_idle_timeout`` seconds
  (default 30 min) expire; expiry is checked on lookup and by a sweep that runs at most
  every few seconds from the request path (no timers per session; sessions are kept in LRU
  order so a sweep stops at the first live one). At most ``max_sessions`` (default 10 000)
  live at once: a new session evicts the least recently used *idle* one (its client gets
  404 and re-initializes, as the spec prescribes); only when every session is busy does
  ``initialize`` get 503.
* **Stores.** A session's record goes to the ``session_store`` (default: in memory), its
  live streams and tasks stay here; ``MCPServer(store=...)`` gives both stores. A shared
  one (Redis) makes the app a node of a cluster (:mod:`.cluster`).
* **Resumability** (only with an ``event_store``): every SSE event carries an id; POST
  streams of 2025-11-25 sessions start with a priming event (id, empty data, optional
  ``retry``); a handler may close its request's stream early (``ctx.close_sse_stream()``,
  SEP-1699) and the client resumes with ``GET`` + ``Last-Event-ID``, getting the rest by
  replay, then live. An unknown or foreign ``Last-Event-ID`` is treated as a plain GET.
* **One GET stream per session**: a second plain GET gets 409; a GET resuming the
  standalone stream (its ``Last-Event-ID``) takes over instead, since the old connection is
  evidently dead. Without a GET stream, unrelated messages are dropped, or kept in the
  event store once the session has listened at least once.
* **Disconnection is not cancellation**: a client dropping a POST stream does not stop the
  handler; with an event store its messages wait for a resume. So a session has at most
  ``max_inflight`` requests in flight. Without sessions (``stateless``) nobody could ever
  get the answer: there a disconnect does cancel the request.
* **Keep-alive**: SSE streams get a ``: ping`` comment after ``keepalive_interval`` seconds
  (default 15) without traffic.
* **Other paths**: custom routes and the health probes, or 404 (:mod:`.http_routes`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from ..errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ConfigurationError,
    ServerBusy,
    StoreUnavailable,
)
from ..protocol import jsonrpc
from ..protocol.envelope import is_stateless_request, unsupported_version
from ..protocol.http_errors import error_answer
from ..protocol.jsonrpc import Kind, error_response, invalid_request
from ..protocol.versions import DEFAULT_HTTP_REVISION, REVISIONS, STATELESS_REVISIONS
from ..server.stateless.input_required import principal_of
from ..server.stateless.listen import end_subscriptions
from ..server.telemetry import with_trace_headers
from ..stores import EventStore, MemorySessionStore, SessionStore
from .asgi import (
    AUTH_SCOPE_KEY,
    JSON_CT,
    SSE_HEADERS,
    ClientGone,
    Receive,
    Scope,
    Send,
    check_max_inflight,
    register_stream_owner,
    route_path,
    send_body,
    send_error,
    send_internal_error,
    send_rejected,
    send_store_unavailable,
    sse_event,
)
from .cluster import cluster_for
from .http_auth import foreign_principal, refuse_insufficient_scope
from .http_intake import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    REFUSED,
    check_body_timeout,
    read_json_post,
)
from .http_request_streams import DEFAULT_MAX_QUEUED_BYTES, RequestStream, record_event
from .http_routes import HealthOptions, RouteTable
from .http_sessions import HTTPSession, SessionTable
from .security import DEFAULT_MAX_HEADER_SIZE, RequestGuard
from .streamable_http_stateless import WATCH_AFTER_S, DisconnectWatch, serve_stateless_post
from .streamable_sessions import BUSY, JSON_MODE, SessionEndpoints, drop, new_session_id

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_KEEPALIVE",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_MAX_SESSIONS",
    "StreamableHTTPApp",
]

log = logging.getLogger("mcpkit.transports.http")

DEFAULT_IDLE_TIMEOUT: Final = 30 * 60.0
DEFAULT_MAX_SESSIONS: Final = 10_000
DEFAULT_KEEPALIVE: Final = 15.0
DEFAULT_MAX_INFLIGHT: Final = 256
_JSON = JSON_MODE
_SSE = 1
_NOT_ACCEPTABLE = -1

_ALLOW_STATEFUL: Final = (b"allow", b"GET, POST, DELETE")
_ALLOW_STATELESS: Final = (b"allow", b"POST")
_OK: Final[tuple[int, tuple[tuple[bytes, bytes], ...]]] = (200, ())


def _json_headers(body: bytes, extra: Sequence[tuple[bytes, bytes]] = ()) -> list[Any]:
    return [JSON_CT, (b"content-length", str(len(body)).encode()), *extra]


class StreamableHTTPApp(SessionEndpoints):
    """An ASGI app serving ``server`` over Streamable HTTP at ``path``.

    >>> app = server.http_app()                              # uvicorn module:app
    >>> outer = Starlette(routes=[Mount("/api", app=app)])   # served at /api/mcp

    Options (all keyword-only):

    ``stateless``
        No sessions: every POST gets a fresh session, GET and DELETE answer
        405, and server→client requests (elicitation, sampling, roots) fail
        with a clear error.
    ``json_response``
        Answer requests with plain JSON instead of an SSE stream. Default:
        JSON when stateless, SSE (when the client accepts it) otherwise.
    ``session_id_generator``
        Returns new session ids (visible ASCII); default 256 random bits.
    ``on_session_initialized``
        Called (sync or async) with the id of each new session before the
        ``initialize`` response is sent.
    ``event_store``
        Makes SSE streams resumable (see :mod:`mcpkit.stores.events`). Default:
        ``server.store.events`` when the server was given a ``store``, else none.
    ``session_store``
        Where session records live (see :mod:`mcpkit.stores.sessions`). Default:
        ``server.store.sessions`` when the server was given a ``store``, else a
        :class:`~mcpkit.stores.MemorySessionStore`.
    ``allowed_origins``, ``allowed_hosts``
        DNS-rebinding protection (see :mod:`.security`; ``["*"]`` disables).
    ``max_body_size``, ``max_header_size``
        Bytes per POST body (4 MiB; more: 413) and request head (64 KiB; more: 431; None: any).
    ``body_timeout``
        Seconds for a POST body to arrive in full (default 30; None: no limit);
        a slower one gets 408 and the connection is closed.
    ``session_idle_timeout``, ``max_sessions``
        Idle sessions end after this many seconds (default 1800); at most this
        many live sessions (default 10 000).
    ``max_inflight``
        Requests a session may have in flight at once (default 256; None: no
        cap). A client that drops its connections leaves its calls running (a
        dropped stream is not a cancellation), so without a cap their memory
        only grows; a request beyond the cap is answered at once with a
        ``-32600`` error saying so (``data.maxInflight``). Sessionless
        requests (``stateless``, 2026-07-28) are one per HTTP request.
    ``retry_interval_ms``
        The SSE ``retry`` sent in priming events and before a server-initiated
        close; None sends none (clients use their default).
    ``keepalive_interval``
        Seconds of silence before an SSE ``: ping`` comment (default 15; None disables).
    ``max_queued_bytes``
        Bytes of messages that may wait for one GET (or resumed) stream whose
        client reads slowly (default 4 MiB); past that, messages are dropped.
    ``debug``
        Put exception details in 500 answers (also on when ``server.debug``).
    ``health``
        ``/healthz``, ``/readyz``: :class:`.http_routes.HealthOptions`, or False for none.
    """

    def __init__(
        self,
        server: MCPServer,
        *,
        path: str = "/mcp",
        stateless: bool = False,
        json_response: bool | None = None,
        session_id_generator: Callable[[], str] | None = None,
        on_session_initialized: Callable[[str], Any] | None = None,
        event_store: EventStore | None = None,
        session_store: SessionStore | None = None,
        allowed_origins: Sequence[str] | None = None,
        allowed_hosts: Sequence[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        max_header_size: int | None = DEFAULT_MAX_HEADER_SIZE,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        session_idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_inflight: int | None = DEFAULT_MAX_INFLIGHT,
        retry_interval_ms: int | None = None,
        keepalive_interval: float | None = DEFAULT_KEEPALIVE,
        max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
        debug: bool = False,
        health: HealthOptions | bool | None = None,
    ) -> None:
        if not path.startswith("/"):
            raise ConfigurationError(f"path must start with '/': {path!r}")
        if max_body_size < 1 or max_sessions < 1 or session_idle_timeout <= 0:
            raise ConfigurationError(
                "max_body_size, max_sessions and session_idle_timeout must be positive"
            )
        check_max_inflight(max_inflight)
        if retry_interval_ms is not None and retry_interval_ms < 0:
            raise ConfigurationError("retry_interval_ms must be >= 0")
        if keepalive_interval is not None and keepalive_interval <= 0:
            raise ConfigurationError("keepalive_interval must be positive or None")
        if max_queued_bytes < 1:
            raise ConfigurationError(
                f"max_queued_bytes must be a positive number of bytes, not {max_queued_bytes}"
            )
        self.server = server
        self.path = path
        stripped = path.rstrip("/")
        self._paths = frozenset({stripped, stripped + "/"}) if stripped else frozenset({"", "/"})
        self.stateless = stateless
        self._modes: dict[bytes | None, int] = {}
        self._json_response = stateless if json_response is None else json_response
        self.session_id_generator = session_id_generator or new_session_id
        self.on_session_initialized = on_session_initialized
        shared = server.store
        if event_store is None and shared is not None:
            event_store = shared.events
        if session_store is None:
            session_store = shared.sessions if shared is not None else MemorySessionStore()
        self.event_store = event_store
        self.session_store = session_store
        self.max_body_size = max_body_size
        self.body_timeout = check_body_timeout(body_timeout)
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        self.max_inflight = max_inflight
        self.retry_interval_ms = retry_interval_ms
        self.keepalive_interval = keepalive_interval
        self.max_queued_bytes = max_queued_bytes
        self.debug = debug or server.debug
        self.guard = RequestGuard(
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_header_size=max_header_size,
        )
        self._sessions = SessionTable(
            idle_timeout=session_idle_timeout, max_sessions=max_sessions, store=session_store
        )
        self._versions = frozenset(name.encode() for name in REVISIONS)
        self._stateless_versions = frozenset(name.encode() for name in STATELESS_REVISIONS)
        self._supported = tuple(reversed(REVISIONS))
        self.retry_field = (
            b"retry: %d\n\n" % retry_interval_ms if retry_interval_ms is not None else b""
        )
        self._allow = _ALLOW_STATELESS if stateless else _ALLOW_STATEFUL
        self.routes = RouteTable(  # server.custom_route's routes and the probes (.http_routes)
            server, self.guard, reserved=self._paths, health=health, max_body_size=max_body_size
        )
        # A shared store (Redis) makes this app one node of a cluster (.cluster).
        self.cluster = cluster_for(self)
        self._sessions.shared = self.cluster is not None
        register_stream_owner(self)

    @property
    def json_response(self) -> bool:
        return self._json_response

    @json_response.setter
    def json_response(self, value: bool) -> None:
        self._json_response = value
        self._modes.clear()  # the remembered response modes depend on it

    # -- ASGI ------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "lifespan":
                await self._lifespan(receive, send)
            return
        if (path := route_path(scope)) not in self._paths:  # the MCP endpoint's one compare
            await self.routes.serve(path, scope, receive, send)  # a custom route, a probe or 404
            return
        headers: dict[bytes, bytes] = dict(scope["headers"])
        verdict = self.guard.admit(scope, headers)
        if verdict is not None:
            await send_error(send, verdict[0], INVALID_REQUEST, verdict[1])
            return
        method = scope["method"]
        try:
            if self.cluster is not None and not self.cluster.started:
                await self.cluster.start()  # not done yet if the host ran no lifespan
            if method == "POST":
                post = self._post(scope, receive, send, headers)  # traced: telemetry's headers
                traced = self.server.http_context is not None
                await (with_trace_headers(self.server, scope, post) if traced else post)
            elif method == "GET" and not self._stateless_era(headers):
                await self._get(scope, receive, send, headers)
            elif method == "DELETE" and not self._stateless_era(headers):
                await self._delete(scope, send, headers)
            else:
                await send_error(
                    send,
                    405,
                    INVALID_REQUEST,
                    f"Method not allowed: {method}",
                    [_ALLOW_STATELESS if self._stateless_era(headers) else self._allow],
                )
        except ClientGone:
            return
        except StoreUnavailable as exc:  # Redis is away: 503, the client may retry later
            log.warning("cannot serve %s %s: %s", method, scope.get("path"), exc)
            await send_store_unavailable(send)
        except ServerBusy:  # a session of the cluster, but no room for it on this node
            await send_error(send, 503, INTERNAL_ERROR, BUSY)
        except Exception as exc:  # never kill the server, never leak internals
            log.exception("error serving %s %s", method, scope.get("path"))
            await send_internal_error(send, exc, self.debug)

    def _stateless_era(self, headers: dict[bytes, bytes]) -> bool:
        """GET and DELETE are 405 without sessions, and for 2026-07-28 clients (its transport
        page, § earlier Streamable HTTP revisions)."""
        return self.stateless or headers.get(b"mcp-protocol-version") in self._stateless_versions

    # -- POST ------------------------------------------------------------------------------------
    def _response_mode(self, accept: bytes | None) -> int:
        # Clients repeat one Accept value: remember the answers (at most 64 values).
        mode = self._modes.get(accept)
        if mode is None:
            mode = self._mode_for(accept)
            if len(self._modes) < 64:
                self._modes[accept] = mode
        return mode

    def _mode_for(self, accept: bytes | None) -> int:
        if accept is None:
            return _JSON
        a = accept.lower()
        sse = b"text/event-stream" in a
        json = b"application/json" in a or b"*/*" in a or b"application/*" in a
        if self.json_response or not sse:
            if json:
                return _JSON
            return _SSE if sse or b"text/*" in a else _NOT_ACCEPTABLE
        return _SSE

    async def _post(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        mode = self._response_mode(headers.get(b"accept"))
        if mode == _NOT_ACCEPTABLE:
            await send_error(
                send,
                406,
                INVALID_REQUEST,
                "Not Acceptable: accept application/json and text/event-stream",
            )
            return
        version = headers.get(b"mcp-protocol-version")
        msg = await read_json_post(
            receive,
            send,
            headers,
            max_body_size=self.max_body_size,
            body_timeout=self.body_timeout,
        )
        if msg is REFUSED:
            return
        auth_info = scope.get(AUTH_SCOPE_KEY)
        if version is not None and version not in self._versions:
            # Read after the body so the error can echo the request id (SEP-2575).
            refusal = unsupported_version(version.decode("latin-1"), self._supported)
            rid = msg.get("id") if type(msg) is dict else None
            await send_rejected(
                send, error_response(rid, refusal.code, refusal.message, refusal.data)
            )
            return
        if auth_info is not None and await refuse_insufficient_scope(
            self.server, msg, auth_info, scope, send
        ):
            return  # 403 insufficient_scope: nothing runs (MCP authorization § scope challenge)
        # The era is decided per request (2026-07-28 versioning § backward compatibility):
        # the header names it, or, without a header, the body's _meta envelope does.
        if version in self._stateless_versions or (
            version is None
            and b"mcp-session-id" not in headers
            and type(msg) is dict
            and is_stateless_request(msg)
        ):
            await serve_stateless_post(
                self.server,
                msg,
                headers,
                receive,
                send,
                auth_info,
                keepalive_interval=self.keepalive_interval,
            )
            return
        if self.stateless:
            revision = version.decode() if version is not None else DEFAULT_HTTP_REVISION
            session = self.server.create_session(
                stateless=True, revision=revision, transport="streamable_http"
            )
            await self._dispatch_sessionless(session, msg, mode, receive, send, auth_info)
            return
        raw_sid = headers.get(b"mcp-session-id")
        if raw_sid is None:
            if type(msg) is dict and msg.get("method") == "initialize" and "id" in msg:
                await self._initialize(msg, mode, send, auth_info, principal_of(auth_info))
            else:
                await send_error(
                    send, 400, INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header"
                )
            return
        entry = self._lookup(raw_sid)
        if self.cluster is not None:  # also a session another node made
            entry = await self.cluster.find(raw_sid, entry)
        if entry is None or (
            (entry.principal is not None or auth_info is not None)
            and foreign_principal(entry.principal, auth_info)
        ):
            # Another principal's session is answered as an unknown one: nothing leaks.
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
            return
        if self.cluster is not None and await self.cluster.pass_on(entry, msg):
            await send_body(send, 202)  # an answer to, or a cancel for, another node's request
            return
        entry.busy += 1
        try:
            session = entry.session
            kind = session.receive(msg)
            await self._dispatch(session, entry, msg, kind, mode, send, auth_info)
        finally:
            entry.busy -= 1
            self._sessions.touch(entry)

    async def _dispatch(
        self,
        session: ServerSession,
        entry: HTTPSession | None,
        msg: Any,
        kind: Kind,
        mode: int,
        send: Send,
        auth_info: Any,
    ) -> None:
        """Answer the POST of ``msg``, which ``session.receive`` took as ``kind``."""
        if kind is not Kind.REQUEST:
            if kind is Kind.BATCH:
                await self._dispatch_batch(session, entry, msg, mode, send, auth_info)
            elif kind is Kind.INVALID:
                await send_rejected(send, invalid_request(msg))
            else:  # a notification or an answer, handled by receive
                await send_body(send, 202)
            return
        if mode == _JSON:
            resp = await session.serve(
                msg, entry if entry is not None else drop, auth_info=auth_info
            )
            if resp is None:  # cancelled by the client: nothing to answer
                await send_body(send, 202)
                return
            body = jsonrpc.dumps(resp)
            status, extra = error_answer(resp) if "error" in resp else _OK  # 429: Retry-After
            headers = _json_headers(body, extra)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self._stream_response(session, entry, msg, send, auth_info)

    async def _dispatch_sessionless(
        self,
        session: ServerSession,
        msg: Any,
        mode: int,
        receive: Receive,
        send: Send,
        auth_info: Any,
    ) -> None:
        """Serve a POST of ``stateless`` mode, where a client disconnect cancels the work.

        No session outlives the POST, so once its client has gone nobody can ever
        receive the answer: the handler is cancelled, as on 2026-07-28
        (:mod:`.streamable_http_stateless`), instead of running on for no one. The watcher starts
        only after ``WATCH_AFTER_S``, so quick requests pay nothing for it.
        """
        kind = session.receive(msg)
        if kind is Kind.REQUEST:
            watch = DisconnectWatch(receive, session, msg["id"])
        elif kind is Kind.BATCH:
            watch = DisconnectWatch(receive, session, None)  # a batch: close it all
        else:
            await self._dispatch(session, None, msg, kind, mode, send, auth_info)
            return
        timer = asyncio.get_running_loop().call_later(WATCH_AFTER_S, watch.start)
        try:
            await self._dispatch(session, None, msg, kind, mode, send, auth_info)
        finally:
            timer.cancel()
            await watch.stop()

    async def _stream_response(
        self,
        session: ServerSession,
        entry: HTTPSession | None,
        msg: Any,
        send: Send,
        auth_info: Any,
    ) -> None:
        store = self.event_store
        stream_id = None
        if entry is not None and store is not None:
            stream_id = entry.new_stream_id(msg.get("id"))
        stream = RequestStream(self, entry, send, stream_id)
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        if stream_id is not None:
            assert entry is not None and store is not None
            if entry.streams is None:
                entry.streams = {}
            entry.streams[stream_id] = stream
            if session.revision.sse_polling:
                # SEP-1699: an id before anything else, so the client can always resume.
                event_id = await record_event(store, stream_id, None)
                retry = (
                    b"retry: %d\n" % self.retry_interval_ms
                    if self.retry_interval_ms is not None
                    else b""
                )
                if event_id is not None:  # else the store failed: no priming, no close
                    stream.primed = True
                    await stream.write(
                        b"id: " + event_id.encode() + b"\n" + retry + b"data: \n\n", True
                    )
        if self.keepalive_interval is not None:
            stream.arm()
        try:
            resp = await session.serve(msg, stream, auth_info=auth_info)
        except BaseException:
            await stream.end()
            raise
        if resp is None:
            await stream.end()
        else:
            await stream.emit(resp, True)

    async def _dispatch_batch(
        self,
        session: ServerSession,
        entry: HTTPSession | None,
        batch: list[Any],
        mode: int,
        send: Send,
        auth_info: Any,
    ) -> None:
        # 2025-03-26 only (session.serve_batch enforces the revision rule).
        related = entry if entry is not None else drop
        results: Any = await session.serve_batch(batch, related, auth_info=auth_info)
        if type(results) is dict:  # the batch as a whole was refused
            await send_rejected(send, results)
            return
        if not results:  # only notifications and responses
            await send_body(send, 202)
            return
        body = jsonrpc.dumps(results)
        if mode == _JSON:
            await send_body(send, 200, body)
            return
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        await send({"type": "http.response.body", "body": sse_event(body), "more_body": False})

    def end_streams(self) -> None:
        """Close every GET/resumed stream's connection (with ``retry``) so a server can stop;
        answer every 2026-07-28 ``subscriptions/listen`` so its stream ends too."""
        self._sessions.end_streams()
        end_subscriptions(self.server)
