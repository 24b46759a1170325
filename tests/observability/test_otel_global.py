"""``otel_middleware()`` with the global provider: untraced until one is installed, then traced.

Run in a child process: a process installs its global tracer provider once, and
the other tests must not see it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, json

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcpkit import MCPServer
    from mcpkit.observability import otel_middleware
    from mcpkit.testing import connect

    server = MCPServer(name="g", version="1", middleware=[otel_middleware()])

    @server.tool
    async def recording() -> str:
        "Whether the current span records, and whether it is in a trace."
        span = trace.get_current_span()
        return f"{span.is_recording()} {span.get_span_context().is_valid}"

    async def main() -> None:
        out = {}
        async with connect(server) as client:
            meta = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
            before = await client.request("tools/call", {"name": "recording", "_meta": meta})
            out["before"] = before["content"][0]["text"]
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            # The middleware looks for the provider at most once a second.
            await asyncio.sleep(1.1)
            after = await client.call_tool("recording", {})
            out["after"] = after["content"][0]["text"]
            out["spans"] = [s.name for s in exporter.get_finished_spans()]
        print(json.dumps(out))

    asyncio.run(main())
    """
)


def test_requests_pass_untraced_until_the_application_installs_a_provider() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    out = json.loads(done.stdout.splitlines()[-1])
    # Before: no span at all, not even a no-op one carrying the _meta trace context.
    assert out["before"] == "False False"
    # After (a second later): the same middleware traces, without being rebuilt.
    assert out["after"] == "True True"
    assert out["spans"] == ["tools/call recording"]
