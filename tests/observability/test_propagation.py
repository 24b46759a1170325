"""W3C trace context and baggage in and out of a request's ``_meta``."""

from __future__ import annotations

from typing import Any

from opentelemetry import baggage, trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider

from mcpkit.observability import extract, inject
from mcpkit.observability.propagation import may_carry_context

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_extract_reads_traceparent_tracestate_and_baggage() -> None:
    ctx = extract(
        {
            "traceparent": TRACEPARENT,
            "tracestate": "rojo=00f067aa0ba902b7",
            "baggage": "userId=alice",
            "progressToken": 7,
        },
        context=Context(),
    )
    parent = trace.get_current_span(ctx).get_span_context()
    assert parent.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert parent.span_id == 0x00F067AA0BA902B7
    assert parent.is_remote
    assert parent.trace_state.get("rojo") == "00f067aa0ba902b7"
    assert baggage.get_baggage("userId", ctx) == "alice"


ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}


def test_only_keys_a_header_could_have_are_handed_to_the_propagators() -> None:
    # A header name cannot hold "/" (RFC 9110 tokens): the envelope alone carries nothing.
    assert not may_carry_context(ENVELOPE)
    assert may_carry_context({**ENVELOPE, "traceparent": TRACEPARENT})
    assert may_carry_context({**ENVELOPE, "x-b3-traceid": "0af7651916cd43dd"})  # B3's keys
    assert may_carry_context({1: "not a header name, but no slash either"})
    base = Context()
    assert extract(ENVELOPE, context=base) is base
    ctx = extract({**ENVELOPE, "traceparent": TRACEPARENT}, context=base)
    assert (
        trace.get_current_span(ctx).get_span_context().trace_id
        == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    )


def test_a_traceparent_that_is_not_a_string_is_no_trace_context() -> None:
    ctx = extract({"traceparent": 12345, "baggage": ["userId=alice"]}, context=Context())
    assert not trace.get_current_span(ctx).get_span_context().is_valid
    assert baggage.get_all(ctx) == {}


def test_inject_writes_the_current_span_unprefixed(provider: TracerProvider) -> None:
    meta: dict[str, Any] = {"progressToken": 1}
    with provider.get_tracer("t").start_as_current_span("client") as span:
        inject(meta)
    ids = span.get_span_context()
    assert meta["traceparent"].startswith(f"00-{ids.trace_id:032x}-{ids.span_id:016x}-")
    assert meta["progressToken"] == 1


def test_inject_without_a_span_writes_nothing() -> None:
    meta: dict[str, Any] = {}
    inject(meta, context=Context())
    assert meta == {}


def test_what_inject_writes_extract_reads_back(provider: TracerProvider) -> None:
    meta: dict[str, Any] = {}
    with provider.get_tracer("t").start_as_current_span("client") as span:
        inject(meta, context=baggage.set_baggage("tenant", "acme"))
    ctx = extract(meta, context=Context())
    assert trace.get_current_span(ctx).get_span_context().span_id == span.get_span_context().span_id
    assert baggage.get_baggage("tenant", ctx) == "acme"


def test_baggage_alone_travels_without_a_traceparent() -> None:
    meta: dict[str, Any] = {}
    inject(meta, context=baggage.set_baggage("tenant", "acme", context=Context()))
    assert "traceparent" not in meta
    assert baggage.get_baggage("tenant", extract(meta, context=Context())) == "acme"


def test_without_trace_context_the_current_context_is_kept(provider: TracerProvider) -> None:
    with provider.get_tracer("t").start_as_current_span("outer") as outer:
        ctx = extract({"baggage": "tenant=acme"})
        empty = extract({"progressToken": 1})
    for got in (ctx, empty):
        assert trace.get_current_span(got) is outer
    assert baggage.get_baggage("tenant", ctx) == "acme"
