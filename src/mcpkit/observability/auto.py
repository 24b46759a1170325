"""The automatic telemetry: what a server or client switches on once OpenTelemetry is configured.

The core asks for this module (:func:`mcpkit.protocol.observe.telemetry_module`)
only when ``opentelemetry`` is already imported; it then looks whether the
application installed a tracer or meter provider (the API's proxies until it
does) and, if so, instruments:

- a server (:func:`instrument_server`, from ``ServerTelemetry.look_for_telemetry``):
  :func:`~.otel.otel_middleware` outermost (server spans,
  ``mcp.server.operation.duration``, ``mcp.server.session.duration``) and the
  observer of the requests it sends its clients (client spans);
- a client (:func:`client_observer`, when a ``ClientSession`` is made without an
  observing extension): client spans, ``mcp.client.*.duration``.
"""

from __future__ import annotations

from typing import Any

from .._extras import require_extra

with require_extra("otel", feature="OpenTelemetry tracing (mcpkit.observability.auto)"):
    from opentelemetry import metrics, trace
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

from ..protocol.observe import ObserveHook
from .conventions import Meters
from .exchanges import otel_observer
from .otel import otel_middleware

__all__ = ["client_observer", "configured", "instrument_server"]


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
    if any(getattr(mw, "mcpkit_telemetry", False) for mw in server.middleware):
        return True  # otel_middleware() given explicitly: left as it is
    tracing, measuring = configured()
    if not (tracing or measuring):
        return False
    meters = Meters() if measuring else None
    middleware = otel_middleware(
        tracer_provider=trace.get_tracer_provider() if tracing else _NO_TRACING, meters=meters
    )
    server.add_telemetry(middleware, otel_observer(meters=meters or Meters()))
    return True


def client_observer() -> ObserveHook | None:
    """The observe hook of a client's exchanges if a provider is configured, else None."""
    tracing, measuring = configured()
    if not (tracing or measuring):
        return None
    return otel_observer()


_NO_TRACING = NoOpTracerProvider()
