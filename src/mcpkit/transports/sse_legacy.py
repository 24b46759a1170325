"""The deprecated HTTP+SSE transport of revision 2024-11-05, for older clients.

2024-11-05 basic/transports § "HTTP with SSE": the client opens an SSE stream
with GET on ``sse_path``; the first event, ``endpoint``, names the URI to POST
messages to (here ``message_path?sessionId=<id>``, relative, under the app's
``root_path`` when mounted). Every server message, responses included, travels
on that one stream as a ``message`` event; a POST is answered ``202 Accepted``
at once. The session lives exactly as long as its stream.

Requests run in their own task, so a tool waiting for an elicitation answer
does not stop the POST carrying that answer from being served.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

import orjson

from ..errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, ConfigurationError
from ..protocol.jsonrpc import Kind, classify, exact_ids, invalid_request
from .asgi import (
    AUTH_SCOPE_KEY,
    DEFAULT_BODY_TIMEOUT,
    PING,
    SSE_HEADERS,
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    accepts_event_stream,
    check_body_timeout,
    check_max_inflight,
    lifespan,
    read_body,
    register_stream_owner,
    route_path,
    send_body,
    send_body_timeout,
    send_error,
    send_internal_error,
    send_rejected,
    send_too_large,
    sse_event,
    watch_disconnect,
)
from .security import RequestGuard

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = ["SSEApp"]

log = logging.getLogger("mcpkit.transports.sse")

DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
DEFAULT_MAX_SESSIONS: Final = 10_000
DEFAULT_MAX_INFLIGHT: Final = 256
MAX_QUEUED: Final = 10_000

_END: Final = "end"
_GONE: Final = "gone"


class _Connection:
    """One SSE client: its session, its outgoing queue, its running requests."""

    __slots__ = ("queue", "session", "tasks")

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.session: ServerSession | None = None
        self.tasks: set[asyncio.Task[Any]] = set()

    async def __call__(self, message: dict[str, Any]) -> None:
        """Every server message goes on the stream (it is also ``session.standalone``)."""
        if self.queue.qsize() >= MAX_QUEUED:
            log.warning(
                "SSE client is not reading; dropped %s", message.get("method", "a response")
            )
            return
        self.queue.put_nowait(message)


class SSEApp:
    """An ASGI app serving ``server`` over the 2024-11-05 HTTP+SSE transport."""

    def __init__(
        self,
        server: MCPServer,
        *,
        sse_path: str = "/sse",
        message_path: str = "/message",
        allowed_origins: Sequence[str] | None = None,
        allowed_hosts: Sequence[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_inflight: int | None = DEFAULT_MAX_INFLIGHT,
        keepalive_interval: float | None = 15.0,
        debug: bool = False,
    ) -> None:
        if not sse_path.startswith("/") or not message_path.startswith("/"):
            raise ConfigurationError("sse_path and message_path must start with '/'")
        if sse_path == message_path:
            raise ConfigurationError("sse_path and message_path must differ")
        if max_body_size < 1 or max_sessions < 1:
            raise ConfigurationError("max_body_size and max_sessions must be positive")
        check_max_inflight(max_inflight)
        self.server = server
        self.sse_path = sse_path
        self.message_path = message_path
        self.max_body_size = max_body_size
        self.body_timeout = check_body_timeout(body_timeout)
        self.max_sessions = max_sessions
        self.max_inflight = max_inflight  # per session, as on Streamable HTTP
        self.keepalive_interval = keepalive_interval
        self.debug = debug or server.debug
        self.guard = RequestGuard(allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
        self._connections: dict[str, _Connection] = {}
        register_stream_owner(self)

    def __len__(self) -> int:
        return len(self._connections)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "lifespan":
                await lifespan(receive, send, self.aclose, self.server)
            return
        path = route_path(scope)
        if path != self.sse_path and path != self.message_path:
            await send_body(send, 404, b"Not Found", content_type=(b"content-type", b"text/plain"))
            return
        headers: dict[bytes, bytes] = dict(scope["headers"])
        verdict = self.guard.check(
            scope.get("server"), headers.get(b"host"), headers.get(b"origin")
        )
        if verdict is not None:
            await send_error(send, verdict[0], INVALID_REQUEST, verdict[1])
            return
        method = scope["method"]
        try:
            if path == self.sse_path:
                if method != "GET":
                    await send_error(
                        send, 405, INVALID_REQUEST, "Method not allowed", [(b"allow", b"GET")]
                    )
                    return
                await self._stream(scope, receive, send, headers)
            else:
                if method != "POST":
                    await send_error(
                        send, 405, INVALID_REQUEST, "Method not allowed", [(b"allow", b"POST")]
                    )
                    return
                await self._message(scope, receive, send, headers)
        except ClientGone:
            return
        except Exception as exc:
            log.exception("error serving %s %s", method, path)
            await send_internal_error(send, exc, self.debug)

    # -- the stream --------------------------------------------------------------------------------
    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        if not accepts_event_stream(headers.get(b"accept")):
            await send_error(send, 406, INVALID_REQUEST, "Not Acceptable: accept text/event-stream")
            return
        if len(self._connections) >= self.max_sessions:
            await send_error(
                send, 503, INTERNAL_ERROR, "Service Unavailable: too many active sessions"
            )
            return
        sid = uuid.uuid4().hex
        conn = _Connection()
        conn.session = session = self.server.create_session(session_id=sid, standalone=conn)
        session.max_inflight = self.max_inflight
        self._connections[sid] = conn
        endpoint = f"{scope.get('root_path', '')}{self.message_path}?sessionId={sid}"
        queue = conn.queue
        watcher = asyncio.ensure_future(watch_disconnect(receive, queue, _GONE))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
            await send(
                {
                    "type": "http.response.body",
                    "body": sse_event(endpoint.encode(), event=b"endpoint"),
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
                if type(item) is not dict and type(item) is not list:
                    break
                chunk = sse_event(orjson.dumps(item))
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except OSError:
            pass
        finally:
            watcher.cancel()
            self._connections.pop(sid, None)
            session.close()
            for task in list(conn.tasks):
                task.cancel()
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:
            pass

    # -- messages ------------------------------------------------------------------------------
    async def _message(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        ids = query.get("sessionId") or query.get("session_id")
        if not ids:
            await send_error(
                send, 400, INVALID_REQUEST, "Bad Request: missing sessionId query parameter"
            )
            return
        conn = self._connections.get(ids[0])
        if conn is None or conn.session is None:
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
            return
        ctype = headers.get(b"content-type")
        if ctype is None or ctype.split(b";", 1)[0].strip().lower() != b"application/json":
            await send_error(
                send, 415, INVALID_REQUEST, "Unsupported Media Type: use application/json"
            )
            return
        try:
            body = await read_body(receive, self.max_body_size, self.body_timeout)
        except BodyTooLarge:
            await send_too_large(send, self.max_body_size)
            return
        except BodyTimeout:
            await send_body_timeout(send, self.body_timeout or 0)
            return
        try:
            msg = exact_ids(orjson.loads(body), body)
        except orjson.JSONDecodeError as exc:
            await send_error(send, 400, PARSE_ERROR, f"Parse error: {exc}")
            return
        session = conn.session
        auth_info = scope.get(AUTH_SCOPE_KEY)
        if type(msg) is list:
            self._spawn(conn, self._run_batch(session, conn, msg, auth_info))
        else:
            kind = classify(msg)
            if kind is Kind.INVALID:
                await send_rejected(send, invalid_request(msg))
                return
            if kind is Kind.REQUEST:
                self._spawn(conn, self._run(session, conn, msg, auth_info))
            else:  # notifications and responses are handled in order, right away
                await session.handle(msg, conn, auth_info=auth_info)
        await send_body(send, 202, b"Accepted", content_type=(b"content-type", b"text/plain"))

    def _spawn(self, conn: _Connection, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)

    @staticmethod
    async def _run(
        session: ServerSession, conn: _Connection, msg: dict[str, Any], auth_info: Any
    ) -> None:
        resp = await session.handle(msg, conn, auth_info=auth_info)
        if resp is not None:
            await conn(resp)

    @staticmethod
    async def _run_batch(
        session: ServerSession, conn: _Connection, msg: list[Any], auth_info: Any
    ) -> None:
        results: Any = await session.handle_batch(msg, conn, auth_info=auth_info)
        if results:
            await conn(results)

    # -- shutdown ------------------------------------------------------------------------------
    def end_streams(self) -> None:
        for conn in self._connections.values():
            conn.queue.put_nowait(_END)

    async def aclose(self) -> None:
        """End every stream and session (the ASGI lifespan shutdown calls this)."""
        for conn in list(self._connections.values()):
            conn.queue.put_nowait(_END)
            if conn.session is not None:
                conn.session.close()
