"""The automatic telemetry: what a server or client switches on once OpenTelemetry is configured.

The core asks for this module (:func:`mcpkit.protocol.observe.telemetry_module`)
only when ``opentelemetry`` is already imported; it then looks whether the
application installed a tracer or meter provider (the API's proxies until it
does) and, if so, instruments:

- a server (:func:`instrument_server`, from ``ServerTelemetry.look_for_telemetry``):
  :func:`~.otel.otel_middleware` outermost (server spans,
  ``mcp.server.operation.duration``, ``mcp.server.session.duration``) and the
  observer of the requests it sends its clients (client spans), and on HTTP the
  request's ``traceparent`` header as the parent of a message without one in ``_meta``;
- a client (:func:`client_observer`, when a ``ClientSession`` is made without an
  observing extension): client spans, ``mcp.client.*.duration``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._extras import require_extra

with require_extra("otel", feature="OpenTelemetry tracing (mcpkit.observability.auto)"):
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, propagate, trace
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

from ..protocol.observe import ObserveHook
from .conventions import Meters
from .exchanges import otel_observer
from .otel import otel_middleware

__all__ = ["client_observer", "configured", "instrument_server", "shared_meters", "trace_headers"]


def configured() -> tuple[bool, bool]:
    """Whether the application installed a tracer provider, and a meter provider."""
    tracing = not isinstance(trace.get_tracer_provider(), ProxyTracerProvider | NoOpTracerProvider)
    meter_provider = metrics.get_meter_provider()
    # Until one is installed the global meter provider is the API's private proxy class.
    measuring = not isinstance(meter_provider, NoOpMeterProvider) and (
        type(meter_provider).__name__ != "_ProxyMeterProvider"
    )
    return tracing, measuring


def instrument_server(server: Any) -> bool:
    """Instrument ``server`` if a provider is configured; True when it is (or was already)."""
    tracing, measuring = configured()
    if any(getattr(mw, "mcpkit_telemetry", False) for mw in server.middleware):
        # otel_middleware() given explicitly: left as it is, but for the HTTP headers.
        server.http_context = trace_headers
        return True
    if not (tracing or measuring):
        return False
    meters = shared_meters() if measuring else None
    middleware = otel_middleware(
        tracer_provider=trace.get_tracer_provider() if tracing else _NO_TRACING, meters=meters
    )
    server.add_telemetry(
        middleware, otel_observer(meters=shared_meters()), trace_headers if tracing else None
    )
    return True


_HEADERS = (b"traceparent", b"tracestate", b"baggage")


def trace_headers(scope: dict[str, Any]) -> Callable[[], None] | None:
    """Make an HTTP request's W3C trace headers the current context (the server span's
    parent when the message's ``_meta`` has none); returns what undoes it."""
    headers = scope.get("headers", ())
    # Most requests carry none: one pass for traceparent before any decoding.
    for name, _ in headers:
        if name == b"traceparent":
            break
    else:
        return None
    carrier = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in headers
        if name in _HEADERS
    }
    token = otel_context.attach(propagate.extract(carrier))
    return functools.partial(otel_context.detach, token)


def client_observer() -> ObserveHook | None:
    """The observe hook of a client's exchanges if a provider is configured, else None."""
    tracing, measuring = configured()
    if not (tracing or measuring):
        return None
    return otel_observer(meters=shared_meters())


def shared_meters() -> Meters:
    """The histograms on the global meter provider, made once per provider: every
    server and client instrumented automatically records into the same ones."""
    return _meters_of(metrics.get_meter_provider())


@functools.cache
def _meters_of(provider: object) -> Meters:
    return Meters(provider)  # type: ignore[arg-type]


_NO_TRACING = NoOpTracerProvider()
