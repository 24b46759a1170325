"""Telemetry that switches itself on: a server is traced and measured once the application
configured OpenTelemetry, with nothing added to the server.

``MCPServer`` mixes :class:`ServerTelemetry` in (through ``ServerExtensions``).
As OpenTelemetry-instrumented libraries do, mcpkit emits spans and metrics
whenever ``opentelemetry-api`` is loaded and the application installed a real
tracer or meter provider, and costs nothing otherwise: each new session asks
:meth:`ServerTelemetry.look_for_telemetry`, which looks at most once a second and,
while OpenTelemetry is not even imported, only checks ``sys.modules``. Found,
:mod:`mcpkit.observability.auto` puts its middleware outermost in the chain and
its observer on the server's own requests (:attr:`ServerTelemetry.observe`), once.

On Streamable HTTP, the W3C trace headers of a POST (``traceparent``, ...) are made
the current context while it is served (:func:`with_trace_headers`), so that they
parent the server span of a message whose ``_meta`` has no trace context.

Off switches: ``server.telemetry = False`` (before serving), or the environment
variable ``MCPKIT_TELEMETRY=off`` (:func:`mcpkit.protocol.observe.telemetry_module`).
A server given ``otel_middleware()`` explicitly is left as it is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..protocol.observe import ObserveHook, telemetry_module
from .middleware import Middleware, MiddlewareChains, wrap_methods

if TYPE_CHECKING:
    from .middleware import Handler

__all__ = ["HTTPContext", "ServerTelemetry", "with_trace_headers"]

#: ``hook(scope)``: make an HTTP request's trace headers current; returns what undoes it
#: (called with no argument when the request is done), or None when there were none.
HTTPContext = Callable[[dict[str, Any]], "Callable[[], None] | None"]

#: Seconds between two looks for a configured provider while none is.
LOOK_INTERVAL = 1.0


class ServerTelemetry:
    """Mixed into ``MCPServer``: automatic telemetry, and the observer of its own requests."""

    #: The observe hook of the requests the server sends its clients (protocol/observe.py);
    #: None: unobserved. Set by the telemetry, or by the application.
    observe: ObserveHook | None = None
    #: False: never switch telemetry on by itself (set it before serving).
    telemetry: bool = True
    #: Set by the telemetry: the hook that makes an HTTP request's trace headers current.
    http_context: HTTPContext | None = None
    _telemetry_look_at: float = 0.0

    if TYPE_CHECKING:
        methods: dict[str, Handler]
        middleware_chains: MiddlewareChains
        wrapped_methods: dict[str, Handler]
        _middleware: list[Middleware]

    def look_for_telemetry(self) -> None:
        """Switch telemetry on if a provider is configured now (called per new session)."""
        now = time.monotonic()
        if now < self._telemetry_look_at:
            return
        self._telemetry_look_at = now + LOOK_INTERVAL
        if not self.telemetry:
            return
        auto: Any = telemetry_module()
        if auto is not None and auto.instrument_server(self):
            self._telemetry_look_at = math.inf  # on for good (or already instrumented)

    def add_telemetry(
        self,
        middleware: Middleware,
        observe: ObserveHook | None,
        http_context: HTTPContext | None = None,
    ) -> None:
        """Put ``middleware`` outermost in the chain (it sees every request first, and
        what others refuse) and ``observe`` on the server's own requests. Sessions
        opened from now on use the new chain (the 2026-07-28 era: every request)."""
        self._middleware.insert(0, middleware)
        self.middleware_chains = MiddlewareChains(self._middleware, self.methods)
        self.wrapped_methods = wrap_methods(self.methods, self.middleware_chains)
        if observe is not None:
            self.observe = observe
        if http_context is not None:
            self.http_context = http_context


def with_trace_headers(
    server: ServerTelemetry, scope: Any, serving: Awaitable[None]
) -> Awaitable[None]:
    """``serving`` (an HTTP request) to await with its trace headers as the current
    context: what the Streamable HTTP transport awaits while ``server.http_context`` is set.
    A request without them is ``serving`` itself: no coroutine around it."""
    hook = server.http_context
    undo = hook(scope) if hook is not None else None
    return serving if undo is None else _undone_after(serving, undo)


async def _undone_after(serving: Awaitable[None], undo: Callable[[], None]) -> None:
    try:
        await serving
    finally:
        undo()
