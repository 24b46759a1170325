"""OpenTelemetry server spans for MCP requests, by the OpenTelemetry MCP semantic conventions.

:func:`otel_middleware` opens one span of kind ``SERVER`` around each request the
server serves (the middleware chain: every transport, both protocol eras, each
round of a 2026-07-28 input exchange). Following the conventions' MCP page
(OpenTelemetry GenAI semantic conventions, "Server" span):

- name ``{mcp.method.name} {target}``, the target being the tool or prompt name;
  ``{mcp.method.name}`` alone when there is none. A resource URI is high
  cardinality, so it joins the name only when asked (``resource_uri_in_name``);
- parent: the trace context in ``params._meta`` (SEP-414); the ambient context
  (an HTTP server span, say) is then linked, not used. Without trace context in
  ``_meta`` the ambient context is the parent. ``baggage`` from ``_meta`` is
  current while the handler runs, as is the span: tool code's own spans nest
  under it;
- attributes ``mcp.method.name``, ``mcp.session.id``, ``mcp.protocol.version``,
  ``jsonrpc.request.id``, ``gen_ai.tool.name`` with ``gen_ai.operation.name =
  execute_tool``, ``gen_ai.prompt.name``, ``mcp.resource.uri``,
  ``network.transport`` (``pipe`` on stdio, ``tcp`` on HTTP) and
  ``network.protocol.name`` (``http``);
- on a JSON-RPC error: ``error.type`` and ``rpc.response.status_code`` the error
  code as a string, status ``ERROR`` with the error's message; on a tool result
  with ``isError``: ``error.type = tool_error`` and status ``ERROR``; a request
  the client cancelled: ``error.type = cancelled``.

:func:`otel_extension` is the client side: a :class:`mcpkit.Client` extension
whose ``request_meta`` hook writes the current trace context into each outgoing
request's ``_meta``, so a client's trace continues into the server.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

from .._extras import require_extra

with require_extra("otel", feature="OpenTelemetry tracing (mcpkit.observability.otel)"):
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import (
        Link,
        NoOpTracerProvider,
        ProxyTracerProvider,
        SpanKind,
        Status,
        StatusCode,
        Tracer,
        TracerProvider,
    )

from .._version import version
from ..errors import MCPError
from ..protocol.observe import ObserveHook
from ..server.middleware import CallNext, Middleware, MiddlewareContext
from .conventions import INSTRUMENTATION, Meters, describe, metric_attributes
from .exchanges import otel_observer
from .propagation import extract, inject, may_carry_context

__all__ = ["TRACE_CONTEXT_EXTENSION", "TraceContextExtension", "otel_extension", "otel_middleware"]

#: The identifier :func:`otel_extension` goes by in ``Client(extensions=[...])``.
TRACE_CONTEXT_EXTENSION: Final = "io.opentelemetry/trace-context"

_INSTRUMENTATION: Final = INSTRUMENTATION
#: Seconds between two looks for the global tracer provider while none is installed.
_LOOKUP_INTERVAL: Final = 1.0

# network.transport and network.protocol.name by ctx.transport: "pipe" for stdio, "tcp"
# for HTTP (the conventions' note on network.transport); nothing for in-memory sessions.
_NETWORK: Final[dict[str, dict[str, str]]] = {
    "stdio": {"network.transport": "pipe"},
    "streamable_http": {"network.transport": "tcp", "network.protocol.name": "http"},
    "sse": {"network.transport": "tcp", "network.protocol.name": "http"},
}


def otel_middleware(
    *,
    tracer_provider: TracerProvider | None = None,
    resource_uri_in_name: bool = False,
    meters: Meters | None = None,
) -> Middleware:
    """A middleware that traces each request: ``MCPServer(middleware=[otel_middleware()])``.

    ``tracer_provider`` defaults to the global one (``trace.set_tracer_provider``),
    looked up (at most once a second) until the application installs it: before,
    requests pass through untraced (no span, no context taken from ``_meta``).
    ``resource_uri_in_name`` names ``resources/*`` spans ``{method} {uri}`` (off by
    default: the conventions advise against high-cardinality span names).
    ``meters``: record ``mcp.server.operation.duration`` and ``mcp.server.session.duration``
    there (:class:`~mcpkit.observability.conventions.Meters`); no metrics without.
    """
    tracer: Tracer | None = None
    if tracer_provider is not None:
        tracer = tracer_provider.get_tracer(_INSTRUMENTATION, version())

    next_lookup = 0.0

    def global_tracer() -> Tracer | None:
        # Until the application installs a provider the global one is a proxy whose
        # spans are no-ops: the request then goes straight through, saving the span's
        # cost (several microseconds). The lookup itself reads os.environ, so it runs
        # at most once a second; installed once, a provider stays (the API's rule).
        nonlocal tracer, next_lookup
        now = time.monotonic()
        if now < next_lookup:
            return None
        next_lookup = now + _LOOKUP_INTERVAL
        provider = trace.get_tracer_provider()
        if isinstance(provider, ProxyTracerProvider | NoOpTracerProvider):
            return None
        tracer = provider.get_tracer(_INSTRUMENTATION, version())
        return tracer

    # (method, tool or prompt name, transport, revision) -> what every such request shares.
    shapes: dict[tuple[str, Any, str | None, str], _Shape] = {}

    async def otel(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        current = tracer or global_tracer()
        if current is None:
            if meters is None:
                return await call_next(ctx)
            current = _NO_TRACER  # metrics only
        # The histogram's clock: monotonic, where the span's is the wall clock (time_ns).
        started = time.perf_counter() if meters is not None else 0.0
        method = ctx.method
        params = ctx.params
        session = ctx.session
        target = params.get("name")  # the tool's or prompt's; a str, or not the name
        key = (
            method,
            target if type(target) is str else None,
            session.transport,
            session.revision.name,
        )
        shape = shapes.get(key)
        if shape is None:
            shape = _shape(method, params, key[2], key[3], resource_uri_in_name)
            if len(shapes) < _SHAPES and "mcp.resource.uri" not in shape[1]:
                shapes[key] = shape  # a URI is one of many: its requests are built each time
        name, attributes, point = shape
        attributes = attributes.copy()  # one dict per request, handed to start_span whole
        # A null id is not captured (the conventions' note on jsonrpc.request.id).
        request_id = ctx.request_id
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)
        session_id = session.session_id
        if session_id is not None:
            attributes["mcp.session.id"] = session_id

        meta = params.get("_meta")
        links: list[Link] | None = None
        token = None
        # Nothing a propagator could read (no _meta, or only the 2026-07-28 envelope's
        # keys): no propagator call at all.
        if meta and isinstance(meta, dict) and may_carry_context(meta):
            carried = extract(meta, context=otel_context.Context())
            if trace.get_current_span(carried).get_span_context().is_valid:
                # _meta parents the span; the transport's context (an HTTP span) is linked.
                ambient = trace.get_current_span().get_span_context()
                if ambient.is_valid:
                    links = [Link(ambient)]
                token = otel_context.attach(carried)
            elif carried:
                # Baggage without a trace: keep the ambient parent, add the baggage.
                token = otel_context.attach(extract(meta))
        # start_span and attach, not start_as_current_span: the same span, without a
        # context manager's generator and its exception plumbing on every request; the
        # attributes go in at the start, in one piece (set_attribute takes a lock each).
        span = current.start_span(name, kind=_SERVER, attributes=attributes, links=links)
        current_token = otel_context.attach(trace.set_span_in_context(span))
        try:
            try:
                result = await call_next(ctx)
            except MCPError as exc:
                code = str(exc.code)
                ended = {"error.type": code, "rpc.response.status_code": code}
                span.set_attributes(ended)
                span.set_status(Status(StatusCode.ERROR, exc.message))
                point = {**point, **ended}
                raise
            except asyncio.CancelledError:
                span.set_attribute("error.type", "cancelled")
                span.set_status(Status(StatusCode.ERROR, "cancelled by the client"))
                point = {**point, "error.type": "cancelled"}
                raise
            if method == "tools/call":
                if result.get("isError") is True:
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(Status(StatusCode.ERROR, _first_text(result)))
                    point = {**point, "error.type": "tool_error"}
            elif method == "initialize":
                negotiated = result.get("protocolVersion")
                if isinstance(negotiated, str):
                    attributes["mcp.protocol.version"] = negotiated
                    span.set_attribute("mcp.protocol.version", negotiated)
                    point = {**point, "mcp.protocol.version": negotiated}
                    if meters is not None:  # the session begins (ends: ServerSession.close)
                        meters.session_began(ctx.session, attributes)
            return result
        finally:
            span.end()
            otel_context.detach(current_token)
            if token is not None:
                otel_context.detach(token)
            if meters is not None:
                meters.server_operation.record(time.perf_counter() - started, point)

    otel.mcpkit_telemetry = True  # type: ignore[attr-defined]  # the automatic telemetry's mark
    return otel


_NO_TRACER: Final = trace.NoOpTracer()
_SERVER: Final = SpanKind.SERVER
#: Request shapes a middleware keeps: a client may name any tool, so past that many
#: kinds of request the rest are described afresh each time.
_SHAPES: Final = 1024

#: A request's span name, the span attributes all requests of its kind share, and the
#: attributes of its ``mcp.server.operation.duration`` point.
_Shape = tuple[str, dict[str, str], dict[str, str]]


def _shape(
    method: str,
    params: dict[str, Any],
    transport: str | None,
    revision: str,
    resource_uri_in_name: bool,
) -> _Shape:
    name, attributes = describe(method, params, resource_uri_in_name=resource_uri_in_name)
    network = _NETWORK.get(transport) if transport is not None else None
    if network is not None:
        attributes.update(network)
    if method != "initialize":  # initialize: the revision is known from its answer
        attributes["mcp.protocol.version"] = revision
    return name, attributes, metric_attributes(attributes)


def _first_text(result: dict[str, Any]) -> str | None:
    """The text of a tool error's first text block: what the tool said went wrong."""
    content = result.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                return text if isinstance(text, str) else None
    return None


def _inject(method: str, meta: dict[str, Any]) -> None:
    inject(meta)


class TraceContextExtension:
    """A :class:`mcpkit.Client` extension: trace context in each request's ``_meta``,
    and (with ``observe``) a client span and metrics for each exchange."""

    __slots__ = ("identifier", "observe", "request_meta")

    def __init__(self, observe: ObserveHook | None) -> None:
        self.identifier = TRACE_CONTEXT_EXTENSION
        self.request_meta = _inject
        self.observe = observe

    def __repr__(self) -> str:
        return f"TraceContextExtension(spans={self.observe is not None})"


def otel_extension(
    *,
    tracer_provider: TracerProvider | None = None,
    meters: Meters | None = None,
    spans: bool = True,
) -> TraceContextExtension:
    """The client side: ``Client(extensions=[otel_extension()])`` opens a ``CLIENT`` span
    for each request and notification the client sends, and a ``SERVER`` span for each
    server request it answers (:mod:`.exchanges`), and writes the trace context into the
    ``_meta`` of each request, so the server's span continues the client's trace (both
    eras: the hook runs before the 2026-07-28 envelope is added). ``spans=False``: the
    trace context only. Servers take :func:`otel_middleware`."""
    observe = otel_observer(tracer_provider=tracer_provider, meters=meters) if spans else None
    return TraceContextExtension(observe)
