"""The OpenTelemetry SDK's own floor: what one traced request costs with no mcpkit in it.

    python otel_floor.py MODE N

runs ``N`` iterations of what the tracing middleware asks of the SDK for one stdio
``tools/call`` (``otel_cost.py`` runs it under callgrind twice, with two ``N``, and
keeps the difference per iteration):

- ``loop``: the loop alone (nothing to subtract in practice; shows it is noise);
- ``span``: ``tracer.start_span(name, kind=SERVER, attributes=...)`` with the six
  attributes a stdio ``tools/call`` span has, then ``span.end()``; the SDK's
  provider, ``SimpleSpanProcessor`` and an exporter that drops every span;
- ``span-current``: that, the span made current in between
  (``context.attach(trace.set_span_in_context(span))`` and ``detach``): what any
  instrumentation must do so that the tool's own spans nest under the request's;
- ``span-batch``, ``span-current-batch``: the same with ``BatchSpanProcessor``;
- ``histogram``: one ``Histogram.record`` with the five attributes the
  ``mcp.server.operation.duration`` point of a stdio ``tools/call`` has (the SDK's
  meter provider, an in-memory reader never collected).

``MODE`` ending in ``-http`` uses the eight attributes of an HTTP ``tools/call`` span
(``mcp.session.id`` and ``network.protocol.name`` too) or, for ``histogram-http``, the
six of its histogram point. The attribute dicts are built before the loop: building
them is the caller's share, not the SDK's.
"""

import sys
from collections.abc import Sequence

from opentelemetry import context, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
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


STDIO = {
    "mcp.method.name": "tools/call",
    "gen_ai.tool.name": "echo",
    "gen_ai.operation.name": "execute_tool",
    "jsonrpc.request.id": "1",
    "network.transport": "pipe",
    "mcp.protocol.version": "2025-11-25",
}
HTTP = {
    **STDIO,
    "mcp.session.id": "0123456789abcdef0123456789abcdef",
    "network.transport": "tcp",
    "network.protocol.name": "http",
}
NOT_IN_METRICS = ("jsonrpc.request.id", "mcp.session.id")


def main() -> None:
    mode, n = sys.argv[1], int(sys.argv[2])
    attributes = HTTP if mode.endswith("-http") else STDIO
    mode = mode.removesuffix("-http")
    if mode == "loop":
        for _ in range(n):
            pass
        return
    if mode == "histogram":
        provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        histogram = provider.get_meter("mcpkit").create_histogram("mcp.server.operation.duration")
        point = {k: v for k, v in attributes.items() if k not in NOT_IN_METRICS}
        for _ in range(n):
            histogram.record(0.0001, point)
        provider.shutdown()
        return
    processor = BatchSpanProcessor if mode.endswith("-batch") else SimpleSpanProcessor
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(processor(Drop()))
    tracer = tracer_provider.get_tracer("mcpkit")
    server = trace.SpanKind.SERVER
    if mode.startswith("span-current"):
        for _ in range(n):
            span = tracer.start_span("tools/call echo", kind=server, attributes=attributes)
            token = context.attach(trace.set_span_in_context(span))
            context.detach(token)
            span.end()
    else:
        for _ in range(n):
            tracer.start_span("tools/call echo", kind=server, attributes=attributes).end()
    tracer_provider.shutdown()


if __name__ == "__main__":
    main()
