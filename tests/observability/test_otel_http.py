"""Server spans over real sockets (Streamable HTTP, legacy SSE): a client's trace crosses them."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from mcpkit import Client, MCPServer
from mcpkit.observability import otel_extension, otel_middleware
from tests.transports.conftest import TIMEOUT, run_app


def make_server(provider: TracerProvider) -> MCPServer:
    server = MCPServer(
        name="traced", version="1", middleware=[otel_middleware(tracer_provider=provider)]
    )

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return server


@pytest.mark.parametrize(
    ("http_transport", "era"),
    [("streamable-http", "2025-11-25"), ("streamable-http", "2026-07-28"), ("sse", "2025-11-25")],
)
async def test_a_trace_continues_over_http_with_the_network_attributes(
    provider: TracerProvider, exporter: InMemorySpanExporter, http_transport: str, era: str
) -> None:
    server = make_server(provider)
    app = server.sse_app() if http_transport == "sse" else server.http_app()
    path = "/sse" if http_transport == "sse" else "/mcp"
    tracer = provider.get_tracer("agent")
    async with run_app(app) as base:
        async with Client(
            url=base + path,
            http_transport=http_transport,  # type: ignore[arg-type]
            protocol_version=era,
            timeout=TIMEOUT,
            extensions=[otel_extension()],
        ) as client:
            with tracer.start_as_current_span("agent step") as step:
                await client.call_tool("add", {"a": 1, "b": 2})
    (span,) = [
        s
        for s in exporter.get_finished_spans()
        if s.kind is SpanKind.SERVER and s.name == "tools/call add"
    ]
    assert span.context is not None and span.parent is not None and span.attributes is not None
    assert span.context.trace_id == step.get_span_context().trace_id
    assert span.parent.span_id == step.get_span_context().span_id
    assert span.attributes["network.transport"] == "tcp"
    assert span.attributes["network.protocol.name"] == "http"
    assert span.attributes["mcp.protocol.version"] == era
    # Sessions exist on the handshake era only (2026-07-28 has none).
    assert ("mcp.session.id" in span.attributes) is (era != "2026-07-28")


TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENT_ID = 0x00F067AA0BA902B7


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_the_traceparent_header_parents_a_message_without_trace_context(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    server = make_server(provider)
    app = server.http_app()
    header = f"00-{TRACE_ID:032x}-{PARENT_ID:016x}-01"
    async with run_app(app) as base:
        # No otel_extension: the messages carry no trace context in _meta.
        async with Client(
            url=base + "/mcp",
            protocol_version=era,
            timeout=TIMEOUT,
            headers={"traceparent": header},
        ) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
    (span,) = [
        s
        for s in exporter.get_finished_spans()
        if s.kind is SpanKind.SERVER and s.name == "tools/call add"
    ]
    assert span.context is not None and span.parent is not None
    assert span.context.trace_id == TRACE_ID
    assert (span.parent.span_id, span.parent.is_remote) == (PARENT_ID, True)
