"""Telemetry on by itself once the application configured OpenTelemetry, and its off switches.

Each case runs in a child process: a process installs its global providers once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys

    SETUP = sys.argv[1]
    out = {}
    if SETUP != "none":
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

    from mcpkit import Client, MCPServer

    server = MCPServer(name="auto", version="1")
    if SETUP == "switched-off":
        server.telemetry = False

    @server.tool
    async def add(a: int, b: int) -> int:
        "Add."
        return a + b

    async def main() -> None:
        async with Client(server=server, protocol_version="2025-11-25") as client:
            await client.call_tool("add", {"a": 1, "b": 2})
        if SETUP == "none":
            out["otel_imported"] = "opentelemetry" in sys.modules
            return
        out["spans"] = sorted(
            f"{s.kind.name} {s.name}" for s in exporter.get_finished_spans()
            if s.name == "tools/call add"
        )
        data = reader.get_metrics_data()
        out["metrics"] = sorted(
            m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
        ) if data is not None else []

    asyncio.run(main())
    print(json.dumps(out))
    """
)


def run(setup: str, **env: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, setup],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **env},
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_with_providers_configured_both_sides_trace_and_measure_unasked() -> None:
    out = run("providers")
    assert out["spans"] == ["CLIENT tools/call add", "SERVER tools/call add"]
    assert out["metrics"] == [
        "mcp.client.operation.duration",
        "mcp.client.session.duration",
        "mcp.server.operation.duration",
        "mcp.server.session.duration",
    ]


@pytest.mark.parametrize(
    ("setup", "env"), [("switched-off", {}), ("providers", {"MCPKIT_TELEMETRY": "off"})]
)
def test_the_off_switches(setup: str, env: dict[str, str]) -> None:
    out = run(setup, **env)
    if env:  # the variable: neither side
        assert out == {"spans": [], "metrics": []}
    else:  # server.telemetry = False: the client still traces
        assert out["spans"] == ["CLIENT tools/call add"]


def test_without_opentelemetry_configured_nothing_imports_it() -> None:
    assert run("none") == {"otel_imported": False}
