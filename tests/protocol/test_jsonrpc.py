"""JSON-RPC framing: classify, build, and the exact error codes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpkit import errors
from mcpkit.protocol import jsonrpc
from mcpkit.protocol.jsonrpc import Kind, classify
from tests.schema import validate_message

# -- builders ---------------------------------------------------------------------------------


def test_request_builder_omits_absent_params() -> None:
    assert jsonrpc.request(1, "ping") == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert jsonrpc.request("a", "m", {}) == {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "m",
        "params": {},
    }


def test_notification_builder_has_no_id() -> None:
    msg = jsonrpc.notification("notifications/initialized")
    assert msg == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert classify(msg) is Kind.NOTIFICATION


def test_response_and_error_builders() -> None:
    assert jsonrpc.response(3, {"a": 1}) == {"jsonrpc": "2.0", "id": 3, "result": {"a": 1}}
    assert jsonrpc.error_response(3, -32601, "nope") == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32601, "message": "nope"},
    }
    with_data = jsonrpc.error_response(3, -32002, "gone", {"uri": "x://y"})
    assert with_data["error"]["data"] == {"uri": "x://y"}


def test_parse_error_has_code_32700_and_null_id() -> None:
    err = jsonrpc.parse_error("unexpected end")
    assert err["id"] is None
    assert err["error"]["code"] == errors.PARSE_ERROR == -32700
    assert "unexpected end" in err["error"]["message"]
    for revision in ("2024-11-05", "2025-11-25"):
        validate_message(err, revision)


@pytest.mark.parametrize(
    ("msg", "echoed"),
    [
        ({"jsonrpc": "2.0", "id": 5, "method": 3}, 5),
        ({"jsonrpc": "2.0", "id": "x", "method": "m", "params": [1]}, "x"),
        ({"jsonrpc": "1.0", "id": 9, "method": "m"}, 9),
        ({"jsonrpc": "2.0", "id": None, "method": "m"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"}, None),
        ([1, 2], None),
        ("just a string", None),
    ],
)
def test_invalid_request_echoes_only_usable_ids(msg: Any, echoed: Any) -> None:
    err = jsonrpc.invalid_request(msg)
    assert err["error"]["code"] == errors.INVALID_REQUEST == -32600
    assert err["id"] == echoed
    validate_message(err, "2025-11-25")


def test_error_code_constants_match_json_rpc_and_mcp() -> None:
    assert errors.PARSE_ERROR == -32700
    assert errors.INVALID_REQUEST == -32600
    assert errors.METHOD_NOT_FOUND == -32601
    assert errors.INVALID_PARAMS == -32602
    assert errors.INTERNAL_ERROR == -32603
    assert errors.RESOURCE_NOT_FOUND == -32002


# -- classify -------------------------------------------------------------------------------------

VALID = [
    ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, Kind.REQUEST),
    (
        {"jsonrpc": "2.0", "id": "abc", "method": "tools/call", "params": {"name": "x"}},
        Kind.REQUEST,
    ),
    ({"jsonrpc": "2.0", "id": 0, "method": "m", "params": None}, Kind.REQUEST),
    ({"jsonrpc": "2.0", "id": 2.0, "method": "m"}, Kind.REQUEST),  # integral number
    ({"jsonrpc": "2.0", "id": -4, "method": "m"}, Kind.REQUEST),
    ({"jsonrpc": "2.0", "method": "notifications/initialized"}, Kind.NOTIFICATION),
    ({"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}, Kind.NOTIFICATION),
    ({"jsonrpc": "2.0", "id": 1, "result": {}}, Kind.RESPONSE),
    ({"jsonrpc": "2.0", "id": "s", "result": {"x": [1]}}, Kind.RESPONSE),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "m"}}, Kind.ERROR),
    ({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "m"}}, Kind.ERROR),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": 5, "message": "m", "data": [1]}}, Kind.ERROR),
]

INVALID = [
    None,
    1,
    "text",
    [],
    [{"jsonrpc": "2.0", "method": "x"}],
    {},
    {"jsonrpc": "2.0"},
    {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"id": 1, "method": "ping"},  # no jsonrpc member
    {"jsonrpc": 2.0, "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": 5},
    {"jsonrpc": "2.0", "id": 1, "method": None},
    {"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1, 2]},  # MCP params are objects
    {"jsonrpc": "2.0", "id": 1, "method": "m", "params": "x"},
    {"jsonrpc": "2.0", "id": None, "method": "m"},  # MCP: request ids are never null
    {"jsonrpc": "2.0", "id": True, "method": "m"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "m"},
    {"jsonrpc": "2.0", "id": [1], "method": "m"},
    {"jsonrpc": "2.0", "id": {}, "method": "m"},
    {"jsonrpc": "2.0", "result": {}},  # response without id
    {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}},
    {"jsonrpc": "2.0", "id": {}, "result": {}},  # unhashable id
    {"jsonrpc": "2.0", "id": [], "error": {"code": 1, "message": "m"}},
    {"jsonrpc": "2.0", "id": 1, "error": "boom"},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": "1", "message": "m"}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "m"}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": 1}},
    {"jsonrpc": "2.0", "id": 1},
]


@pytest.mark.parametrize(("msg", "kind"), VALID)
def test_classify_valid_shapes(msg: Any, kind: Kind) -> None:
    assert classify(msg) is kind


@pytest.mark.parametrize("msg", INVALID)
def test_classify_rejects_malformed_shapes(msg: Any) -> None:
    assert classify(msg) is Kind.INVALID


def test_valid_id_accepts_strings_and_integers_only() -> None:
    assert jsonrpc.valid_id(0) and jsonrpc.valid_id("") and jsonrpc.valid_id(3.0)
    for bad in (None, True, False, 1.25, [], {}, b"x"):
        assert not jsonrpc.valid_id(bad)


# Integers JSON on the wire can carry here: orjson (and so mcpkit) reads and writes
# signed 64-bit and unsigned 64-bit integers; a larger one never arrives as a message.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)

# Near-misses of real messages find more corner cases than arbitrary JSON.
envelope_like = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | json_values,
        "id": json_values,
        "method": st.sampled_from(["ping", "tools/call", "notifications/cancelled"]) | json_values,
        "params": json_values,
        "result": json_values,
        "error": st.fixed_dictionaries(
            {}, optional={"code": json_values, "message": json_values, "data": json_values}
        )
        | json_values,
    },
)


@settings(max_examples=400, deadline=None)
@given(json_values | envelope_like)
def test_classify_is_total_over_json_values(value: Any) -> None:
    kind = classify(value)
    assert isinstance(kind, Kind)
    # Whatever the kind, building the error answer for it must not raise either.
    jsonrpc.invalid_request(value)


@settings(max_examples=300, deadline=None)
@given(envelope_like)
def test_classified_messages_have_what_their_kind_promises(value: Any) -> None:
    kind = classify(value)
    if kind is Kind.REQUEST:
        assert isinstance(value["method"], str) and jsonrpc.valid_id(value["id"])
        hash(value["id"])
    elif kind is Kind.NOTIFICATION:
        assert isinstance(value["method"], str) and "id" not in value
    elif kind is Kind.RESPONSE:
        assert "result" in value and jsonrpc.valid_id(value["id"])
    elif kind is Kind.ERROR:
        assert isinstance(value["error"]["code"], int) and isinstance(
            value["error"]["message"], str
        )
        hash(value["id"])
    # Every kind except INVALID survives the wire unchanged.
    if kind is not Kind.INVALID:
        assert classify(orjson.loads(orjson.dumps(value))) is kind


@given(st.integers(min_value=-(10**40), max_value=10**40))
def test_any_integer_id_survives_decode_and_encode_exactly(rid: int) -> None:
    # orjson alone reads ids beyond 64 bits as floats and cannot write them.
    data = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % rid
    msg = _decode(data)
    assert type(msg["id"]) is int and msg["id"] == rid
    out = orjson.dumps(jsonrpc.response(msg["id"], {}))
    assert out == b'{"jsonrpc":"2.0","id":%d,"result":{}}' % rid


def test_a_cancellation_names_an_id_beyond_64_bits_exactly() -> None:
    data = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}' % (
        2**64 + 1
    )
    assert _decode(data)["params"]["requestId"] == 2**64 + 1
    batch = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":%d,"method":"ping"}]'
    assert _decode(batch % 2**70)[1]["id"] == 2**70


def _decode(data: bytes) -> Any:
    """What every transport does with the bytes of one message."""
    return jsonrpc.exact_ids(orjson.loads(data), data)


@given(st.integers(min_value=-(10**40), max_value=10**40))
def test_dumps_writes_an_exact_integer_id_of_any_size(rid: int) -> None:
    """A message may keep the exact int (the client's answers do, so traces see it)."""
    answer = {"jsonrpc": "2.0", "id": rid, "result": {}}
    assert jsonrpc.dumps(answer) == b'{"jsonrpc":"2.0","id":%d,"result":{}}' % rid
    assert answer["id"] == rid  # not rewritten in place
    line = jsonrpc.dumps([answer], orjson.OPT_APPEND_NEWLINE)
    assert line == b'[{"jsonrpc":"2.0","id":%d,"result":{}}]\n' % rid
    cancel = jsonrpc.notification("notifications/cancelled", {"requestId": rid})
    assert _decode(jsonrpc.dumps(cancel))["params"]["requestId"] == rid


def test_dumps_still_refuses_what_is_not_json() -> None:
    with pytest.raises(orjson.JSONEncodeError):
        jsonrpc.dumps({"jsonrpc": "2.0", "id": 1, "result": {"x": object()}})


def test_dumps_writes_integers_beyond_64_bits_anywhere_exactly() -> None:
    # A tool may return any integer (JSON numbers have no size bound, RFC 8259 § 6).
    big = 10**30 + 7
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"a": [1, (big, -big)], "b": {"c": big}}}
    out = jsonrpc.dumps(answer)
    assert out == b'{"jsonrpc":"2.0","id":1,"result":{"a":[1,[%d,%d]],"b":{"c":%d}}}' % (
        big,
        -big,
        big,
    )
    assert answer["result"]["b"] == {"c": big}  # not rewritten in place


def test_dumps_still_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        jsonrpc.dumps({"jsonrpc": "2.0", "id": 1, "result": {"x": object()}})
