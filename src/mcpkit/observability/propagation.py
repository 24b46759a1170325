"""W3C trace context (``traceparent``, ``tracestate``, ``baggage``) in and out of ``params._meta``.

MCP carries trace context in the request's ``params._meta``, with the W3C keys
unprefixed (SEP-414; the OpenTelemetry MCP semantic conventions, "Context
propagation"), on every transport: one HTTP request can carry several MCP
messages, so HTTP headers cannot parent them. Both functions go through the
propagators the application configured (``OTEL_PROPAGATORS``, or
``opentelemetry.propagate.set_global_textmap``; W3C trace context and baggage
by default), so a deployment that also propagates another format gets it too.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from .._extras import require_extra

with require_extra("otel", feature="OpenTelemetry tracing (mcpkit.observability.propagation)"):
    from opentelemetry import propagate
    from opentelemetry.context import Context, get_current
    from opentelemetry.propagators.textmap import Getter

__all__ = ["extract", "inject", "may_carry_context"]


class _MetaGetter(Getter[Mapping[str, Any]]):
    """Reads string values only: ``_meta`` is the client's JSON, and a propagator
    expects text (a number or object under ``traceparent`` is no trace context)."""

    def get(self, carrier: Mapping[str, Any], key: str) -> list[str] | None:
        value = carrier.get(key)
        return [value] if isinstance(value, str) else None

    def keys(self, carrier: Mapping[str, Any]) -> list[str]:
        return [key for key in carrier if isinstance(key, str)]


_GETTER = _MetaGetter()


def may_carry_context(meta: Mapping[Any, Any]) -> bool:
    """Whether a propagator could find anything in ``meta``: False when every key has a
    ``/``, as the 2026-07-28 envelope's ``io.modelcontextprotocol/...`` keys do.

    Propagators are made for HTTP headers, whose names are tokens, which cannot hold a
    ``/`` (RFC 9110, section 5.6.2): such a key is never one of theirs, and skipping them
    saves the propagators' work on every request of that era (~11k instructions).
    """
    for key in meta:
        if type(key) is not str or "/" not in key:
            return True
    return False


def extract(meta: Mapping[str, Any] | None, *, context: Context | None = None) -> Context:
    """The OpenTelemetry context that ``meta`` (a request's ``_meta``) carries.

    Based on ``context`` (the current context when None): without trace
    context in ``meta`` the result is that context unchanged.
    """
    # Passed explicitly: the W3C trace context propagator, finding no traceparent, answers
    # an empty context for None, which would drop the current span and baggage.
    base = get_current() if context is None else context
    if not meta or not may_carry_context(meta):
        return base
    return propagate.extract(meta, context=base, getter=_GETTER)


def inject(meta: MutableMapping[str, Any], *, context: Context | None = None) -> None:
    """Write the trace context of ``context`` (the current one when None) into ``meta``.

    Nothing is written when there is no valid span and no baggage in it.
    """
    propagate.inject(meta, context=context)
