"""The ``Context`` a tool, resource or prompt function receives.

Declare a parameter annotated ``Context`` (any name) and mcpkit passes the
request's context; it never appears in the input schema. Everything that
talks back to the client goes through the session, on the stream of the
request that caused it (2025-11-25 transports: related messages).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..errors import RESOURCE_NOT_FOUND, MCPError, ResourceNotFound
from .client_requests import (
    ClientAsks,
    ElicitResult,
    Root,
    elicitation_schema,
    requested_schema_for,
)
from .detached import (
    ProgressSink,
    RequestAsker,
    progress_reported_to,
    progress_sink,
    report_and_ask_through,
    request_asker,
    requests_answered_by,
)
from .state import State, state_of
from .visibility import ContextVisibility
from .worker_pool import InPlaceWait, call_in_thread

if TYPE_CHECKING:
    from ..auth.info import AuthInfo
    from .session import Request, ServerSession

__all__ = [
    "Context",
    "ElicitResult",
    "LogLevel",
    "ProgressSink",
    "RequestAsker",
    "RequestExtra",
    "Root",
    "current_context",
    "detach_from_request",
    "elicitation_schema",
    "progress_reported_to",
    "progress_sink",
    "request_asker",
    "requested_schema_for",
    "requests_answered_by",
]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: dict[str, int] = {
    name: i
    for i, name in enumerate(
        ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    )
}

T = TypeVar("T")

_current: ContextVar[Context | None] = ContextVar("mcpkit_context", default=None)


def current_context() -> Context | None:
    """The ``Context`` of the MCP request being served, from anywhere in its call tree.

    Works in sync functions mcpkit runs in a worker thread too: they run in a
    copy of the request's ``contextvars`` context.
    """
    return _current.get()


def detach_from_request(*, progress: ProgressSink, ask: RequestAsker) -> None:
    """From now on, for the rest of the *current asyncio task* (and the tasks and worker
    threads it starts from now on), report progress to ``progress`` and answer requests
    to the client with ``ask``, as inside :func:`progress_reported_to` and
    :func:`requests_answered_by`.

    For work whose request is answered while it goes on running: a tool that the tasks
    extension turns into a task part-way through (after input rounds of its own
    request, SEP-2663 with SEP-2322) calls it from its own task once the answer is
    decided. Unlike the two blocks it is not undone: the values live in the task's own
    context, and end with it. Call it only in a task of your own making. A 2026-07-28
    call paused for input before (``server.input_rounds``) stops counting as one: its
    input-round TTL and bounds no longer apply to what is now work of its own.
    """
    report_and_ask_through(progress=progress, ask=ask)
    ctx = _current.get()
    call = None if ctx is None else ctx.session.inputs
    call_id = getattr(call, "id", "")  # NOT_PAUSABLE (a plain tool in its request) has none
    if ctx is not None and call_id:
        # Forgotten, not ended: the round waiting for it still gets its outcome, but the
        # input-round TTL and the bounds on parked calls can no longer cancel it.
        parked = ctx.session.server.input_rounds.parked
        if parked.get(call_id) is call:
            parked.pop(call_id)


async def run_sync(
    fn: Callable[..., T],
    kwargs: dict[str, Any],
    ctx: Context | None,
    *,
    wait: InPlaceWait | None = None,
) -> T:
    """Run a sync user function in a worker thread, so it never stalls the loop.

    The function runs in a copy of the caller's ``contextvars`` context, so
    :func:`current_context` works in the thread, and ``ctx`` learns the loop its
    blocking helpers (``ctx.info(...)`` from the thread) must hop back to. ``wait``
    lets the loop wait briefly in place for a quick function
    (:mod:`mcpkit.server.worker_pool`).
    """
    loop = asyncio.get_running_loop()
    if ctx is not None:
        ctx._loop = loop
    call = functools.partial(contextvars.copy_context().run, fn, **kwargs)
    return await call_in_thread(call, wait=wait, loop=loop)


class CancelSignal:
    """Set when the client cancels the request (Mastra's ``signal``)."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self._event is not None and self._event.is_set()

    aborted = cancelled

    def mark_cancelled(self) -> None:
        """Set the signal: the session serving the request calls this when the client
        cancels it or the session closes (a handler reads ``cancelled`` or awaits ``wait``)."""
        if self._event is None:
            self._event = asyncio.Event()
        self._event.set()

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()


@dataclass(slots=True)
class RequestExtra:
    """Mastra's ``extra``: what the transport knows about the request."""

    auth_info: Any
    session_id: str | None
    signal: CancelSignal
    send_notification: Callable[[str, dict[str, Any] | None], Awaitable[None]]
    send_request: Callable[..., Awaitable[dict[str, Any]]]
    request_id: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


class Context(ClientAsks, ContextVisibility):
    """Per-request handle: logging, progress, elicitation, sampling, roots, visibility.

    What it asks of the client (``elicit``, ``elicit_url``, ``sample``,
    ``list_roots``) is in :class:`~mcpkit.server.client_requests.ClientAsks`; what
    it shows this caller (``enable_components``, ...) in
    :class:`~mcpkit.server.visibility.ContextVisibility`.
    """

    __slots__ = ("_extra", "_loop", "request", "session")

    def __init__(self, session: ServerSession, request: Request) -> None:
        self.session = session
        self.request = request
        self._extra: RequestExtra | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- identity -------------------------------------------------------------------------
    @property
    def request_id(self) -> Any:
        return self.request.id

    @property
    def session_id(self) -> str | None:
        return self.session.session_id

    @property
    def meta(self) -> dict[str, Any]:
        return self.request.meta

    @property
    def auth(self) -> AuthInfo | None:
        """Who the request's bearer token speaks for: an :class:`~mcpkit.auth.AuthInfo`
        on a protected HTTP server (or what an ASGI middleware put in
        ``scope["mcpkit.auth"]``); None on stdio, in memory and when unauthenticated.
        Also ``ctx.auth_info`` and ``ctx.extra.auth_info`` (Mastra's spelling)."""
        info: AuthInfo | None = self.request.auth_info
        return info

    @property
    def auth_info(self) -> Any:
        """The same as :attr:`auth` (any object an ASGI middleware supplied)."""
        return self.request.auth_info

    @property
    def client_info(self) -> dict[str, Any] | None:
        return self.session.client_info

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.session.client_capabilities

    @property
    def cancelled(self) -> bool:
        return self.request.cancelled

    @property
    def lifespan_state(self) -> Any:
        """What the server's lifespan yielded (``MCPServer(lifespan=...)``): shared
        resources such as a database pool; None when the server has no lifespan."""
        return self.session.server.lifespan_state

    @property
    def state(self) -> State:  # the caller's JSON values, per session or principal: .state
        return state_of(self, self._call)

    @property
    def extra(self) -> RequestExtra:
        if self._extra is None:
            req = self.request
            self._extra = RequestExtra(
                auth_info=req.auth_info,
                session_id=self.session.session_id,
                signal=req.signal,
                send_notification=self.send_notification,
                send_request=self.send_request,
                request_id=req.id,
                meta=req.meta,
            )
        return self._extra

    # -- thread bridge: sync tools run in a worker thread ----------------------------------
    def _call(self, coro: Coroutine[Any, Any, T]) -> Any:
        """On the loop: the awaitable. In a worker thread: run it on the loop and wait."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loop = self._loop
            if loop is None and self.request.task is not None:
                loop = self.request.task.get_loop()
            if loop is None:
                coro.close()
                raise RuntimeError("this Context is not bound to a running event loop") from None
            return asyncio.run_coroutine_threadsafe(coro, loop).result()
        return coro

    # -- notifications ----------------------------------------------------------------------
    async def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.request.send(method, params)

    def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> Any:
        """Send ``notifications/message`` if the session's level lets it through."""
        return self._call(self.session.log(self.request, level, data, logger=logger))

    def debug(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("debug", data, logger=logger)

    def info(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("info", data, logger=logger)

    def warning(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("warning", data, logger=logger)

    def error(self, data: Any, *, logger: str | None = None) -> Any:
        return self.log("error", data, logger=logger)

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Any:
        """Report progress; a no-op when the request carried no progress token.

        Inside :func:`progress_reported_to` it goes to that block's sink instead."""
        sink = progress_sink()  # read here: a sync tool's thread has a copy of it
        if sink is not None:
            return self._call(sink(progress, total, message))
        return self._call(self.request.progress(progress, total, message))

    def close_sse_stream(self) -> Any:
        """Close this request's SSE stream now; the client resumes it later (SEP-1699 polling).

        Messages sent afterwards, and the result, are kept in the transport's
        event store and replayed when the client reconnects with
        ``Last-Event-ID``. A no-op when the transport cannot resume streams.
        """
        return self._call(self._close_sse_stream())

    async def _close_sse_stream(self) -> None:
        close = self.request.close_stream
        if close is not None:
            await close()

    # -- requests to the client -------------------------------------------------------------
    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        return await self.session.send_request(method, params, self.request, timeout=timeout)

    def once(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` (sync or async) once per call, however many rounds it takes.

        On the stateless era the JSON result is journaled in the ``requestState``;
        when a later round is served by another worker, which replays the handler
        from the top, this returns the journaled result instead of running ``fn``
        again. Wrap each side effect (a payment, an e-mail, a counter) in a step
        whose ``name`` is unique within the handler (a repeated name counts its
        occurrences). The result must be plain JSON (dict, list, str, int, float,
        bool, None), and comes back as JSON gives it (a tuple as a list); the
        client can read it (the state is signed, not encrypted). On the
        handshake era, and for requests that cannot ask for input, ``fn`` simply
        runs and its value is returned as is. A sync ``fn`` runs in a worker thread.
        """
        return self._call(self._once(name, fn, args))

    async def _once(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        call = self.session.inputs
        if not inspect.iscoroutinefunction(fn):
            fn = functools.partial(run_sync, functools.partial(fn, *args), {}, self)
            args = ()
        if call is None:
            value = fn(*args)
            return await value if inspect.isawaitable(value) else value
        return await call.once(name, fn, args)

    def ping(self, *, timeout: float | None = None) -> Any:
        return self._call(self.session.send_request("ping", None, self.request, timeout=timeout))

    # -- requests to the server itself ------------------------------------------------------
    def read_resource(self, uri: str) -> Any:
        """Read one of this server's resources (``resources/read``); the result dict.

        Served as the client's own read would be: the server's resources, the mounted
        and the proxied ones (component sources) alike, through the server's middleware
        (which sees the calling request's id), with this request's auth info, so a
        resource's scopes are checked against the caller's token. A missing resource
        raises :class:`~mcpkit.errors.ResourceNotFound` (a proxied server's too); any
        other error is the :class:`~mcpkit.errors.MCPError` a client would get.
        """
        return self._call(self._read(uri))

    async def _read(self, uri: str) -> dict[str, Any]:
        try:
            return await self._served("resources/read", {"uri": uri})
        except ResourceNotFound:
            raise
        except MCPError as exc:  # a proxied server's not-found: the same exception
            if exc.code == RESOURCE_NOT_FOUND:
                raise ResourceNotFound(uri) from exc
            raise

    def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, version: str | None = None
    ) -> Any:
        """Get one of this server's prompts (``prompts/get``), as :meth:`read_resource`
        reads: mounted and proxied prompts included; the result dict (``messages``)."""
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if version is not None:
            params["version"] = version
        return self._call(self._served("prompts/get", params))

    async def _served(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        outer = self.request
        # The same stream and auth as the calling request: a proxied upstream's
        # server-to-client requests and logs reach the caller, as its call's do.
        # (Made as type(outer): request.py imports this module, not the reverse.)
        inner = type(outer)(
            self.session,
            {"id": outer.id, "method": method, "params": params},
            outer.send_raw,
            outer.auth_info,
        )
        return await self.session.server.wrapped_methods[method](self.session, inner)
