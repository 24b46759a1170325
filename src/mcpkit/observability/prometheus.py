"""A Prometheus scrape endpoint on a server's HTTP apps, from the OpenTelemetry metrics.

:func:`prometheus_reader` is the OpenTelemetry Prometheus exporter's metric reader
(the application gives it to its ``MeterProvider``); :func:`serve_metrics` declares
a ``/metrics`` route on the server (``server.custom_route``) that answers what the
reader collected, in the exposition format ``prometheus_client`` writes: the
``mcp_server_operation_duration_seconds`` histogram and the others, with whatever
else the application measures. Needs the ``prometheus`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._extras import require_extra

with require_extra(
    "prometheus", feature="the Prometheus endpoint (mcpkit.observability.prometheus)"
):
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

if TYPE_CHECKING:
    from ..transports.http_routes import HTTPRequest, HTTPResponse

__all__ = ["prometheus_reader", "serve_metrics"]


def prometheus_reader(*, registry: CollectorRegistry | None = None) -> PrometheusMetricReader:
    """The metric reader to give the meter provider: ``MeterProvider(metric_readers=[...])``.

    Its metrics join ``registry`` (``prometheus_client``'s global one by default), which
    :func:`serve_metrics` exposes."""
    return PrometheusMetricReader(registry=registry if registry is not None else REGISTRY)


def serve_metrics(
    server: Any,
    path: str = "/metrics",
    *,
    registry: CollectorRegistry | None = None,
    public: bool = False,
) -> None:
    """Answer Prometheus scrapes on ``path`` of ``server``'s HTTP apps (declare it before
    building them). ``public=True``: no bearer token needed on a protected server (the
    scraper usually has none; keep the port private then)."""
    from ..transports.http_routes import HTTPResponse  # the route's answer (the HTTP layer's)

    source = registry if registry is not None else REGISTRY

    async def metrics(request: HTTPRequest) -> HTTPResponse:
        # generate_latest collects: the reader turns the OpenTelemetry points into samples.
        return HTTPResponse(200, generate_latest(source), [("content-type", CONTENT_TYPE_LATEST)])

    server.custom_route(path, public=public)(metrics)
