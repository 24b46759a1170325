"""Observability: OpenTelemetry spans for the requests a server serves, and trace context in ``_meta``.

Built on two core seams, and nothing else of the core:

- the server's middleware chain (``mw(ctx, call_next)``, :mod:`mcpkit.server.middleware`):
  :func:`~mcpkit.observability.otel.otel_middleware` opens one server span per request
  on every transport and both protocol eras, parented by the trace context the
  request carries in ``params._meta``;
- the client's ``request_meta`` hook (:mod:`mcpkit.client.request_meta`):
  :func:`~mcpkit.observability.otel.otel_extension` writes the current trace
  context into the ``_meta`` of each request a :class:`mcpkit.Client` sends.

Also: the client's spans (:mod:`.exchanges`), the four MCP duration histograms
(:mod:`.conventions`), telemetry switched on by itself once the application
configured a provider (:mod:`.auto`), and a Prometheus scrape endpoint
(:mod:`.prometheus`, the ``prometheus`` extra).

It sits beside ``adapters`` and ``workflow``, above the server and client, because
it uses only their public seams; the core never imports it, and ``import mcpkit``
does not load it. Its modules need the ``otel`` extra (``opentelemetry-api``);
without it, importing them raises :class:`~mcpkit.errors.MissingExtra`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .conventions import Meters
    from .exchanges import otel_observer
    from .otel import otel_extension, otel_middleware
    from .prometheus import prometheus_reader, serve_metrics
    from .propagation import extract, inject

__all__ = [
    "Meters",
    "extract",
    "inject",
    "otel_extension",
    "otel_middleware",
    "otel_observer",
    "prometheus_reader",
    "serve_metrics",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "extract": ".propagation",
        "inject": ".propagation",
        "otel_extension": ".otel",
        "otel_middleware": ".otel",
        "Meters": ".conventions",
        "otel_observer": ".exchanges",
        "prometheus_reader": ".prometheus",
        "serve_metrics": ".prometheus",
    },
    __all__,
)
