"""The session side of Streamable HTTP (handshake era): create, find, stream, end.

:class:`~.streamable_http.StreamableHTTPApp` mixes :class:`SessionEndpoints` in.
The POST path (:mod:`.streamable_http`) carries messages; what is here is the
life of a session around them (2025-11-25 basic/transports § session
management): ``initialize`` creates one and names it in ``Mcp-Session-Id``,
every later request must name a live one (400 without the header, 404 for an
unknown or expired id), GET opens its standalone SSE stream or resumes one
(``Last-Event-ID``), DELETE ends it, and shutdown closes them all. The table
itself, with expiry and eviction, is :class:`~.http_sessions.SessionTable`.
"""

from __future__ import annotations

import inspect
import logging
import multiprocessing
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..errors import INTERNAL_ERROR, INVALID_REQUEST, ConfigurationError
from ..protocol import jsonrpc
from ..protocol.versions import REVISIONS
from ..stores import EventStore
from .asgi import (
    AUTH_SCOPE_KEY,
    SSE_HEADERS,
    Receive,
    Scope,
    Send,
    accepts_event_stream,
    lifespan,
    send_body,
    send_error,
    sse_event,
)
from .http_auth import foreign_principal
from .http_sessions import HTTPSession, SessionTable
from .http_streams import open_stream

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession
    from .cluster import ClusterNode
    from .http_routes import RouteTable

__all__ = ["BUSY", "JSON_MODE", "SessionEndpoints", "drop", "new_session_id"]

log = logging.getLogger("mcpkit.transports.http")

#: The answer (503) when this process cannot take one more session.
BUSY: Final = "Service Unavailable: too many active sessions"

#: A request answered with plain JSON (the other mode is an SSE stream).
JSON_MODE: Final = 0


async def drop(message: dict[str, Any]) -> None:
    """Where a message goes when no stream can carry it."""
    log.debug("no stream for %s", message.get("method"))


class SessionEndpoints:
    """Mixed into ``StreamableHTTPApp``; the attributes below are the app's own."""

    server: MCPServer
    session_id_generator: Callable[[], str]
    on_session_initialized: Callable[[str], Any] | None
    max_inflight: int | None
    event_store: EventStore | None
    keepalive_interval: float | None
    retry_field: bytes
    max_queued_bytes: int
    _sessions: SessionTable
    _versions: frozenset[bytes]
    stateless: bool
    cluster: ClusterNode | None
    routes: RouteTable

    def __len__(self) -> int:
        """The number of live sessions."""
        return len(self._sessions)

    @property
    def sessions(self) -> SessionTable:
        """The app's table of live sessions (:class:`~.http_sessions.SessionTable`): a
        cluster node (:mod:`.cluster`) adds the ones it rebuilds, ends them, sweeps them
        and reads their records' timing there; tests look sessions up in it."""
        return self._sessions

    def session(self, session_id: str) -> ServerSession | None:
        entry = self._sessions.get(session_id)
        return entry.session if entry is not None else None

    async def _initialize(
        self, msg: dict[str, Any], mode: int, send: Send, auth_info: Any, principal: Any
    ) -> None:
        """Serve ``initialize`` without a session id: create the session, answer with its id."""
        if not self._sessions.make_room():
            await send_error(send, 503, INTERNAL_ERROR, BUSY)
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
        session = self.server.create_session(session_id=sid, transport="streamable_http")
        session.max_inflight = self.max_inflight
        entry = HTTPSession(self, sid, session, principal)
        session.standalone = entry
        if self.cluster is not None:
            self.cluster.adopt(entry)
        resp = await session.handle(msg, drop, auth_info=auth_info)
        if resp is None:  # cannot happen for initialize, but never answer "null"
            session.close()
            await send_body(send, 202)
            return
        extra: list[tuple[bytes, bytes]] = []
        if "result" in resp:
            try:
                created = await self._sessions.create(entry)
            except BaseException:  # StoreUnavailable (answered 503): no session was made
                session.close()
                raise
            if not created:
                session.close()
                raise ConfigurationError(
                    f"session_id_generator returned the id of an existing session {sid!r}"
                )
            self._sessions.add(entry)
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
        body = jsonrpc.dumps(resp)
        if mode == JSON_MODE:
            await send_body(send, 200, body, extra)
            return
        await send(
            {"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *extra]}
        )
        await send({"type": "http.response.body", "body": sse_event(body), "more_body": False})

    async def _bad_version(self, send: Send, version: bytes) -> None:
        supported = ", ".join(REVISIONS)
        text = f"Bad Request: unsupported MCP-Protocol-Version {version.decode('latin-1')!r} (supported: {supported})"
        await send_error(send, 400, INVALID_REQUEST, text)

    # -- sessions --------------------------------------------------------------------------------
    def _lookup(self, raw_sid: bytes) -> HTTPSession | None:
        return self._sessions.lookup(raw_sid.decode("latin-1"))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan (:func:`.asgi.lifespan`): this app is the server's
        ``streamable_http_transport`` from startup until its sessions have ended."""
        await lifespan(
            receive,
            send,
            self.aclose,
            self.server,
            self._start,
            transport=("streamable_http", self),
            state=self.routes.state,
        )

    async def _start(self) -> None:
        """At startup (ASGI lifespan): join the cluster when the store is shared."""
        if self.cluster is not None:
            await self.cluster.start()
        elif not self.stateless and multiprocessing.parent_process() is not None:
            # A worker of a multi-process server (uvicorn --workers, gunicorn) keeping its
            # sessions to itself: a request reaching another worker gets 404.
            log.warning(
                "this process is one of several workers, but its sessions are kept in this "
                "process only: requests reaching another worker will get 404 Session not found. "
                "Give the server a shared store (store=RedisStore(url), or mcpkit run --redis "
                "URL), or serve it stateless (see docs/deployment.md)"
            )

    async def _session_or_error(
        self, scope: Scope, send: Send, headers: dict[bytes, bytes]
    ) -> HTTPSession | None:
        """The session a GET or DELETE names, or None once 400/404 is answered.

        A session another principal created is answered 404 like an unknown one.
        POST inlines the same checks: it is the hot path, and it lets ``initialize`` through.
        """
        raw_sid = headers.get(b"mcp-session-id")
        if raw_sid is None:
            await send_error(
                send, 400, INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header"
            )
            return None
        entry = self._lookup(raw_sid)
        if self.cluster is not None:
            entry = await self.cluster.find(raw_sid, entry)
        if entry is not None:
            auth_info = scope.get(AUTH_SCOPE_KEY)
            if (entry.principal is not None or auth_info is not None) and foreign_principal(
                entry.principal, auth_info
            ):
                entry = None
        if entry is None:
            await send_error(send, 404, INVALID_REQUEST, "Session not found")
        return entry

    async def aclose(self) -> None:
        """End every session (the ASGI lifespan shutdown calls this)."""
        self._sessions.close_all()
        if self.cluster is not None:
            await self.cluster.aclose()

    # -- DELETE ----------------------------------------------------------------------------------
    async def _delete(self, scope: Scope, send: Send, headers: dict[bytes, bytes]) -> None:
        entry = await self._session_or_error(scope, send, headers)
        if entry is None:
            return
        if self.cluster is not None:
            await self.cluster.delete(entry)
        else:
            self._sessions.end(entry)
        await send_body(send, 204)

    # -- GET -------------------------------------------------------------------------------------
    async def _get(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        if not accepts_event_stream(headers.get(b"accept")):
            await send_error(send, 406, INVALID_REQUEST, "Not Acceptable: accept text/event-stream")
            return
        version = headers.get(b"mcp-protocol-version")
        if version is not None and version not in self._versions:
            await self._bad_version(send, version)
            return
        entry = await self._session_or_error(scope, send, headers)
        if entry is None:
            return
        entry.busy += 1
        try:
            last_event_id = headers.get(b"last-event-id")
            await open_stream(
                self,
                entry,
                last_event_id.decode("latin-1") if last_event_id is not None else None,
                receive,
                send,
            )
        finally:
            entry.busy -= 1
            self._sessions.touch(entry)


def new_session_id() -> str:
    """256 random bits, URL-safe (visible ASCII, as 2025-11-25 § session management asks)."""
    return secrets.token_urlsafe(32)
