"""``mcpkit_stdio.py``'s server traced by ``otel_middleware``: what tracing costs per request.

``python mcpkit_stdio_otel.py api``: the middleware with no tracer provider configured
(the OpenTelemetry API's no-op spans). ``sdk``: the SDK's provider with a span
processor whose exporter drops every span, so the figure holds the SDK's own work
(span objects, attributes, the processor) and no I/O. ``pass``: a middleware that
only calls ``call_next``, for the chain's own share.

The automatic telemetry (no middleware given): ``auto-api``, OpenTelemetry imported
and no provider installed; ``auto-sdk``, the SDK's tracer provider installed globally
(the same dropping exporter); ``auto-sdk-metrics``, that and the SDK's meter provider
(an in-memory reader never collected: the histograms' own work); ``auto-sdk-batch``,
the SDK's tracer provider with ``BatchSpanProcessor`` rather than ``SimpleSpanProcessor``.

``floor``: the SDK's floor inside this server: a middleware that only starts a span
with the six attributes of a stdio ``tools/call`` (fixed, built once), makes it
current, calls ``call_next`` and ends it (the SDK's provider, the dropping exporter);
against ``pass``, what the SDK's span costs here, with none of mcpkit's describing.
"""

import sys
from collections.abc import Sequence
from typing import Any

from mcpkit import MCPServer
from mcpkit.observability import otel_middleware
from mcpkit.server.middleware import CallNext, MiddlewareContext


async def passing(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
    return await call_next(ctx)


provider = None
mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode in ("sdk", "auto-sdk", "auto-sdk-metrics", "auto-sdk-batch", "floor"):
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    processor = BatchSpanProcessor if mode == "auto-sdk-batch" else SimpleSpanProcessor
    provider.add_span_processor(processor(Drop()))

if mode.startswith("auto"):
    from opentelemetry import metrics, trace

    if provider is not None:
        trace.set_tracer_provider(provider)
    if mode == "auto-sdk-metrics":
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader

        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    server = MCPServer(name="bench", version="1.0.0")
elif mode == "floor":
    from opentelemetry import context, trace

    tracer = trace.get_tracer("mcpkit", tracer_provider=provider)
    server_kind = trace.SpanKind.SERVER
    attributes = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": "1",
        "network.transport": "pipe",
        "mcp.protocol.version": "2025-11-25",
    }

    async def floor(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        span = tracer.start_span("tools/call echo", kind=server_kind, attributes=attributes)
        token = context.attach(trace.set_span_in_context(span))
        try:
            return await call_next(ctx)
        finally:
            span.end()
            context.detach(token)

    server = MCPServer(name="bench", version="1.0.0", middleware=[floor])
else:
    middleware = passing if mode == "pass" else otel_middleware(tracer_provider=provider)
    server = MCPServer(name="bench", version="1.0.0", middleware=[middleware])


@server.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run_stdio()
