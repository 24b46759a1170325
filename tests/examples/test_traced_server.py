"""examples/traced_server.py: its spans, on both eras, with a client's trace continuing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from mcpkit.client import Client
from mcpkit.observability import otel_extension
from tests.examples.fresh import fresh_example

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traced_server.py"


@pytest.fixture
def example() -> Iterator[ModuleType]:
    with fresh_example(EXAMPLE) as module:
        yield module


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_lookup_is_traced_from_the_client_into_the_tool(
    example: ModuleType, version: str
) -> None:
    exporter = InMemorySpanExporter()
    provider: TracerProvider = example.provider
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client_side = TracerProvider().get_tracer("agent")
    async with Client(
        server=example.server, protocol_version=version, extensions=[otel_extension()]
    ) as client:
        with client_side.start_as_current_span("agent step") as step:
            found = await client.call_tool("lookup", {"city": "Lyon"})
            missing = await client.call_tool("lookup", {"city": "Atlantis"})
    assert found["content"][0]["text"] == "520000"
    assert missing["isError"] is True
    spans = {s.name: s for s in exporter.get_finished_spans()}
    call, query = spans["tools/call lookup"], spans["database query"]
    assert call.context is not None and call.parent is not None and query.parent is not None
    assert call.context.trace_id == step.get_span_context().trace_id
    assert call.parent.span_id == step.get_span_context().span_id
    assert query.parent.span_id == call.context.span_id
    failed = [s for s in exporter.get_finished_spans() if s.status.status_code is StatusCode.ERROR]
    assert [s.name for s in failed] == ["tools/call lookup"]
    assert failed[0].attributes is not None and failed[0].attributes["error.type"] == "tool_error"
