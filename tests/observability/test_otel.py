"""Server spans by the OpenTelemetry MCP semantic conventions, on both protocol eras."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from opentelemetry import baggage
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpkit import Client, MCPServer, ToolError
from mcpkit.errors import RemoteError
from mcpkit.observability import otel_extension, otel_middleware
from mcpkit.testing import InMemoryClient, connect

ERAS = ["2025-11-25", "2026-07-28"]
TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENT_ID = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{PARENT_ID:016x}-01"


def make_server(
    provider: TracerProvider, started: asyncio.Event | None = None, **options: Any
) -> MCPServer:
    started = started or asyncio.Event()
    server = MCPServer(
        name="traced",
        version="1",
        middleware=[otel_middleware(tracer_provider=provider, **options)],
    )
    tool_tracer = provider.get_tracer("tool-code")

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add, inside a span of the tool's own."""
        with tool_tracer.start_as_current_span("adding"):
            return a + b

    @server.tool
    async def tenant() -> str:
        """The baggage the caller sent."""
        return str(baggage.get_baggage("tenant"))

    @server.tool
    async def fail() -> str:
        """Always a tool error."""
        raise ToolError("the upstream is down")

    @server.tool
    async def slow() -> str:
        """Wait until cancelled."""
        started.set()
        await asyncio.sleep(60)
        return "late"

    @server.prompt
    def greet(name: str) -> str:
        """A greeting."""
        return f"Hello {name}"

    @server.resource("demo://readme")
    def readme() -> str:
        return "read me"

    @server.resource("demo://notes")
    def notes() -> str:
        return "notes"

    return server


@asynccontextmanager
async def client_for(server: MCPServer, era: str) -> AsyncIterator[InMemoryClient]:
    # 2026-07-28 has no handshake: each request carries its envelope in _meta.
    async with connect(server, protocol_version=era, initialize=era != "2026-07-28") as client:
        yield client


def server_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.SERVER]


def only(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_call_span_is_named_for_the_tool_with_the_conventions_attributes(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    async with client_for(make_server(provider), era) as client:
        exporter.clear()
        await client.call_tool("add", {"a": 1, "b": 2})
    span = only(server_spans(exporter), "tools/call add")
    attributes = dict(span.attributes or {})
    assert attributes.pop("jsonrpc.request.id").isdigit()  # type: ignore[union-attr]
    assert attributes == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "add",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": era,
    }
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("era", ERAS)
async def test_prompt_resource_and_listing_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    async with client_for(make_server(provider), era) as client:
        exporter.clear()
        await client.get_prompt("greet", {"name": "Ada"})
        await client.read_resource("demo://readme")
        await client.list_tools()
    spans = server_spans(exporter)
    assert [s.name for s in spans] == ["prompts/get greet", "resources/read", "tools/list"]
    assert spans[0].attributes is not None and spans[1].attributes is not None
    assert spans[0].attributes["gen_ai.prompt.name"] == "greet"
    assert "gen_ai.operation.name" not in spans[0].attributes
    assert spans[1].attributes["mcp.resource.uri"] == "demo://readme"
    assert spans[2].attributes == {
        "mcp.method.name": "tools/list",
        "mcp.protocol.version": era,
        "jsonrpc.request.id": str(client.sent[-1]["id"]),
    }


async def test_the_resource_uri_joins_the_name_only_when_asked(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with client_for(make_server(provider, resource_uri_in_name=True), ERAS[0]) as client:
        await client.read_resource("demo://readme")
    assert [s.name for s in server_spans(exporter)][-1] == "resources/read demo://readme"


@pytest.mark.parametrize("era", ERAS)
async def test_requests_of_one_kind_each_get_their_own_id_and_outcome(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    # What all tools/call add requests share is built once: what one of them adds (its
    # id, its error) must not reach the next.
    async with client_for(make_server(provider), era) as client:
        exporter.clear()
        bad = await client.request("tools/call", {"name": "add", "arguments": {"a": "x", "b": 1}})
        assert bad["isError"] is True  # invalid arguments: a tool error (SEP-1303)
        await client.call_tool("add", {"a": 1, "b": 2})
        await client.call_tool("add", {"a": 3, "b": 4})
    spans = [s for s in server_spans(exporter) if s.name == "tools/call add"]
    assert len(spans) == 3
    attributes = [dict(s.attributes or {}) for s in spans]
    assert len({a.pop("jsonrpc.request.id") for a in attributes}) == 3
    assert "error.type" in attributes[0]
    assert spans[0].status.status_code is StatusCode.ERROR
    assert (
        attributes[1]
        == attributes[2]
        == {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": "add",
            "gen_ai.operation.name": "execute_tool",
            "mcp.protocol.version": era,
        }
    )
    assert spans[2].status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("in_name", [False, True])
async def test_each_resource_read_carries_its_own_uri(
    provider: TracerProvider, exporter: InMemorySpanExporter, in_name: bool
) -> None:
    server = make_server(provider, resource_uri_in_name=in_name)
    async with client_for(server, ERAS[0]) as client:
        exporter.clear()
        for uri in ("demo://readme", "demo://notes", "demo://readme"):
            await client.read_resource(uri)
    spans = server_spans(exporter)
    uris = [(s.attributes or {}).get("mcp.resource.uri") for s in spans]
    assert uris == ["demo://readme", "demo://notes", "demo://readme"]
    names = [f"resources/read {uri}" if in_name else "resources/read" for uri in uris]
    assert [s.name for s in spans] == names


async def test_the_initialize_span_has_the_negotiated_version(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with client_for(make_server(provider), "2025-06-18"):
        pass
    span = only(server_spans(exporter), "initialize")
    assert span.attributes is not None
    assert span.attributes["mcp.protocol.version"] == "2025-06-18"


@pytest.mark.parametrize("era", ERAS)
async def test_the_parent_comes_from_the_traceparent_in_meta(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    meta = {"traceparent": TRACEPARENT, "tracestate": "rojo=1", "baggage": "tenant=acme"}
    async with client_for(make_server(provider), era) as client:
        await client.request(
            "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta}
        )
        result = await client.request("tools/call", {"name": "tenant", "_meta": meta})
    span = only(server_spans(exporter), "tools/call add")
    assert span.context is not None and span.parent is not None
    assert span.context.trace_id == TRACE_ID
    assert (span.parent.span_id, span.parent.is_remote) == (PARENT_ID, True)
    assert span.context.trace_state.get("rojo") == "1"
    assert span.links == ()  # no ambient span to link
    # The tool code's own span is a child of the server span.
    (adding,) = [s for s in exporter.get_finished_spans() if s.name == "adding"]
    assert adding.parent is not None and adding.parent.span_id == span.context.span_id
    # The baggage is current while the tool runs.
    assert result["content"][0]["text"] == "acme"


async def test_the_meta_parent_wins_and_the_ambient_span_is_linked(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("transport")
    async with client_for(make_server(provider), ERAS[0]) as client:
        # In memory the request is served in the caller's context: a stand-in for an
        # HTTP server span around the MCP message.
        with tracer.start_as_current_span("POST /mcp", kind=SpanKind.SERVER) as http:
            await client.request("tools/list", {"_meta": {"traceparent": TRACEPARENT}})
            await client.request("prompts/list")
    listed = only(server_spans(exporter), "tools/list")
    assert listed.parent is not None and listed.parent.span_id == PARENT_ID
    (link,) = listed.links
    assert link.context.span_id == http.get_span_context().span_id
    # Without trace context in _meta the ambient span is the parent, and nothing is linked.
    prompts = only(server_spans(exporter), "prompts/list")
    assert prompts.parent is not None
    assert prompts.parent.span_id == http.get_span_context().span_id
    assert prompts.links == ()


async def test_baggage_without_a_trace_keeps_the_ambient_parent(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("transport")
    async with client_for(make_server(provider), ERAS[0]) as client:
        with tracer.start_as_current_span("POST /mcp") as http:
            result = await client.request(
                "tools/call", {"name": "tenant", "_meta": {"baggage": "tenant=globex"}}
            )
    assert result["content"][0]["text"] == "globex"
    span = only(server_spans(exporter), "tools/call tenant")
    assert span.parent is not None
    assert span.parent.span_id == http.get_span_context().span_id
    assert span.links == ()


@pytest.mark.parametrize("era", ERAS)
async def test_a_jsonrpc_error_sets_error_type_and_status(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    async with client_for(make_server(provider), era) as client:
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("missing", {})
    span = only(server_spans(exporter), "tools/call missing")
    assert span.attributes is not None
    code = str(caught.value.code)
    assert span.attributes["error.type"] == code
    assert span.attributes["rpc.response.status_code"] == code
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == str(caught.value)


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_error_result_is_a_tool_error(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    async with client_for(make_server(provider), era) as client:
        result = await client.call_tool("fail", {})
    assert result["isError"] is True
    span = only(server_spans(exporter), "tools/call fail")
    assert span.attributes is not None
    assert span.attributes["error.type"] == "tool_error"
    assert "rpc.response.status_code" not in span.attributes
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "the upstream is down"


@pytest.mark.parametrize("era", ERAS)
async def test_a_clients_trace_continues_into_the_server(
    provider: TracerProvider, exporter: InMemorySpanExporter, era: str
) -> None:
    tracer = provider.get_tracer("app")
    async with Client(
        server=make_server(provider), protocol_version=era, extensions=[otel_extension()]
    ) as client:
        with tracer.start_as_current_span("agent step") as step:
            await client.call_tool("add", {"a": 2, "b": 3})
    span = only(server_spans(exporter), "tools/call add")
    ids = step.get_span_context()
    assert span.context is not None and span.parent is not None
    assert span.context.trace_id == ids.trace_id
    assert span.parent.span_id == ids.span_id


async def test_a_cancelled_request_is_a_cancelled_error(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    started = asyncio.Event()
    async with client_for(make_server(provider, started), ERAS[0]) as client:
        call = asyncio.ensure_future(
            client.send_raw(
                {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "slow"}}
            )
        )
        async with asyncio.timeout(10):
            await started.wait()
            await client.notify("notifications/cancelled", {"requestId": 9})
            assert await call is None
    span = only(server_spans(exporter), "tools/call slow")
    assert span.attributes is not None and span.attributes["error.type"] == "cancelled"
    assert span.status.status_code is StatusCode.ERROR
