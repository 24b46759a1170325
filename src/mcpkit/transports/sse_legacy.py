"""The deprecated HTTP+SSE transport of revision 2024-11-05, for older clients.

2024-11-05 basic/transports § "HTTP with SSE": the client opens an SSE stream
with GET on ``sse_path``; the first event, ``endpoint``, names the URI to POST
messages to (here ``message_path?sessionId=<id>``, relative, under the app's
``root_path`` when mounted). Every server message, responses included, travels
on that one stream as a ``message`` event; a POST is answered ``202 Accepted``
at once. The session lives exactly as long as its stream.

Requests run in their own task, so a tool waiting for an elicitation answer
does not stop the POST carrying that answer from being served.

What waits for a client that reads its stream slowly, or not at all, is bounded
in bytes (``max_queued_bytes``). This transport cannot resume a stream, so a
message past the budget is never dropped (a lost response would leave the
client waiting): the session ends instead. Its stream is ended, so the client
sees a disconnect (once it reads what was already written), later POSTs get
404, and its running requests are cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

from ..errors import INTERNAL_ERROR, INVALID_REQUEST, ConfigurationError, StoreUnavailable
from ..protocol import jsonrpc
from ..protocol.jsonrpc import Kind, classify, invalid_request
from ..server.request import stop_for_shutdown
from ..server.scopes import granted_scopes
from ..server.stateless.input_required import principal_of
from .asgi import (
    AUTH_SCOPE_KEY,
    PING,
    SSE_HEADERS,
    ClientGone,
    Receive,
    Scope,
    Send,
    accepts_event_stream,
    check_max_inflight,
    lifespan,
    register_stream_owner,
    route_path,
    send_body,
    send_error,
    send_internal_error,
    send_rejected,
    send_store_unavailable,
    sse_event,
    watch_disconnect,
)
from .cluster import join_bus, leave_bus
from .http_auth import foreign_principal, refuse_insufficient_scope
from .http_intake import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    REFUSED,
    check_body_timeout,
    read_json_post,
)
from .http_request_streams import DEFAULT_MAX_QUEUED_BYTES
from .http_routes import HealthOptions, RouteTable
from .security import DEFAULT_MAX_HEADER_SIZE, RequestGuard

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = ["SSEApp"]

log = logging.getLogger("mcpkit.transports.sse")

DEFAULT_MAX_SESSIONS: Final = 10_000
DEFAULT_MAX_INFLIGHT: Final = 256

# Control items of a stream's queue; the other items are serialised messages (bytes).
_END: Final = "end"
_GONE: Final = "gone"


class _Connection:
    """One SSE client: its session, its outgoing queue, its running requests."""

    __slots__ = (
        "app",
        "draining",
        "limit",
        "nbytes",
        "overflowed",
        "principal",
        "queue",
        "session",
        "sid",
        "stream_task",
        "tasks",
    )

    def __init__(self, app: SSEApp, sid: str, principal: str | None = None) -> None:
        self.app = app
        self.sid = sid
        self.principal = principal  # who opened the stream; only they may post to it
        self.limit = app.max_queued_bytes
        self.nbytes = 0  # bytes of the messages in the queue
        self.overflowed = False
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.session: ServerSession | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.draining = False  # the server stops: end the stream once the requests answered
        self.stream_task: asyncio.Task[Any] | None = None  # the GET's, writing the stream

    def finished(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if self.draining and not self.tasks:
            self.queue.put_nowait(_END)  # after the last answer, which is queued already

    async def __call__(self, message: Any) -> None:
        """Every server message goes on the stream (it is also ``session.standalone``)."""
        if self.overflowed:
            # The session is over. Yield, so that a request of this session that goes on
            # sending without awaiting anything else gets its cancellation.
            await asyncio.sleep(0)
            return
        # A copy: orjson's result keeps its whole growth buffer (see .event_store).
        data = bytes(memoryview(jsonrpc.dumps(message)))
        # A message that finds nothing waiting always fits: one large answer is no flood.
        if self.nbytes and self.nbytes + len(data) > self.limit:
            self._overflow(message)
            await asyncio.sleep(0)  # as above: the sender may be a cancelled request
            return
        waiting = self.nbytes
        self.nbytes += len(data)
        self.queue.put_nowait(data)
        if waiting:
            # Let the stream's writer catch up with a producer that never awaits (a tool
            # logging in a loop), so only a client that does not read fills the budget.
            await asyncio.sleep(0)

    def _overflow(self, message: Any) -> None:
        """End the session: dropping the message instead could lose a response for good."""
        what = message.get("method", "a response") if type(message) is dict else "a batch"
        log.warning(
            "legacy SSE session %s: the client does not read its stream and %d bytes wait "
            "for it (max_queued_bytes=%d), so %s does not fit; ending the session",
            self.sid,
            self.nbytes,
            self.limit,
            what,
        )
        self.overflowed = True
        queue = self.queue
        while not queue.empty():  # free what waits; the client will not get it
            queue.get_nowait()
        self.nbytes = 0
        queue.put_nowait(_END)
        self.app.end_session(self)


class SSEApp:
    """An ASGI app serving ``server`` over the 2024-11-05 HTTP+SSE transport.

    ``max_queued_bytes`` (default 4 MiB) bounds the messages waiting for one
    session's stream; a client that lets more pile up loses its session (see
    the module docstring). Other paths are served as on Streamable HTTP: the
    server's custom routes and the ``health`` probes (:mod:`.http_routes`).
    """

    def __init__(
        self,
        server: MCPServer,
        *,
        sse_path: str = "/sse",
        message_path: str = "/message",
        allowed_origins: Sequence[str] | None = None,
        allowed_hosts: Sequence[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        max_header_size: int | None = DEFAULT_MAX_HEADER_SIZE,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_inflight: int | None = DEFAULT_MAX_INFLIGHT,
        keepalive_interval: float | None = 15.0,
        max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
        debug: bool = False,
        health: HealthOptions | bool | None = None,
    ) -> None:
        if not sse_path.startswith("/") or not message_path.startswith("/"):
            raise ConfigurationError("sse_path and message_path must start with '/'")
        if sse_path == message_path:
            raise ConfigurationError("sse_path and message_path must differ")
        if max_body_size < 1 or max_sessions < 1:
            raise ConfigurationError("max_body_size and max_sessions must be positive")
        check_max_inflight(max_inflight)
        if isinstance(max_queued_bytes, bool) or not isinstance(max_queued_bytes, int):
            raise ConfigurationError(
                f"max_queued_bytes must be a whole number of bytes, not {max_queued_bytes!r}"
            )
        if max_queued_bytes < 1:
            raise ConfigurationError(
                f"max_queued_bytes must be a positive number of bytes, not {max_queued_bytes}"
            )
        self.server = server
        self.sse_path = sse_path
        self.message_path = message_path
        self.max_body_size = max_body_size
        self.body_timeout = check_body_timeout(body_timeout)
        self.max_sessions = max_sessions
        self.max_inflight = max_inflight  # per session, as on Streamable HTTP
        self.keepalive_interval = keepalive_interval
        self.max_queued_bytes = max_queued_bytes  # per session's stream
        self.debug = debug or server.debug
        self.guard = RequestGuard(
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_header_size=max_header_size,
        )
        # Other paths: server.custom_route's routes and the probes (.http_routes).
        self.routes = RouteTable(
            server,
            self.guard,
            reserved=(sse_path, message_path),
            health=health,
            max_body_size=max_body_size,
        )
        self._connections: dict[str, _Connection] = {}
        # A shared store (Redis): this process is one node of several; a session lives
        # with its stream on one node, and POSTs reaching another are forwarded there.
        store: Any = server.store
        self._bus: Any = store.bus if getattr(store, "shared", False) else None
        self._node = self._bus.node_id if self._bus is not None else None
        self._joined = False
        register_stream_owner(self)

    def __len__(self) -> int:
        return len(self._connections)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "lifespan":
                await lifespan(
                    receive,
                    send,
                    self.aclose,
                    self.server,
                    self._join,
                    transport=("sse", self),
                    state=self.routes.state,
                )
            return
        path = route_path(scope)
        if path != self.sse_path and path != self.message_path:
            await self.routes.serve(path, scope, receive, send)  # a custom route, a probe or 404
            return
        headers: dict[bytes, bytes] = dict(scope["headers"])
        verdict = self.guard.admit(scope, headers)
        if verdict is not None:
            await send_error(send, verdict[0], INVALID_REQUEST, verdict[1])
            return
        method = scope["method"]
        try:
            if self._bus is not None and not self._joined:
                await self._join()  # not done yet if the host ran no lifespan
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
        # In a cluster the id names the node holding the stream (see _forward).
        sid = uuid.uuid4().hex if self._node is None else f"{self._node}.{uuid.uuid4().hex}"
        auth_info = scope.get(AUTH_SCOPE_KEY)
        conn = _Connection(self, sid, None if auth_info is None else principal_of(auth_info))
        conn.stream_task = asyncio.current_task()
        conn.session = session = self.server.create_session(
            session_id=sid, standalone=conn, transport="sse"
        )
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
                if type(item) is not bytes:
                    break
                conn.nbytes -= len(item)
                chunk = sse_event(item)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except OSError:
            pass
        finally:
            watcher.cancel()
            self.end_session(conn)
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
        auth_info = scope.get(AUTH_SCOPE_KEY)
        elsewhere = None  # in a cluster: the node holding the session's stream, if not this
        if conn is None and self._bus is not None:
            node, dot, _ = ids[0].partition(".")
            if dot and node != self._node:
                elsewhere = node
        if elsewhere is None and (
            conn is None
            or conn.session is None
            or (
                (conn.principal is not None or auth_info is not None)
                and foreign_principal(conn.principal, auth_info)
            )
        ):
            # Another principal's session is answered as an unknown one: nothing leaks.
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
            return
        msg = await read_json_post(
            receive,
            send,
            headers,
            max_body_size=self.max_body_size,
            body_timeout=self.body_timeout,
        )
        if msg is REFUSED:
            return
        if auth_info is not None and await refuse_insufficient_scope(
            self.server, msg, auth_info, scope, send
        ):
            return  # 403 insufficient_scope: nothing runs (MCP authorization § scope challenge)
        if elsewhere is not None:
            await self._forward(send, ids[0], elsewhere, msg, auth_info)
            return
        assert conn is not None and conn.session is not None
        if not self._take(conn, msg, auth_info):
            await send_rejected(send, invalid_request(msg))
            return
        await send_body(send, 202, b"Accepted", content_type=(b"content-type", b"text/plain"))

    def _take(self, conn: _Connection, msg: Any, auth_info: Any) -> bool:
        """Receive a POSTed message; requests run in their own task. False: not JSON-RPC."""
        session = conn.session
        assert session is not None
        # Notifications and responses are handled in order, right away, by receive.
        kind = session.receive(msg)
        if kind is Kind.REQUEST:
            self._spawn(conn, self._run(session, conn, msg, auth_info))
        elif kind is Kind.BATCH:
            self._spawn(conn, self._run_batch(session, conn, msg, auth_info))
        return kind is not Kind.INVALID

    # -- across nodes (a shared store) -------------------------------------------------------
    async def _join(self) -> None:
        if self._bus is not None and not self._joined:
            await join_bus(self._bus, self._on_message)
            self._joined = True

    async def _forward(self, send: Send, sid: str, node: str, msg: Any, auth_info: Any) -> None:
        """A POST for a session whose stream another node holds: pass the message there."""
        if classify(msg) is Kind.INVALID and type(msg) is not list:
            await send_rejected(send, invalid_request(msg))
            return
        principal = None if auth_info is None else principal_of(auth_info)
        forwarded = {
            "k": "l",
            "sid": sid,
            "msg": msg,
            "who": principal,
            "auth": auth_info is not None,
        }
        if auth_info is not None and _subscribes(msg):
            # The stream's node serves it without the token: the scopes its updates need
            # (resources.may_hear) travel with it.
            forwarded["scp"] = sorted(granted_scopes(auth_info))
        try:
            reached = await self._bus.publish(f"n:{node}", forwarded)
        except StoreUnavailable:
            await send_store_unavailable(send)
            return
        if not reached:  # its node is gone, and the session with its stream
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
            return
        await send_body(send, 202, b"Accepted", content_type=(b"content-type", b"text/plain"))

    def _on_message(self, channel: str, message: dict[str, Any]) -> None:
        """A POST another node received for a session whose stream is here."""
        if message.get("k") != "l" or channel != f"n:{self._node}":
            return
        conn = self._connections.get(str(message.get("sid")))
        if conn is None or conn.session is None:
            return
        who = message.get("who")
        if (conn.principal is not None or message.get("auth")) and conn.principal != who:
            return  # another principal's POST: dropped, as a 404 would have refused it
        scopes = message.get("scp")
        if isinstance(scopes, list):
            conn.session.subscriber_scopes = frozenset(s for s in scopes if isinstance(s, str))
        self._take(conn, message.get("msg"), None)

    def end_session(self, conn: _Connection) -> None:
        """Forget ``conn``'s session (its POSTs get 404), close it, cancel its requests."""
        if self._connections.get(conn.sid) is conn:
            del self._connections[conn.sid]
        if conn.session is not None:
            conn.session.close()
        for task in list(conn.tasks):
            task.cancel()

    def _spawn(self, conn: _Connection, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        conn.tasks.add(task)
        task.add_done_callback(conn.finished)

    @staticmethod
    async def _run(
        session: ServerSession, conn: _Connection, msg: dict[str, Any], auth_info: Any
    ) -> None:
        resp = await session.serve(msg, conn, auth_info=auth_info)
        if resp is not None:
            await conn(resp)

    @staticmethod
    async def _run_batch(
        session: ServerSession, conn: _Connection, msg: list[Any], auth_info: Any
    ) -> None:
        results: Any = await session.serve_batch(msg, conn, auth_info=auth_info)
        if results:
            await conn(results)

    # -- shutdown ------------------------------------------------------------------------------
    def end_streams(self) -> None:
        """The server stops: end every stream, once its requests in flight have answered
        (their answers travel on it); :meth:`stop_requests` ends the wait."""
        for conn in self._connections.values():
            if conn.tasks:
                conn.draining = True
            else:
                conn.queue.put_nowait(_END)

    def stop_requests(self) -> set[asyncio.Task[Any]]:
        """The graceful period is over: requests still running answer that the server is
        shutting down (see ``ServerSession``), on their stream, which then ends. Returns
        the tasks writing those streams: they must go on until then."""
        streams: set[asyncio.Task[Any]] = set()
        for conn in self._connections.values():
            for task in list(conn.tasks):
                stop_for_shutdown(task)
            if conn.tasks and conn.stream_task is not None:
                streams.add(conn.stream_task)
        return streams

    async def aclose(self) -> None:
        """End every stream and session (the ASGI lifespan shutdown calls this)."""
        for conn in list(self._connections.values()):
            conn.queue.put_nowait(_END)
            if conn.session is not None:
                conn.session.close()
        if self._joined:
            self._joined = False
            await leave_bus(self._bus, self._on_message)


_SUBSCRIBING: Final = frozenset({"resources/subscribe", "resources/unsubscribe"})


def _subscribes(msg: Any) -> bool:
    """Whether ``msg`` (a message or a batch) changes the session's subscriptions."""
    items = msg if type(msg) is list else (msg,)
    return any(type(m) is dict and m.get("method") in _SUBSCRIBING for m in items)
