"""ASGI types and the few HTTP helpers the HTTP transports share.

mcpkit's HTTP transports are plain ASGI 3 applications (no framework in
``src``): they run on the embedded uvicorn and mount into Starlette, FastAPI
or any other ASGI host. Everything here works on the raw ``scope`` /
``receive`` / ``send`` triple, so a request costs a handful of dict lookups and
two ``send`` calls.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from ..errors import (
    INTERNAL_ERROR,
    STORE_UNAVAILABLE_TEXT,
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    ConfigurationError,
)

if TYPE_CHECKING:
    from ..server.running import TransportKind
    from ..server.server import MCPServer

__all__ = [
    "AUTH_SCOPE_KEY",
    "ASGIApp",
    "BodyTimeout",
    "BodyTooLarge",
    "ClientGone",
    "LifespanState",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "StreamOwner",
    "check_max_inflight",
    "end_all_streams",
    "route_path",
    "stop_all_requests",
    "watch_disconnect",
]

from ..auth.info import AUTH_SCOPE_KEY

log = logging.getLogger("mcpkit.transports")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class ASGIApp(Protocol):
    """An ASGI 3 application."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...


class StreamOwner(Protocol):
    """An app holding long-lived streams that must end for a graceful shutdown."""

    def end_streams(self) -> None: ...


# Long-lived SSE streams keep uvicorn's graceful shutdown waiting forever (it waits for
# every connection to finish). The apps register here so `serve()` can end their streams
# when a signal arrives, even when they are mounted inside another framework's app.
_stream_owners: weakref.WeakSet[Any] = weakref.WeakSet()


def register_stream_owner(owner: StreamOwner) -> None:
    _stream_owners.add(owner)


def end_all_streams() -> None:
    """End every open SSE stream of every mcpkit HTTP app in this process (call on the loop)."""
    for owner in list(_stream_owners):
        # A draining app is no longer ready: its /readyz answers 503 from now (.http_routes).
        routes = getattr(owner, "routes", None)
        if routes is not None:
            routes.state.stopping = True
        try:
            owner.end_streams()
        except Exception:  # pragma: no cover - defensive: shutdown must go on
            log.exception("could not end the streams of %r", owner)


def stop_all_requests() -> set[asyncio.Task[Any]]:
    """The graceful period is over: every mcpkit app that runs requests in tasks of its own
    (legacy SSE) answers them with the shutting-down error (call on the loop). Returns the
    tasks of the streams carrying those answers, which must not be cancelled."""
    spared: set[asyncio.Task[Any]] = set()
    for owner in list(_stream_owners):
        stop = getattr(owner, "stop_requests", None)
        if stop is None:
            continue
        try:
            spared |= stop()
        except Exception:  # pragma: no cover - defensive: shutdown must go on
            log.exception("could not stop the requests of %r", owner)
    return spared


def route_path(scope: Scope) -> str:
    """The request path relative to where the app is mounted (``root_path``).

    Starlette's ``Mount`` and uvicorn's ``--root-path`` keep the full path in
    ``path`` and the mount prefix in ``root_path``.
    """
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        rest = path[len(root) :]
        if not rest or rest[0] == "/":
            return rest
    return path


# -- responses -------------------------------------------------------------------------------

JSON_CT: Final = (b"content-type", b"application/json")
SSE_HEADERS: Final = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    # nginx buffers proxied responses unless told not to; SSE must flow event by event.
    (b"x-accel-buffering", b"no"),
)


async def send_body(
    send: Send,
    status: int,
    body: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = (),
    *,
    content_type: tuple[bytes, bytes] | None = JSON_CT,
) -> None:
    """A complete response in two ``send`` calls."""
    out = [(b"content-length", str(len(body)).encode())]
    if content_type is not None and body:
        out.append(content_type)
    out.extend(headers)
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


def error_body(code: int, message: str, request_id: Any = None) -> bytes:
    """A JSON-RPC error object for an HTTP error body.

    An error whose request id is unknown carries ``"id": null`` (JSON-RPC 2.0 §5;
    the MCP schemas up to 2025-06-18 require ``id``), as on stdio.
    """
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


async def send_error(
    send: Send,
    status: int,
    code: int,
    message: str,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    await send_body(send, status, error_body(code, message), headers)


async def send_internal_error(send: Send, exc: Exception, debug: bool) -> None:
    """Answer 500 for an unexpected error, with its details only when ``debug``.

    When the response had already started, a 500 cannot be sent: end the body instead.
    """
    text = f"Internal error: {type(exc).__name__}: {exc}" if debug else "Internal error"
    try:
        await send_error(send, 500, INTERNAL_ERROR, text)
    except Exception:
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:
            pass


async def send_store_unavailable(send: Send) -> None:
    """Answer 503 when a shared store (Redis) failed: the client may retry later, and the
    store's address stays out of the answer (it is logged). Once the response has started,
    end its body instead."""
    try:
        await send_error(send, 503, INTERNAL_ERROR, STORE_UNAVAILABLE_TEXT)
    except Exception:
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:
            pass


async def send_rejected(send: Send, error: dict[str, Any]) -> None:
    """Answer 400 with a JSON-RPC error for a message (or batch) refused as a whole.

    An unknown ``id`` is sent as null (see :func:`error_body`).
    """
    if type(error) is dict:
        error.setdefault("id", None)
    await send_body(send, 400, orjson.dumps(error))


def accepts_event_stream(accept: bytes | None) -> bool:
    """May an SSE stream answer a request with this ``Accept`` (a missing one accepts all)?"""
    if accept is None:
        return True
    a = accept.lower()
    return b"text/event-stream" in a or b"text/*" in a or b"*/*" in a


class LifespanState:
    """Where an app is in its life, for ``/readyz`` (:mod:`.http_routes`): set by
    :func:`lifespan` (``started`` after startup, ``stopping`` at shutdown) and by a
    drain (:func:`end_all_streams`)."""

    __slots__ = ("started", "stopping")

    def __init__(self) -> None:
        self.started = False
        self.stopping = False


async def lifespan(
    receive: Receive,
    send: Send,
    on_shutdown: Callable[[], Awaitable[None]],
    server: MCPServer | None = None,
    on_startup: Callable[[], Awaitable[None]] | None = None,
    *,
    transport: tuple[TransportKind, object] | None = None,
    state: LifespanState | None = None,
) -> None:
    """Answer the ASGI lifespan protocol: on startup connect the server's store (when it
    has a ``connect()``, as ``RedisStore``: an unreachable store fails the startup with a
    message naming it) and enter the server's lifespan (``MCPServer(lifespan=...)``); on
    shutdown end the sessions, then exit it.

    ``transport`` (kind, app) is registered with the server once started and
    unregistered once its sessions have ended (``server.streamable_http_transport``,
    ``server.sse_transport``): the lifespan, not a request, so requests pay nothing.
    ``state`` (the app's, for ``/readyz``) notes when startup is done and shutdown begun."""
    entered = False
    registered = False
    try:
        while True:
            message = await receive()
            kind = message["type"]
            if kind == "lifespan.startup":
                if server is not None:
                    try:
                        # A shared store (RedisStore) checks it can reach its server: one
                        # that cannot would fail every request, so the app does not start.
                        connect = getattr(server.store, "connect", None)
                        if connect is not None:
                            await connect()
                        if on_startup is not None:
                            await on_startup()
                        await server.enter_lifespan()
                    except Exception as exc:  # LifespanError / StoreUnavailable: names the cause
                        # The exception rides along for mcpkit's serve(), which raises it
                        # (ASGI servers ignore keys they do not know).
                        failed = {"type": "lifespan.startup.failed", "message": str(exc)}
                        await send({**failed, "mcpkit.error": exc})
                        return
                    entered = True
                    if transport is not None:
                        server.register_transport(*transport)
                        registered = True
                if state is not None:
                    state.started = True
                await send({"type": "lifespan.startup.complete"})
            elif kind == "lifespan.shutdown":
                if state is not None:
                    state.stopping = True
                try:
                    await on_shutdown()
                    if server is not None:
                        # 2026-07-28 calls parked for input: nobody waits on them here (their
                        # clients' next retries replay them elsewhere); their handlers unwind
                        # before the server's lifespan exits, not after the loop is closing.
                        await server.input_rounds.close()
                    if server is not None and transport is not None and registered:
                        registered = False
                        server.unregister_transport(*transport)
                    if server is not None and entered:
                        entered = False
                        await server.exit_lifespan()
                except Exception as exc:
                    log.exception("error while shutting down")
                    await send({"type": "lifespan.shutdown.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.shutdown.complete"})
                return
    finally:
        # The host cancelled the lifespan task (or shutting down failed).
        if server is not None and transport is not None and registered:
            server.unregister_transport(*transport)
        if server is not None and entered:
            await server.exit_lifespan()


def sse_event(data: bytes, event_id: str | None = None, event: bytes = b"message") -> bytes:
    """One SSE event; ``data`` is compact JSON, so it never holds a newline."""
    if event_id is None:
        return b"event: " + event + b"\ndata: " + data + b"\n\n"
    return b"id: " + event_id.encode() + b"\nevent: " + event + b"\ndata: " + data + b"\n\n"


PING: Final = b": ping\n\n"


async def watch_disconnect(receive: Receive, queue: asyncio.Queue[Any], item: Any) -> None:
    """Put ``item`` on ``queue`` when the client disconnects (run as a task beside a stream)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            queue.put_nowait(item)
            return


def check_max_inflight(value: object) -> None:
    """The HTTP apps' ``max_inflight``: requests in flight per session, an int >= 1 or None."""
    if value is not None and (type(value) is not int or value < 1):
        raise ConfigurationError(
            f"max_inflight must be an integer >= 1 (requests per session) or None, got {value!r}"
        )
