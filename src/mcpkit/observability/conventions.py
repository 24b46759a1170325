"""The OpenTelemetry MCP semantic conventions as data: span names, attributes, the four histograms.

Shared by the server middleware (:mod:`.otel`) and the observers of the client
and of server→client requests (:mod:`.exchanges`), so that both ends name and
describe an exchange the same way (OpenTelemetry GenAI semantic conventions,
"MCP" page: spans and metrics).
"""

from __future__ import annotations

import time
import weakref
from typing import Any, Final

from .._extras import require_extra

with require_extra("otel", feature="OpenTelemetry tracing (mcpkit.observability.conventions)"):
    from opentelemetry import metrics
    from opentelemetry.metrics import Histogram, MeterProvider

from .._version import version
from ..errors import MCPError, PeerTimeout

__all__ = ["BUCKETS", "INSTRUMENTATION", "Meters", "describe", "error_type", "metric_attributes"]

INSTRUMENTATION: Final = "mcpkit"

#: The conventions' bucket advice for all four MCP duration histograms, in seconds.
BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

# The methods whose params name a low-cardinality target, and the attribute it goes in.
_TARGETS: Final[dict[str, tuple[str, str]]] = {
    "tools/call": ("name", "gen_ai.tool.name"),
    "prompts/get": ("name", "gen_ai.prompt.name"),
}
# The methods that carry a resource URI (the conventions' note on mcp.resource.uri).
_RESOURCE_METHODS: Final = frozenset(
    {
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/resources/updated",
    }
)
# What a session's duration is described by (the session histograms' attributes).
_SESSION_KEYS: Final = frozenset(
    {
        "mcp.protocol.version",
        "network.transport",
        "network.protocol.name",
        "server.address",
        "server.port",
    }
)
# Span attributes that the metrics leave out: one value per request or per session
# (the histograms' attribute lists do not have them; mcp.resource.uri is opt-in there).
_NOT_IN_METRICS: Final = frozenset({"jsonrpc.request.id", "mcp.session.id", "mcp.resource.uri"})


def describe(
    method: str, params: dict[str, Any], *, resource_uri_in_name: bool = False
) -> tuple[str, dict[str, str]]:
    """The span name ``{mcp.method.name} {target}`` and the attributes ``params`` give."""
    attributes: dict[str, str] = {"mcp.method.name": method}
    name = method
    target = _TARGETS.get(method)
    if target is not None:
        value = params.get(target[0])
        if isinstance(value, str):
            attributes[target[1]] = value
            name = f"{method} {value}"
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    elif method in _RESOURCE_METHODS:
        uri = params.get("uri")
        if isinstance(uri, str):
            attributes["mcp.resource.uri"] = uri
            if resource_uri_in_name:
                name = f"{method} {uri}"
    return name, attributes


def metric_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes without those the duration histograms do not take."""
    return {k: v for k, v in attributes.items() if k not in _NOT_IN_METRICS}


def error_type(error: BaseException) -> tuple[str, str | None]:
    """``error.type`` for an exchange that ended with ``error``, and its JSON-RPC code."""
    if isinstance(error, MCPError) and error.code is not None:
        code = str(error.code)
        return code, code
    if isinstance(error, PeerTimeout):
        return "timeout", None
    if isinstance(error, BaseException) and type(error).__name__ == "CancelledError":
        return "cancelled", None
    return type(error).__qualname__, None


class Meters:
    """The four MCP histograms, from one meter provider (the global one by default:
    its proxy forwards to the provider the application installs later)."""

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter(INSTRUMENTATION, version())

        def histogram(name: str, description: str) -> Histogram:
            return meter.create_histogram(
                name, unit="s", description=description, explicit_bucket_boundaries_advisory=BUCKETS
            )

        self.server_operation = histogram(
            "mcp.server.operation.duration",
            "MCP request or notification duration as observed on the receiver.",
        )
        self.client_operation = histogram(
            "mcp.client.operation.duration",
            "MCP request or notification duration as observed on the sender.",
        )
        self.server_session = histogram(
            "mcp.server.session.duration", "The duration of the MCP session on the MCP server."
        )
        self.client_session = histogram(
            "mcp.client.session.duration", "The duration of the MCP session on the MCP client."
        )
        # session -> (when it began, its attributes); weak: a session no one holds is gone.
        self.sessions: weakref.WeakKeyDictionary[Any, tuple[float, dict[str, Any]]] = (
            weakref.WeakKeyDictionary()
        )

    def session_began(self, session: Any, attributes: dict[str, Any]) -> None:
        described = {k: v for k, v in attributes.items() if k in _SESSION_KEYS}
        self.sessions.setdefault(session, (time.perf_counter(), described))

    def session_ended(self, session: Any, histogram: Histogram) -> None:
        began = self.sessions.pop(session, None)
        if began is not None:
            histogram.record(time.perf_counter() - began[0], began[1])
