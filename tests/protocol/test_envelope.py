"""The 2026-07-28 envelope and header checks, without an event loop."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpkit.protocol.envelope import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    Envelope,
    Refusal,
    is_stateless_request,
    read_envelope,
)
from mcpkit.protocol.http_headers import (
    check_request_headers,
    decode_value,
    http_headers,
    param_headers_of_schema,
)
from mcpkit.protocol.versions import REVISIONS, STATELESS_REVISIONS

V = "2026-07-28"


def meta(**extra: Any) -> dict[str, Any]:
    return {"_meta": {PROTOCOL_VERSION: V, CLIENT_CAPABILITIES: {}, **extra}}


def test_2026_07_28_is_a_stateless_row() -> None:
    row = REVISIONS[V]
    assert row.era == "stateless" and STATELESS_REVISIONS == (V,)
    assert not row.batching and not row.sse_polling and row.resource_not_found_code == -32602


def test_a_complete_envelope_is_read() -> None:
    env = read_envelope(meta(**{LOG_LEVEL: "debug"}), V)
    assert isinstance(env, Envelope)
    assert env.revision.name == V and env.capabilities == {} and env.log_level == "debug"
    assert env.client_info is None


@pytest.mark.parametrize(
    ("params", "header", "code"),
    [
        ({}, None, -32602),
        (None, None, -32602),
        ({"_meta": {CLIENT_CAPABILITIES: {}}}, None, -32602),
        ({"_meta": {PROTOCOL_VERSION: V}}, None, -32602),
        (meta(**{LOG_LEVEL: "loud"}), None, -32602),
        (meta(), "v999", -32022),
        (meta(), "2025-11-25", -32022),  # a handshake revision cannot name a stateless request
        ({"_meta": {PROTOCOL_VERSION: "v9", CLIENT_CAPABILITIES: {}}}, V, -32020),
        ({"_meta": {PROTOCOL_VERSION: "v9", CLIENT_CAPABILITIES: {}}}, None, -32022),
    ],
)
def test_refusals_name_the_code_and_status(params: Any, header: str | None, code: int) -> None:
    refusal = read_envelope(params, header)
    assert isinstance(refusal, Refusal)
    assert refusal.code == code and refusal.status == 400
    if code == -32022:
        assert refusal.error()["data"]["supported"] == [V]


def test_which_requests_are_stateless() -> None:
    assert is_stateless_request({"method": "server/discover"})
    assert is_stateless_request({"method": "tools/list", "params": meta()})
    assert not is_stateless_request({"method": "tools/list", "params": {}})
    assert not is_stateless_request({"method": "initialize"})


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"us-west1", "us-west1"),
        (b"  padded\t", "padded"),  # OWS is not part of the value
        (b"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
        (b"=?base64?SGVsbG8?=", None),  # padding is required
        (b"=?base64?SGVs!!!bG8=?=", None),
        (b"=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no closing marker: literal
        (b"caf\xc3\xa9", None),  # raw non-ASCII must be encoded
        (b"a\x01b", None),
    ],
)
def test_header_values_decode(raw: bytes, value: str | None) -> None:
    assert decode_value(raw) == value


def test_param_headers_come_from_x_mcp_header() -> None:
    schema = {
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "other": {"type": "string"},
        }
    }
    assert param_headers_of_schema(schema) == {("region",): "Region"}
    nested = {
        "properties": {"opts": {"type": "object", "properties": {"zone": {"x-mcp-header": "Zone"}}}}
    }
    assert param_headers_of_schema(nested) == {("opts", "zone"): "Zone"}
    under_array = {"properties": {"xs": {"type": "array", "items": {"x-mcp-header": "X"}}}}
    assert param_headers_of_schema(under_array) == {}
    assert param_headers_of_schema(None) == {}


def test_headers_against_the_body() -> None:
    msg = {
        "method": "tools/call",
        "params": {"name": "t", "arguments": {"region": "eu", "n": None}},
    }
    ok = {b"mcp-method": b"tools/call", b"mcp-name": b"t", b"mcp-param-region": b"eu"}
    params = {("region",): "Region", ("n",): "N"}
    assert check_request_headers(msg, ok, params) is None  # null argument: no header expected
    assert check_request_headers(msg, {**ok, b"mcp-method": b" tools/call "}, params) is None
    assert "Mcp-Method" in (check_request_headers(msg, {b"mcp-name": b"t"}, params) or "")
    assert check_request_headers(msg, {**ok, b"mcp-name": b"T"}, params) is not None
    assert check_request_headers(msg, {**ok, b"mcp-param-region": b"EU"}, params) is not None
    no_param = {k: v for k, v in ok.items() if k != b"mcp-param-region"}
    assert check_request_headers(msg, no_param, params) is not None
    listing = {"method": "tools/list", "params": {}}
    assert check_request_headers(listing, {b"mcp-method": b"tools/list"}, {}) is None


def test_nested_param_headers_are_read_at_their_path() -> None:
    msg = {"method": "tools/call", "params": {"name": "t", "arguments": {"o": {"z": 7}}}}
    base = {b"mcp-method": b"tools/call", b"mcp-name": b"t"}
    params = {("o", "z"): "Zone"}
    assert check_request_headers(msg, {**base, b"mcp-param-zone": b"7"}, params) is None
    assert check_request_headers(msg, base, params) is not None


def test_a_repeated_envelope_is_read_alike() -> None:
    """The last envelope is remembered; what a request may not do stays refused."""
    first = read_envelope(meta(**{LOG_LEVEL: "info"}))
    again = read_envelope(meta(**{LOG_LEVEL: "info"}))
    assert isinstance(first, Envelope) and isinstance(again, Envelope)
    assert again.log_level == "info" and again.revision.name == V
    other = read_envelope(meta(**{LOG_LEVEL: "error"}))
    assert isinstance(other, Envelope) and other.log_level == "error"
    # The same body under a header it contradicts is still refused.
    refused = read_envelope(meta(**{LOG_LEVEL: "error"}), "2025-11-25")
    assert isinstance(refused, Refusal) and refused.code == -32022


def test_changing_a_read_envelope_does_not_leak_into_the_next() -> None:
    params = meta()
    env = read_envelope(params)
    assert isinstance(env, Envelope)
    env.capabilities["sampling"] = {}  # a handler changing what it was given
    fresh = read_envelope(meta())
    assert isinstance(fresh, Envelope) and fresh.capabilities == {}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_members = st.sampled_from([PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL])


@given(st.dictionaries(_members, _json), st.sampled_from([None, V]))
def test_read_envelope_is_total_over_json_values(members: dict[str, Any], header: Any) -> None:
    # A refusal or an envelope, never an exception: the HTTP transports read the
    # envelope before any session exists, where an exception is a 500.
    base: dict[str, Any] = {PROTOCOL_VERSION: V, CLIENT_CAPABILITIES: {}}
    for params in ({"_meta": {**base, **members}}, {"_meta": members}):
        out = read_envelope(params, header)
        assert isinstance(out, Envelope | Refusal)
        if isinstance(out, Refusal):
            assert out.status == 400 and out.code in (-32602, -32020, -32022)


def test_a_wrong_typed_log_level_is_named_not_echoed() -> None:
    for level in ([], {}, 3, ["debug"]):
        out = read_envelope(meta(**{LOG_LEVEL: level}), V)
        assert isinstance(out, Refusal) and out.code == -32602
        assert LOG_LEVEL in out.message and "is not a log level" in out.message


def test_an_envelope_nested_near_the_decoder_limit_is_compared_without_recursion() -> None:
    # orjson decodes up to 1,024 levels; comparing two such envelopes in Python would
    # exhaust the stack. Both requests are still read.
    deep = b"[" * 1000 + b"1" + b"]" * 1000
    raw = b'{"_meta":{"%s":"%s","%s":{},"x":%s}}' % (
        PROTOCOL_VERSION.encode(),
        V.encode(),
        CLIENT_CAPABILITIES.encode(),
        deep,
    )
    for _ in range(2):
        assert isinstance(read_envelope(orjson.loads(raw), V), Envelope)


def test_a_routed_extension_methods_mcp_name_is_checked_only_when_sent() -> None:
    # SEP-2663: Mcp-Name carries the taskId on tasks/*; a mismatch is -32020, none is fine.
    msg = {"method": "tasks/get", "params": {"taskId": "abc"}}
    method = {b"mcp-method": b"tasks/get"}
    assert check_request_headers(msg, method, {}) is None
    assert check_request_headers(msg, {**method, b"mcp-name": b"abc"}, {}) is None
    assert check_request_headers(msg, {**method, b"mcp-name": b"other"}, {}) is not None
    cancel = {"method": "tasks/cancel", "params": {"taskId": "abc", "_meta": {PROTOCOL_VERSION: V}}}
    assert http_headers(cancel, {})["mcp-name"] == "abc"
