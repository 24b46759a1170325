"""Client spans and metrics: what a session sends, and the peer's requests a client answers.

:func:`otel_observer` makes the observe hook (:mod:`mcpkit.protocol.observe`) that
a :class:`mcpkit.Client` runs on each exchange (through ``otel_extension()``), and
that a server runs on each request it sends its client (elicitation, sampling,
roots, ping). By the OpenTelemetry MCP semantic conventions:

- a request or notification the session *sends* gets a span of kind ``CLIENT``,
  child of the current span, named and described like the server's
  (:func:`~.conventions.describe`), with ``jsonrpc.request.id``,
  ``mcp.session.id`` (the transport's), ``mcp.protocol.version``,
  ``network.transport`` and ``server.address``/``server.port`` on HTTP; its
  context goes in the message's ``params._meta`` (``traceparent``, ...), so the
  peer's span is its child; its duration goes in ``mcp.client.operation.duration``;
- a server request the client *answers* (sampling, elicitation, roots) gets a
  span of kind ``SERVER``, parented by the trace context in its ``_meta`` and
  current while the client's handler runs; its duration goes in
  ``mcp.server.operation.duration``: the client is the receiver there;
- the client's session, from the handshake (or ``server/discover``) to its
  close, goes in ``mcp.client.session.duration``.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from .._extras import require_extra

with require_extra("otel", feature="OpenTelemetry tracing (mcpkit.observability.exchanges)"):
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from .._version import version
from ..protocol.observe import Kind, ObserveHook, Observer
from .conventions import INSTRUMENTATION, Meters, describe, error_type, metric_attributes
from .propagation import extract, inject

__all__ = ["otel_observer"]

_SESSION_METHODS = frozenset({"initialize", "server/discover"})


def otel_observer(
    *, tracer_provider: TracerProvider | None = None, meters: Meters | None = None
) -> ObserveHook:
    """The observe hook that traces and measures each exchange (see the module doc).

    ``tracer_provider`` defaults to the global one; ``meters`` to the global
    meter provider's histograms."""
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    tracer = provider.get_tracer(INSTRUMENTATION, version())
    instruments = meters if meters is not None else Meters()

    def observe(session: Any, kind: Kind, method: str) -> Observer | None:
        if kind == "closed":  # the session ended: its duration
            on_server = hasattr(session, "server")  # a server's session, else a client's
            histogram = instruments.server_session if on_server else instruments.client_session
            instruments.session_ended(session, histogram)
            return None
        return _Exchange(tracer, instruments, session, kind, method)

    return observe


def _session_attributes(session: Any) -> dict[str, Any]:
    """What the session is: protocol version, network, the peer's address, session id."""
    attributes: dict[str, Any] = {}
    revision = getattr(session, "protocol_version", None)  # a client session
    if revision is None:
        server_revision = getattr(session, "revision", None)  # a server session
        revision = getattr(server_revision, "name", None)
    if isinstance(revision, str):
        attributes["mcp.protocol.version"] = revision
    transport = getattr(session, "transport", None)
    if isinstance(transport, str):  # a server session names its transport
        if transport == "stdio":
            attributes["network.transport"] = "pipe"
        elif transport in ("streamable_http", "sse"):
            attributes["network.transport"] = "tcp"
            attributes["network.protocol.name"] = "http"
    elif transport is not None:
        url = getattr(transport, "url", None)
        if isinstance(url, str):
            parts = urlsplit(url)
            attributes["network.transport"] = "tcp"
            attributes["network.protocol.name"] = "http"
            if parts.hostname:
                attributes["server.address"] = parts.hostname
                attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        elif "stdio" in type(transport).__name__.lower():
            attributes["network.transport"] = "pipe"
        sid = getattr(transport, "session_id", None)
        if isinstance(sid, str):
            attributes["mcp.session.id"] = sid
    sid = getattr(session, "session_id", None)
    if isinstance(sid, str):
        attributes["mcp.session.id"] = sid
    return attributes


class _Exchange:
    """One observed exchange: its span, its clock, the context it made current."""

    __slots__ = (
        "attributes",
        "instruments",
        "kind",
        "method",
        "session",
        "span",
        "started",
        "token",
        "tracer",
    )

    def __init__(
        self, tracer: Tracer, instruments: Meters, session: Any, kind: str, method: str
    ) -> None:
        self.tracer = tracer
        self.instruments = instruments
        self.session = session
        self.kind = kind
        self.method = method
        self.span: Span | None = None
        self.token: object | None = None
        self.attributes: dict[str, Any] = {}
        self.started = time.perf_counter()

    def opened(self, message: dict[str, Any]) -> None:
        if self.span is not None:  # a retried request (a new HTTP session): one span for both
            self._inject(message)
            return
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        name, attributes = describe(self.method, params)
        rid = message.get("id")
        if rid is not None:
            attributes["jsonrpc.request.id"] = str(rid)
        attributes.update(_session_attributes(self.session))
        self.attributes = attributes
        if self.kind == "served":
            meta = params.get("_meta")
            parent = extract(meta) if isinstance(meta, dict) else None
            self.span = self.tracer.start_span(
                name, context=parent, kind=SpanKind.SERVER, attributes=attributes
            )
            current = parent if parent is not None else otel_context.get_current()
            self.token = otel_context.attach(trace.set_span_in_context(self.span, current))
        else:
            self.span = self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
            self._inject(message)

    def _inject(self, message: dict[str, Any]) -> None:
        # A copy of params and _meta: the caller's dict is not ours to change.
        params = message.get("params")
        params = dict(params) if isinstance(params, dict) else {}
        given = params.get("_meta")
        meta = dict(given) if isinstance(given, dict) else {}
        assert self.span is not None
        inject(meta, context=trace.set_span_in_context(self.span))
        if meta:
            params["_meta"] = meta
            message["params"] = params

    def finished(self, result: dict[str, Any] | None, error: BaseException | None) -> None:
        span = self.span
        if span is None:
            return
        attributes = self.attributes
        if error is not None:
            kind, code = error_type(error)
            attributes["error.type"] = kind
            span.set_attribute("error.type", kind)
            if code is not None:
                attributes["rpc.response.status_code"] = code
                span.set_attribute("rpc.response.status_code", code)
            span.set_status(Status(StatusCode.ERROR, str(error) or kind))
        elif result is not None and self.method == "tools/call" and result.get("isError") is True:
            attributes["error.type"] = "tool_error"
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        elif result is not None and self.method == "initialize":
            negotiated = result.get("protocolVersion")
            if isinstance(negotiated, str):
                attributes["mcp.protocol.version"] = negotiated
                span.set_attribute("mcp.protocol.version", negotiated)
        span.end()
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        instruments = self.instruments
        histogram = (
            instruments.server_operation if self.kind == "served" else instruments.client_operation
        )
        histogram.record(time.perf_counter() - self.started, metric_attributes(attributes))
        if error is None and self.method in _SESSION_METHODS and self.kind == "request":
            # The session begins once the handshake (or the discovery) succeeded.
            instruments.session_began(self.session, attributes)
