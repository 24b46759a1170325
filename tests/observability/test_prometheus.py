"""The Prometheus endpoint: a real scrape over a socket finds the MCP histograms."""

from __future__ import annotations

import httpx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from mcpkit import Client, MCPServer
from mcpkit.observability import otel_middleware
from mcpkit.observability.conventions import Meters
from mcpkit.observability.prometheus import prometheus_reader, serve_metrics
from tests.transports.conftest import TIMEOUT, run_app


async def test_a_scrape_has_the_server_operation_histogram(provider: TracerProvider) -> None:
    registry = CollectorRegistry()  # the test's own, not the process-wide one
    meters = Meters(MeterProvider(metric_readers=[prometheus_reader(registry=registry)]))
    server = MCPServer(
        name="scraped",
        version="1",
        middleware=[otel_middleware(tracer_provider=provider, meters=meters)],
    )

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    serve_metrics(server, registry=registry)
    async with run_app(server.http_app()) as base:
        async with Client(url=base + "/mcp", protocol_version="2025-11-25", timeout=TIMEOUT) as c:
            await c.call_tool("add", {"a": 1, "b": 2})
            await c.call_tool("add", {"a": 2, "b": 2})
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            scraped = await http.get(base + "/metrics")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
    histogram = families["mcp_server_operation_duration_seconds"]
    assert histogram.type == "histogram"
    counts = [
        s
        for s in histogram.samples
        if s.name.endswith("_count") and s.labels.get("gen_ai_tool_name") == "add"
    ]
    assert [s.value for s in counts] == [2.0]
    assert counts[0].labels["mcp_method_name"] == "tools/call"
    buckets = {s.labels["le"] for s in histogram.samples if s.name.endswith("_bucket")}
    assert {"0.01", "300", "+Inf"} <= buckets  # the conventions' bucket advice
