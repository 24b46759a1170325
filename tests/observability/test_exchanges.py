"""Client spans and the four MCP duration histograms, by the OpenTelemetry MCP conventions."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpkit import Client, Context, MCPServer
from mcpkit.errors import RemoteError
from mcpkit.observability import otel_extension, otel_middleware
from mcpkit.observability.conventions import BUCKETS, Meters
from mcpkit.observability.exchanges import otel_observer


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meters(reader: InMemoryMetricReader) -> Meters:
    return Meters(MeterProvider(metric_readers=[reader]))


def make_server(provider: TracerProvider, meters: Meters) -> MCPServer:
    server = MCPServer(
        name="traced",
        version="1",
        middleware=[otel_middleware(tracer_provider=provider, meters=meters)],
    )
    server.observe = otel_observer(tracer_provider=provider, meters=meters)

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool
    async def roots(ctx: Context) -> int:
        """How many roots the client has: a server-to-client request."""
        return len(await ctx.list_roots())

    return server


def spans(exporter: InMemorySpanExporter, kind: SpanKind, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind is kind and s.name == name]


def points(reader: InMemoryMetricReader, name: str) -> list[HistogramDataPoint]:
    data = reader.get_metrics_data()
    assert data is not None
    return [
        point  # type: ignore[misc]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_client_span_parents_the_server_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, meters: Meters, era: str
) -> None:
    server = make_server(provider, meters)
    app = provider.get_tracer("app")
    ext = otel_extension(tracer_provider=provider, meters=meters)
    async with Client(server=server, protocol_version=era, extensions=[ext]) as client:
        with app.start_as_current_span("agent step") as step:
            await client.call_tool("add", {"a": 1, "b": 2})
    (sent,) = spans(exporter, SpanKind.CLIENT, "tools/call add")
    (served,) = spans(exporter, SpanKind.SERVER, "tools/call add")
    assert sent.context is not None and sent.parent is not None and served.parent is not None
    assert sent.parent.span_id == step.get_span_context().span_id
    assert served.parent.span_id == sent.context.span_id  # the client span, not the step
    assert served.context is not None and served.context.trace_id == sent.context.trace_id
    attributes = dict(sent.attributes or {})
    assert attributes.pop("jsonrpc.request.id").isdigit()  # type: ignore[union-attr]
    assert attributes == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "add",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": era,
    }


async def test_notifications_and_errors_get_client_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter, meters: Meters
) -> None:
    ext = otel_extension(tracer_provider=provider, meters=meters)
    async with Client(
        server=make_server(provider, meters), protocol_version="2025-11-25", extensions=[ext]
    ) as client:
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("missing", {})
    assert spans(exporter, SpanKind.CLIENT, "notifications/initialized")
    (initialize,) = spans(exporter, SpanKind.CLIENT, "initialize")
    assert initialize.attributes is not None
    assert initialize.attributes["mcp.protocol.version"] == "2025-11-25"
    (failed,) = spans(exporter, SpanKind.CLIENT, "tools/call missing")
    assert failed.attributes is not None
    assert failed.attributes["error.type"] == str(caught.value.code)
    assert failed.attributes["rpc.response.status_code"] == str(caught.value.code)
    assert failed.status.status_code is StatusCode.ERROR


async def test_a_server_request_is_traced_on_both_sides(
    provider: TracerProvider, exporter: InMemorySpanExporter, meters: Meters
) -> None:
    ext = otel_extension(tracer_provider=provider, meters=meters)
    async with Client(
        server=make_server(provider, meters),
        protocol_version="2025-11-25",
        extensions=[ext],
        roots=["file:///tmp"],
    ) as client:
        result = await client.call_tool("roots", {})
    assert result["content"][0]["text"] == "1"
    (tool,) = spans(exporter, SpanKind.SERVER, "tools/call roots")
    # The server's request to the client: a CLIENT span under the tool's server span,
    # and the client's SERVER span under it, through the trace context in its _meta.
    (asked,) = spans(exporter, SpanKind.CLIENT, "roots/list")
    (answered,) = spans(exporter, SpanKind.SERVER, "roots/list")
    assert tool.context is not None and asked.context is not None
    assert asked.parent is not None and asked.parent.span_id == tool.context.span_id
    assert answered.parent is not None and answered.parent.span_id == asked.context.span_id
    assert answered.context is not None and answered.context.trace_id == tool.context.trace_id


async def test_the_four_histograms_with_the_conventions_attributes_and_buckets(
    provider: TracerProvider, meters: Meters, reader: InMemoryMetricReader
) -> None:
    ext = otel_extension(tracer_provider=provider, meters=meters)
    async with Client(
        server=make_server(provider, meters), protocol_version="2025-11-25", extensions=[ext]
    ) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        await client.call_tool("add", {"a": 3, "b": 4})
    server_ops = points(reader, "mcp.server.operation.duration")
    client_ops = points(reader, "mcp.client.operation.duration")
    calls: dict[str, Any] = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "add",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": "2025-11-25",
    }
    (served,) = [p for p in server_ops if dict(p.attributes or {}) == calls]
    (sent,) = [p for p in client_ops if dict(p.attributes or {}) == calls]
    assert served.count == sent.count == 2
    assert tuple(served.explicit_bounds) == tuple(float(b) for b in BUCKETS)
    assert sent.sum >= served.sum > 0  # the client waited for the server's work
    # Sessions: one each side, recorded when they closed; no per-session attribute.
    (server_session,) = points(reader, "mcp.server.session.duration")
    (client_session,) = points(reader, "mcp.client.session.duration")
    assert server_session.count == client_session.count == 1
    assert dict(client_session.attributes or {}) == {"mcp.protocol.version": "2025-11-25"}
    assert dict(server_session.attributes or {}) == {"mcp.protocol.version": "2025-11-25"}


async def test_a_failed_call_has_its_own_point_and_leaves_the_next_calls_alone(
    provider: TracerProvider, meters: Meters, reader: InMemoryMetricReader
) -> None:
    # The point's attributes are built once per kind of request; a failure adds to its
    # own point only.
    async with Client(server=make_server(provider, meters), protocol_version="2025-11-25") as c:
        with pytest.raises(RemoteError):
            await c.request("tools/call", {"name": "nothing"})
        await c.call_tool("add", {"a": 1, "b": 2})
        bad = await c.request("tools/call", {"name": "add", "arguments": {"a": "x", "b": 2}})
        assert bad["isError"] is True  # invalid arguments: a tool error (SEP-1303)
        await c.call_tool("add", {"a": 3, "b": 4})
        await c.call_tool("add", {"a": 5, "b": 6})
    served = [dict(p.attributes or {}) for p in points(reader, "mcp.server.operation.duration")]
    counts = [p.count for p in points(reader, "mcp.server.operation.duration")]
    calls = {
        (a.get("gen_ai.tool.name"), a.get("error.type")): n
        for a, n in zip(served, counts, strict=True)
        if a["mcp.method.name"] == "tools/call"
    }
    assert calls == {("nothing", "-32602"): 1, ("add", None): 3, ("add", "tool_error"): 1}


async def test_notifications_are_traced_across_and_from_the_server(
    provider: TracerProvider, exporter: InMemorySpanExporter, meters: Meters
) -> None:
    server = make_server(provider, meters)

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Logs."""
        await ctx.info("working")
        return "done"

    ext = otel_extension(tracer_provider=provider, meters=meters)
    async with Client(server=server, protocol_version="2025-11-25", extensions=[ext]) as client:
        await client.call_tool("chatty", {})
    # The client's notification: a CLIENT span, and the server's SERVER span its child.
    (sent,) = spans(exporter, SpanKind.CLIENT, "notifications/initialized")
    (received,) = spans(exporter, SpanKind.SERVER, "notifications/initialized")
    assert sent.context is not None and received.parent is not None
    assert received.parent.span_id == sent.context.span_id
    # The server's log message: a CLIENT span under the tool call's server span.
    (tool,) = spans(exporter, SpanKind.SERVER, "tools/call chatty")
    (logged,) = spans(exporter, SpanKind.CLIENT, "notifications/message")
    assert tool.context is not None and logged.parent is not None
    assert logged.parent.span_id == tool.context.span_id
    # ... and the client's SERVER span for it, its child.
    (heard,) = spans(exporter, SpanKind.SERVER, "notifications/message")
    assert logged.context is not None and heard.parent is not None
    assert heard.parent.span_id == logged.context.span_id
