"""Streamable HTTP transport (2025-03-26 … 2025-11-25): a lean ASGI app.

One endpoint (``path``) answers POST (client messages), GET (the session's
standalone SSE stream, or a resumed stream with ``Last-Event-ID``) and DELETE
(end the session). The hot path is: check headers from one ``dict`` of the
raw header list → read the body → ``orjson.loads`` once → ``session.handle`` →
``orjson.dumps`` once → two ``send`` calls. No framework, no queue, no extra
task per request.

Choices the spec leaves open (2025-11-25 basic/transports):

* **Response type.** A request is answered with an SSE stream when the client
  accepts ``text/event-stream`` (related notifications and server→client
  requests go on it before the response), with plain JSON when
  ``json_response`` is set or the client accepts only JSON. Stateless apps
  default to JSON. In JSON mode related messages go to the session's
  standalone stream (the GET stream, if one is open).
* **Accept.** Lenient: a missing ``Accept`` or ``*/*`` accepts anything; 406
  only when neither JSON nor SSE is acceptable.
* **Sessions.** ``initialize`` creates one; its id (``secrets.token_urlsafe``,
  256 bits) comes back in ``Mcp-Session-Id``. Sessions idle for
  ``session_idle_timeout`` seconds (default 30 min) expire; expiry is checked
  on lookup and by a sweep that runs at most every few seconds from the
  request path (no timers per session; sessions are kept in LRU order so a
  sweep stops at the first live one). At most ``max_sessions`` (default
  10 000) live at once: a new session evicts the least recently used *idle*
  one (its client gets 404 and re-initializes, as the spec prescribes); only
  when every session is busy does ``initialize`` get 503.
* **Resumability** (only with an ``event_store``): every SSE event carries an
  id; POST streams of 2025-11-25 sessions start with a priming event (id,
  empty data, optional ``retry``); a handler may close its request's stream
  early (``ctx.close_sse_stream()``, SEP-1699) and the client resumes with
  ``GET`` + ``Last-Event-ID``, getting the rest by replay, then live. An
  unknown or foreign ``Last-Event-ID`` is treated as a plain GET.
* **Disconnection is not cancellation**: a client dropping a POST stream does
  not stop the handler; with an event store its messages wait for a resume.
* **Keep-alive**: SSE streams get a ``: ping`` comment after
  ``keepalive_interval`` seconds (default 15) without traffic.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from ..errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, ConfigurationError
from ..protocol.jsonrpc import Kind, classify, invalid_request
from ..protocol.versions import DEFAULT_HTTP_REVISION, REVISIONS
from .asgi import (
    AUTH_SCOPE_KEY,
    JSON_CT,
    PING,
    SSE_HEADERS,
    BodyTooLarge,
    ClientGone,
    Message,
    Receive,
    Scope,
    Send,
    lifespan,
    read_body,
    register_stream_owner,
    route_path,
    send_body,
    send_error,
    sse_event,
)
from .event_store import EventStore
from .security import RequestGuard

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_KEEPALIVE",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_SESSIONS",
    "StreamableHTTPApp",
]

log = logging.getLogger("mcpkit.transports.http")

DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
DEFAULT_IDLE_TIMEOUT: Final = 30 * 60.0
DEFAULT_MAX_SESSIONS: Final = 10_000
DEFAULT_KEEPALIVE: Final = 15.0
MAX_QUEUED: Final = 10_000  # messages waiting for a slow standalone/resumed stream

_JSON = 0
_SSE = 1
_NOT_ACCEPTABLE = -1

# Pump control items (queue items are otherwise `(event_id, message)` tuples).
_FINAL: Final = "final"  # the stream is complete: end the response
_CLOSE: Final = "close"  # end the connection, not the stream: send `retry`, the client comes back
_GONE: Final = "gone"  # the client disconnected

_ALLOW_STATEFUL: Final = (b"allow", b"GET, POST, DELETE")
_ALLOW_STATELESS: Final = (b"allow", b"POST")


async def _drop(message: dict[str, Any]) -> None:
    log.debug("no stream for %s", message.get("method"))


def _json_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [JSON_CT, (b"content-length", str(len(body)).encode())]


class _Session:
    """Transport state of one stateful session; calling it sends on the standalone stream."""

    __slots__ = (
        "app",
        "busy",
        "get_queue",
        "last_seen",
        "listened",
        "nstreams",
        "session",
        "sid",
        "streams",
    )

    def __init__(self, app: StreamableHTTPApp, sid: str, session: ServerSession) -> None:
        self.app = app
        self.sid = sid
        self.session = session
        self.last_seen = time.monotonic()
        self.busy = 0  # in-flight POSTs and open streams: a busy session never expires
        self.get_queue: asyncio.Queue[Any] | None = None
        self.listened = False  # opened a GET stream once: keep its messages while it is away
        self.nstreams = 0
        self.streams: dict[str, _RequestStream] | None = None  # live resumable POST streams

    @property
    def standalone_id(self) -> str:
        return self.sid + "/0"

    async def __call__(self, message: dict[str, Any]) -> None:
        """``session.standalone``: unrelated notifications and requests (GET stream)."""
        store = self.app.event_store
        event_id = None
        if store is not None and self.listened:
            event_id = await store.store_event(self.standalone_id, message)
        queue = self.get_queue
        if queue is None:
            if event_id is None:
                log.debug("no GET stream for session; dropped %s", message.get("method"))
            return
        if queue.qsize() >= MAX_QUEUED:
            log.warning("GET stream of a session is not reading; dropped %s", message.get("method"))
            return
        queue.put_nowait((event_id, message))


class _RequestStream:
    """The SSE stream answering one POST; calling it sends a related message on it.

    The POST's own connection is written inline (no queue on the hot path).
    When the stream is resumable (event store) a later GET with
    ``Last-Event-ID`` may take it over: from then on messages go to that
    connection's queue.
    """

    __slots__ = ("app", "done", "entry", "primed", "resumer", "send", "stream_id", "timer")

    def __init__(
        self, app: StreamableHTTPApp, entry: _Session | None, send: Send, stream_id: str | None
    ) -> None:
        self.app = app
        self.entry = entry
        self.send: Send | None = send
        self.stream_id = stream_id
        self.resumer: asyncio.Queue[Any] | None = None
        self.primed = False
        self.done = False
        self.timer: asyncio.TimerHandle | None = None

    async def __call__(self, message: dict[str, Any]) -> None:
        await self.emit(message, False)

    async def _write(self, chunk: bytes, more: bool) -> None:
        send = self.send
        if send is None:
            return
        if not more:
            self.send = None
        try:
            await send({"type": "http.response.body", "body": chunk, "more_body": more})
        except Exception:  # the client went away (servers other than uvicorn raise)
            self.send = None
            return
        if more and self.timer is not None:
            self._arm()

    async def emit(self, message: dict[str, Any], final: bool) -> None:
        event_id = None
        if self.stream_id is not None:
            store = self.app.event_store
            assert store is not None
            event_id = await store.store_event(self.stream_id, message)
        resumer = self.resumer
        if resumer is not None:
            resumer.put_nowait((event_id, message))
            if final:
                resumer.put_nowait(_FINAL)
        elif self.send is not None:
            await self._write(sse_event(orjson.dumps(message), event_id), not final)
        if final:
            self._finish()

    async def end(self) -> None:
        """No response will come (the request was cancelled): end the stream."""
        if self.resumer is not None:
            self.resumer.put_nowait(_FINAL)
        await self._write(b"", False)
        self._finish()

    def _finish(self) -> None:
        self.done = True
        self.send = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        entry = self.entry
        if entry is not None and entry.streams is not None and self.stream_id is not None:
            entry.streams.pop(self.stream_id, None)

    async def close_stream(self) -> None:
        """Server-initiated disconnect (SEP-1699): close the connection, keep the stream.

        Only a primed, resumable stream can be closed; otherwise the client
        could not come back for the rest and this is a no-op.
        """
        if not self.primed or self.done:
            log.debug("close_sse_stream ignored: the stream is not resumable")
            return
        resumer = self.resumer
        if resumer is not None:
            self.resumer = None
            resumer.put_nowait(_CLOSE)
        await self._write(self.app._retry_field, False)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    # Keep-alive: a timer armed on each write, only while the stream is open.
    def _arm(self) -> None:
        interval = self.app.keepalive_interval
        if interval is None:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(interval, self._ping)

    def _ping(self) -> None:
        self.timer = None
        if self.send is not None and self.resumer is None:
            task = asyncio.ensure_future(self._send_ping())
            _background.add(task)
            task.add_done_callback(_background.discard)

    async def _send_ping(self) -> None:
        await self._write(PING, True)
        if self.send is not None and self.timer is None:
            self._arm()


_background: set[asyncio.Future[Any]] = set()


class StreamableHTTPApp:
    """An ASGI app serving ``server`` over Streamable HTTP at ``path``.

    >>> app = StreamableHTTPApp(server, path="/mcp")        # uvicorn module:app
    >>> starlette_app = Starlette(routes=[Mount("/", app=app)])
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
        allowed_origins: Sequence[str] | None = None,
        allowed_hosts: Sequence[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        session_idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        retry_interval_ms: int | None = None,
        keepalive_interval: float | None = DEFAULT_KEEPALIVE,
        debug: bool = False,
    ) -> None:
        if not path.startswith("/"):
            raise ConfigurationError(f"path must start with '/': {path!r}")
        if max_body_size < 1 or max_sessions < 1 or session_idle_timeout <= 0:
            raise ConfigurationError(
                "max_body_size, max_sessions and session_idle_timeout must be positive"
            )
        if retry_interval_ms is not None and retry_interval_ms < 0:
            raise ConfigurationError("retry_interval_ms must be >= 0")
        if keepalive_interval is not None and keepalive_interval <= 0:
            raise ConfigurationError("keepalive_interval must be positive or None")
        self.server = server
        self.path = path
        stripped = path.rstrip("/")
        self._paths = frozenset({stripped, stripped + "/"}) if stripped else frozenset({"", "/"})
        self.stateless = stateless
        self.json_response = stateless if json_response is None else json_response
        self.session_id_generator = session_id_generator or _new_session_id
        self.on_session_initialized = on_session_initialized
        self.event_store = event_store
        self.max_body_size = max_body_size
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        self.retry_interval_ms = retry_interval_ms
        self.keepalive_interval = keepalive_interval
        self.debug = debug or server.debug
        self._guard = RequestGuard(allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self._sweep_every = min(30.0, session_idle_timeout / 2)
        self._next_sweep = time.monotonic() + self._sweep_every
        self._versions = frozenset(name.encode() for name in REVISIONS)
        self._retry_field = (
            b"retry: %d\n\n" % retry_interval_ms if retry_interval_ms is not None else b""
        )
        self._allow = _ALLOW_STATELESS if stateless else _ALLOW_STATEFUL
        register_stream_owner(self)

    # -- introspection ---------------------------------------------------------------------------
    def __len__(self) -> int:
        """The number of live sessions."""
        return len(self._sessions)

    def session(self, session_id: str) -> ServerSession | None:
        entry = self._sessions.get(session_id)
        return entry.session if entry is not None else None

    # -- ASGI ------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "lifespan":
                await lifespan(receive, send, self.aclose)
            return
        if route_path(scope) not in self._paths:
            await send_body(send, 404, b"Not Found", content_type=(b"content-type", b"text/plain"))
            return
        headers: dict[bytes, bytes] = dict(scope["headers"])
        verdict = self._guard.check(
            scope.get("server"), headers.get(b"host"), headers.get(b"origin")
        )
        if verdict is not None:
            await send_error(send, verdict[0], INVALID_REQUEST, verdict[1])
            return
        method = scope["method"]
        try:
            if method == "POST":
                await self._post(scope, receive, send, headers)
            elif method == "GET" and not self.stateless:
                await self._get(receive, send, headers)
            elif method == "DELETE" and not self.stateless:
                await self._delete(send, headers)
            else:
                await send_error(
                    send, 405, INVALID_REQUEST, f"Method not allowed: {method}", [self._allow]
                )
        except ClientGone:
            return
        except Exception as exc:  # never kill the server, never leak internals
            log.exception("error serving %s %s", method, scope.get("path"))
            text = (
                f"Internal error: {type(exc).__name__}: {exc}" if self.debug else "Internal error"
            )
            try:
                await send_error(send, 500, INTERNAL_ERROR, text)
            except Exception:  # the response had started: end it
                try:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except Exception:
                    pass

    # -- POST ------------------------------------------------------------------------------------
    def _response_mode(self, accept: bytes | None) -> int:
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
        ctype = headers.get(b"content-type")
        if ctype != b"application/json" and (
            ctype is None or ctype.split(b";", 1)[0].strip().lower() != b"application/json"
        ):
            await send_error(
                send, 415, INVALID_REQUEST, "Unsupported Media Type: use application/json"
            )
            return
        version = headers.get(b"mcp-protocol-version")
        if version is not None and version not in self._versions:
            await self._bad_version(send, version)
            return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_big = int(length) > self.max_body_size
            except ValueError:
                await send_error(send, 400, INVALID_REQUEST, "Bad Request: invalid Content-Length")
                return
            if too_big:
                await self._too_large(send)
                return
        try:
            body = await read_body(receive, self.max_body_size)
        except BodyTooLarge:
            await self._too_large(send)
            return
        try:
            msg = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            await send_error(send, 400, PARSE_ERROR, f"Parse error: {exc}")
            return
        auth_info = scope.get(AUTH_SCOPE_KEY)
        if self.stateless:
            revision = version.decode() if version is not None else DEFAULT_HTTP_REVISION
            session = self.server.create_session(stateless=True, revision=revision)
            await self._dispatch(session, None, msg, mode, send, auth_info)
            return
        raw_sid = headers.get(b"mcp-session-id")
        if raw_sid is None:
            if type(msg) is dict and msg.get("method") == "initialize" and "id" in msg:
                await self._initialize(msg, mode, send, auth_info)
            else:
                await send_error(
                    send, 400, INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header"
                )
            return
        entry = self._lookup(raw_sid)
        if entry is None:
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
            return
        entry.busy += 1
        try:
            await self._dispatch(entry.session, entry, msg, mode, send, auth_info)
        finally:
            entry.busy -= 1
            entry.last_seen = time.monotonic()

    async def _too_large(self, send: Send) -> None:
        await send_error(
            send,
            413,
            INVALID_REQUEST,
            f"Payload Too Large: the limit is {self.max_body_size} bytes",
        )

    async def _bad_version(self, send: Send, version: bytes) -> None:
        supported = ", ".join(REVISIONS)
        text = f"Bad Request: unsupported MCP-Protocol-Version {version.decode('latin-1')!r} (supported: {supported})"
        await send_error(send, 400, INVALID_REQUEST, text)

    async def _dispatch(
        self,
        session: ServerSession,
        entry: _Session | None,
        msg: Any,
        mode: int,
        send: Send,
        auth_info: Any,
    ) -> None:
        if type(msg) is list:
            await self._dispatch_batch(session, entry, msg, mode, send, auth_info)
            return
        kind = classify(msg)
        if kind is not Kind.REQUEST:
            if kind is Kind.INVALID:
                err = invalid_request(msg)
                if err.get("id") is None:
                    err.pop("id", None)
                await send_body(send, 400, orjson.dumps(err))
                return
            await session.handle(msg, _drop, auth_info=auth_info)
            await send_body(send, 202)
            return
        if mode == _JSON:
            resp = await session.handle(
                msg, entry if entry is not None else _drop, auth_info=auth_info
            )
            if resp is None:  # cancelled by the client: nothing to answer
                await send_body(send, 202)
                return
            body = orjson.dumps(resp)
            await send(
                {"type": "http.response.start", "status": 200, "headers": _json_headers(body)}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self._stream_response(session, entry, msg, send, auth_info)

    async def _stream_response(
        self, session: ServerSession, entry: _Session | None, msg: Any, send: Send, auth_info: Any
    ) -> None:
        store = self.event_store
        stream_id = None
        if entry is not None and store is not None:
            entry.nstreams += 1
            stream_id = f"{entry.sid}/{entry.nstreams}"
        stream = _RequestStream(self, entry, send, stream_id)
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        if stream_id is not None:
            assert entry is not None and store is not None
            if entry.streams is None:
                entry.streams = {}
            entry.streams[stream_id] = stream
            if session.revision.sse_polling:
                # SEP-1699: an id before anything else, so the client can always resume.
                event_id = await store.store_event(stream_id, None)
                retry = (
                    b"retry: %d\n" % self.retry_interval_ms
                    if self.retry_interval_ms is not None
                    else b""
                )
                stream.primed = True
                await stream._write(
                    b"id: " + event_id.encode() + b"\n" + retry + b"data: \n\n", True
                )
        if self.keepalive_interval is not None:
            stream._arm()
        try:
            resp = await session.handle(msg, stream, auth_info=auth_info)
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
        entry: _Session | None,
        batch: list[Any],
        mode: int,
        send: Send,
        auth_info: Any,
    ) -> None:
        # 2025-03-26 only (session.handle_batch enforces the revision rule).
        related = entry if entry is not None else _drop
        results: Any = await session.handle_batch(batch, related, auth_info=auth_info)
        if type(results) is dict:  # the batch as a whole was refused
            if results.get("id") is None:
                results.pop("id", None)
            await send_body(send, 400, orjson.dumps(results))
            return
        if not results:  # only notifications and responses
            await send_body(send, 202)
            return
        body = orjson.dumps(results)
        if mode == _JSON:
            await send_body(send, 200, body)
            return
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        await send({"type": "http.response.body", "body": sse_event(body), "more_body": False})

    async def _initialize(self, msg: dict[str, Any], mode: int, send: Send, auth_info: Any) -> None:
        if not self._make_room():
            await send_error(
                send, 503, INTERNAL_ERROR, "Service Unavailable: too many active sessions"
            )
            return
        sid = self.session_id_generator()
        if (
            not sid
            or not sid.isascii()
            or not all(0x21 <= ord(c) <= 0x7E for c in sid)
            or sid in self._sessions
        ):
            # 2025-11-25 transports § session management: visible ASCII only; and unique.
            raise ConfigurationError(
                f"session_id_generator returned an unusable session id {sid!r}"
            )
        session = self.server.create_session(session_id=sid)
        entry = _Session(self, sid, session)
        session.standalone = entry
        resp = await session.handle(msg, _drop, auth_info=auth_info)
        if resp is None:  # cannot happen for initialize, but never answer "null"
            session.close()
            await send_body(send, 202)
            return
        extra: list[tuple[bytes, bytes]] = []
        if "result" in resp:
            self._sessions[sid] = entry
            extra.append((b"mcp-session-id", sid.encode()))
            if self.on_session_initialized is not None:
                try:
                    result = self.on_session_initialized(sid)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("on_session_initialized failed for a new session")
        else:
            session.close()
        body = orjson.dumps(resp)
        if mode == _JSON:
            await send_body(send, 200, body, extra)
            return
        await send(
            {"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *extra]}
        )
        await send({"type": "http.response.body", "body": sse_event(body), "more_body": False})

    # -- sessions --------------------------------------------------------------------------------
    def _lookup(self, raw_sid: bytes) -> _Session | None:
        sid = raw_sid.decode("latin-1")
        entry = self._sessions.get(sid)
        if entry is None:
            return None
        now = time.monotonic()
        if not entry.busy and now - entry.last_seen > self.session_idle_timeout:
            self._end(sid, entry)
            return None
        entry.last_seen = now
        self._sessions.move_to_end(sid)
        if now >= self._next_sweep:
            self._sweep(now)
        return entry

    def _sweep(self, now: float) -> None:
        """Expire idle sessions; cheap: stops at the first recently used one."""
        self._next_sweep = now + self._sweep_every
        cutoff = now - self.session_idle_timeout
        expired: list[tuple[str, _Session]] = []
        busy: list[str] = []
        for sid, entry in self._sessions.items():
            if entry.last_seen > cutoff:
                break
            if entry.busy:
                busy.append(sid)
            else:
                expired.append((sid, entry))
        for sid in busy:  # still in use: counts as recently used
            self._sessions[sid].last_seen = now
            self._sessions.move_to_end(sid)
        for sid, entry in expired:
            log.debug("session expired after %.0f s idle", self.session_idle_timeout)
            self._end(sid, entry)

    def _make_room(self) -> bool:
        """Room for one more session: sweep, then evict the least recently used idle one."""
        sessions = self._sessions
        if len(sessions) < self.max_sessions:
            return True
        self._sweep(time.monotonic())
        if len(sessions) < self.max_sessions:
            return True
        for sid, entry in sessions.items():
            if not entry.busy:
                log.info(
                    "session cap (%d) reached: evicting the least recently used idle session",
                    self.max_sessions,
                )
                self._end(sid, entry)
                return True
        return False

    def _end(self, sid: str, entry: _Session) -> None:
        self._sessions.pop(sid, None)
        entry.session.close()
        if entry.get_queue is not None:
            entry.get_queue.put_nowait(_FINAL)
            entry.get_queue = None
        if entry.streams:
            for stream in list(entry.streams.values()):
                if stream.resumer is not None:
                    stream.resumer.put_nowait(_FINAL)

    def end_streams(self) -> None:
        """Close every GET/resumed stream's connection (with ``retry``) so a server can shut down."""
        for entry in self._sessions.values():
            if entry.get_queue is not None:
                entry.get_queue.put_nowait(_CLOSE)
                entry.get_queue = None
            if entry.streams:
                for stream in entry.streams.values():
                    if stream.resumer is not None:
                        stream.resumer.put_nowait(_CLOSE)
                        stream.resumer = None

    async def aclose(self) -> None:
        """End every session (the ASGI lifespan shutdown calls this)."""
        for sid, entry in list(self._sessions.items()):
            self._end(sid, entry)

    # -- DELETE ----------------------------------------------------------------------------------
    async def _delete(self, send: Send, headers: dict[bytes, bytes]) -> None:
        raw_sid = headers.get(b"mcp-session-id")
        if raw_sid is None:
            await send_error(
                send, 400, INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header"
            )
            return
        entry = self._lookup(raw_sid)
        if entry is None:
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
            return
        self._end(entry.sid, entry)
        await send_body(send, 204)

    # -- GET -------------------------------------------------------------------------------------
    async def _get(self, receive: Receive, send: Send, headers: dict[bytes, bytes]) -> None:
        accept = headers.get(b"accept")
        if accept is not None:
            a = accept.lower()
            if b"text/event-stream" not in a and b"text/*" not in a and b"*/*" not in a:
                await send_error(
                    send, 406, INVALID_REQUEST, "Not Acceptable: accept text/event-stream"
                )
                return
        version = headers.get(b"mcp-protocol-version")
        if version is not None and version not in self._versions:
            await self._bad_version(send, version)
            return
        raw_sid = headers.get(b"mcp-session-id")
        if raw_sid is None:
            await send_error(
                send, 400, INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header"
            )
            return
        entry = self._lookup(raw_sid)
        if entry is None:
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
            return
        entry.busy += 1
        try:
            last_event_id = headers.get(b"last-event-id")
            if last_event_id is not None and self.event_store is not None:
                if await self._resume(entry, last_event_id.decode("latin-1"), receive, send):
                    return
            if entry.get_queue is not None:
                await self._conflict(send)
                return
            queue: asyncio.Queue[Any] = asyncio.Queue()
            entry.get_queue = queue
            entry.listened = True
            try:
                await self._pump(send, receive, queue, [], set())
            finally:
                if entry.get_queue is queue:
                    entry.get_queue = None
        finally:
            entry.busy -= 1
            entry.last_seen = time.monotonic()

    async def _conflict(self, send: Send) -> None:
        await send_error(
            send, 409, INVALID_REQUEST, "Conflict: this session already has a GET stream open"
        )

    async def _resume(
        self, entry: _Session, last_event_id: str, receive: Receive, send: Send
    ) -> bool:
        """GET + Last-Event-ID: replay the stream after that id, then continue it live.

        Returns False when the id names no stream of this session (the caller
        then opens a plain standalone stream).
        """
        store = self.event_store
        assert store is not None
        replay: list[tuple[str, dict[str, Any]]] = []

        async def collect(event_id: str, message: dict[str, Any]) -> None:
            replay.append((event_id, message))

        # Replay into a buffer first: only once the store names the stream can we
        # check that it belongs to this session (transports: never replay another stream).
        stream_id = await store.replay_events_after(last_event_id, collect)
        if stream_id is None or stream_id.rpartition("/")[0] != entry.sid:
            return False
        queue: asyncio.Queue[Any] = asyncio.Queue()
        live: _RequestStream | None = None
        if stream_id == entry.standalone_id:
            if entry.get_queue is not None:
                await self._conflict(send)
                return True
            entry.get_queue = queue
        else:
            live = entry.streams.get(stream_id) if entry.streams else None
            if live is None or live.done:
                live = None
                queue.put_nowait(_FINAL)
            else:
                previous = live.resumer
                live.resumer = queue  # from now on the request's messages come here
                if previous is not None:
                    previous.put_nowait(_CLOSE)
        if queue.empty():
            # Events stored between the replay and the takeover: replay again, deduplicated.
            await store.replay_events_after(replay[-1][0] if replay else last_event_id, collect)
        seen = {event_id for event_id, _ in replay}
        try:
            await self._pump(send, receive, queue, replay, seen)
        finally:
            if live is not None and live.resumer is queue:
                live.resumer = None
            if entry.get_queue is queue:
                entry.get_queue = None
        return True

    async def _pump(
        self,
        send: Send,
        receive: Receive,
        queue: asyncio.Queue[Any],
        replay: list[tuple[str, dict[str, Any]]],
        seen: set[str],
    ) -> None:
        """Write a queue-fed SSE stream until it ends, the client leaves or the server stops."""
        await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
        watcher = asyncio.ensure_future(_watch_disconnect(receive, queue))
        tail = b""
        try:
            for event_id, message in replay:
                await send(
                    {
                        "type": "http.response.body",
                        "body": sse_event(orjson.dumps(message), event_id),
                        "more_body": True,
                    }
                )
            interval = self.keepalive_interval
            while True:
                try:
                    async with asyncio.timeout(interval):
                        item = await queue.get()
                except TimeoutError:
                    await send({"type": "http.response.body", "body": PING, "more_body": True})
                    continue
                if type(item) is tuple:
                    event_id, message = item
                    if event_id is not None and event_id in seen:
                        continue
                    chunk = sse_event(orjson.dumps(message), event_id)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    continue
                if item == _CLOSE:
                    tail = self._retry_field
                break
        except OSError:  # the client went away mid-write
            pass
        finally:
            watcher.cancel()
        try:
            await send({"type": "http.response.body", "body": tail, "more_body": False})
        except Exception:
            pass


async def _watch_disconnect(receive: Receive, queue: asyncio.Queue[Any]) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            queue.put_nowait(_GONE)
            return


def _new_session_id() -> str:
    return secrets.token_urlsafe(32)
