"""A server traced with OpenTelemetry: one span per request, tool code's spans under it.

Needs the ``otel`` extra and the OpenTelemetry SDK::

    pip install 'mcpkit[otel]' opentelemetry-sdk
    mcpkit run examples/traced_server.py --transport http

Every request then prints its span to stderr (stdout is the stdio transport's):
``tools/call lookup`` with ``mcp.method.name``, ``gen_ai.tool.name``,
``mcp.session.id``, ``mcp.protocol.version``, ``jsonrpc.request.id``, and the
tool's own ``database query`` span as its child. A client that sends
``traceparent`` in ``params._meta`` (``Client(extensions=[otel_extension()])``
does) sees the server span in its own trace. See docs/operations.md, "Tracing".

The provider is passed to the middleware here so the example stays
self-contained; an application usually sets it once with
``trace.set_tracer_provider(provider)`` and calls ``otel_middleware()`` bare.
"""

from __future__ import annotations

import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from mcpkit import MCPServer, ToolError
from mcpkit.observability import otel_middleware

provider = TracerProvider(resource=Resource.create({"service.name": "traced-example"}))
# In production: a BatchSpanProcessor with the OTLP exporter (docs/operations.md).
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
tracer = provider.get_tracer("traced-example")

server = MCPServer(
    name="traced", version="1.0.0", middleware=[otel_middleware(tracer_provider=provider)]
)

CITIES = {"paris": 2_100_000, "lyon": 520_000}


@server.tool
async def lookup(city: str) -> int:
    """The population of a city."""
    with tracer.start_as_current_span("database query") as span:
        span.set_attribute("db.query.text", "SELECT population FROM cities WHERE name = ?")
        population = CITIES.get(city.lower())
    if population is None:
        raise ToolError(f"unknown city {city!r}")  # the span gets error.type tool_error
    return population
