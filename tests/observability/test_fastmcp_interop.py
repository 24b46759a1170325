"""Trace context across FastMCP 4.1.6 and mcpkit, both ways, over Streamable HTTP.

FastMCP emits MCP spans of its own and carries ``traceparent``/``tracestate`` in
``params._meta`` (not ``baggage``). Both peers use the global tracer provider, which a
process installs once: the whole exchange runs in a child process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import asyncio, json

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    import fastmcp
    from mcpkit import Client, MCPServer
    from tests.transports.conftest import run_app

    ours = MCPServer(name="mcpkit-side", version="1")

    @ours.tool
    async def add(a: int, b: int) -> int:
        "Add."
        return a + b

    theirs = fastmcp.FastMCP("fastmcp-side")

    @theirs.tool
    def mul(a: int, b: int) -> int:
        "Multiply."
        return a * b

    def spans(step):
        ids = step.get_span_context()
        return [
            {"name": s.name, "kind": s.kind.name, "scope": s.instrumentation_scope.name,
             "parent": s.parent.span_id == ids.span_id if s.parent else None,
             "same_trace": s.context.trace_id == ids.trace_id,
             "id": s.context.span_id, "parent_id": s.parent.span_id if s.parent else None}
            for s in exporter.get_finished_spans()
        ]

    async def main():
        tracer = provider.get_tracer("test")
        out = {}
        async with run_app(ours.http_app()) as base:
            async with fastmcp.Client(base + "/mcp") as client:
                exporter.clear()
                with tracer.start_as_current_span("fastmcp client step") as step:
                    await client.call_tool("add", {"a": 1, "b": 2})
                out["fastmcp_to_mcpkit"] = spans(step)
        async with run_app(theirs.http_app(path="/mcp")) as base:
            async with Client(url=base + "/mcp", protocol_version="2025-11-25") as client:
                exporter.clear()
                with tracer.start_as_current_span("mcpkit client step") as step:
                    await client.call_tool("mul", {"a": 2, "b": 3})
                out["mcpkit_to_fastmcp"] = spans(step)
        print(json.dumps(out))

    asyncio.run(main())
    """
)


def run() -> dict[str, list[dict[str, object]]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, list[dict[str, object]]] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_traces_cross_fastmcp_both_ways() -> None:
    out = run()
    # A FastMCP client's trace continues into an mcpkit server. FastMCP's client span has
    # the official SDK's own client span under it ("MCP send tools/call add"), whose
    # context is what reaches _meta: mcpkit's server span is that span's child.
    there = {s["id"]: s for s in out["fastmcp_to_mcpkit"]}
    (served,) = [
        s for s in there.values() if s["scope"] == "mcpkit" and s["name"] == "tools/call add"
    ]
    assert served["kind"] == "SERVER" and served["same_trace"]
    sdk_send = there[served["parent_id"]]
    assert (sdk_send["kind"], sdk_send["name"]) == ("CLIENT", "MCP send tools/call add")
    fastmcp_call = there[sdk_send["parent_id"]]
    assert (fastmcp_call["scope"], fastmcp_call["kind"]) == ("fastmcp", "CLIENT")
    assert fastmcp_call["name"] == "tools/call add" and fastmcp_call["parent"]
    # An mcpkit client's trace continues into a FastMCP server: its server span is the
    # child of mcpkit's client span, itself the child of the caller's span.
    back = out["mcpkit_to_fastmcp"]
    (sent,) = [s for s in back if s["scope"] == "mcpkit" and s["kind"] == "CLIENT"]
    (served,) = [s for s in back if s["scope"] == "fastmcp" and s["kind"] == "SERVER"]
    assert sent["name"] == served["name"] == "tools/call mul"
    assert sent["parent"] and served["same_trace"] and served["parent_id"] == sent["id"]
