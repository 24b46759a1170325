"""JSON-RPC 2.0 framing: classify, build, keep ids exact.

Messages stay plain ``dict`` objects on the hot path (ARCHITECTURE.md,
principle 3): no envelope model is built per message. This module never does
I/O and never awaits.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Final

import orjson

from ..errors import INVALID_REQUEST, PARSE_ERROR

__all__ = [
    "Kind",
    "classify",
    "error_response",
    "exact_ids",
    "invalid_request",
    "json_type",
    "notification",
    "parse_error",
    "progress_token",
    "request",
    "response",
    "valid_id",
    "wire_id",
]

JSONRPC: Final = "2.0"


class Kind(Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    ERROR = "error"  # a response carrying an error
    INVALID = "invalid"
    # A JSON array: a batch, taken apart by the session (ServerSession.receive says it;
    # classify, which looks at one message, calls an array INVALID).
    BATCH = "batch"


# orjson reads and writes integers in [-2**63, 2**64 - 1] only: it reads a larger one
# as a float (losing digits) and refuses to write one. JSON-RPC ids have no such bound.
_MIN_INT: Final = -(2**63)
_MAX_INT: Final = 2**64 - 1


def exact_ids(msg: Any, data: bytes | bytearray | memoryview | str) -> Any:
    """``msg`` (just decoded from ``data`` by orjson) with its request ids exact.

    An integer id beyond 64 bits came out of orjson as a float: an answer would carry
    a different id. Such a message (or a cancellation naming such a request) is read
    again with the standard library, which keeps integers exact. The check costs one
    lookup per message; the second read happens only for those ids.
    """
    if type(msg) is dict:
        if not _inexact(msg):
            return msg
    elif type(msg) is list:
        if not any(type(m) is dict and _inexact(m) for m in msg):
            return msg
    else:
        return msg
    import json  # only on this rare path

    try:
        text = data if isinstance(data, str) else bytes(data).decode()
        return json.loads(text)
    except (ValueError, RecursionError):  # too deep or too many digits: keep orjson's
        return msg


def _inexact(msg: dict[str, Any]) -> bool:
    rid = msg.get("id")
    if type(rid) is float:
        return True
    if rid is None and msg.get("method") == "notifications/cancelled":
        params = msg.get("params")
        return type(params) is dict and type(params.get("requestId")) is float
    return False


def wire_id(rid: Any) -> Any:
    """``rid`` as orjson can write it: an integer beyond 64 bits becomes its exact digits."""
    if type(rid) is int and (rid > _MAX_INT or rid < _MIN_INT):
        return orjson.Fragment(str(rid).encode())
    return rid


def dumps(message: Any, option: int | None = None) -> bytes:
    """Serialise one message (no trailing newline unless ``option`` asks for one).

    JSON numbers have no size limit (RFC 8259 § 6), but orjson refuses to write an
    integer beyond 64 bits: an id kept exact by :func:`exact_ids`, or a big number a
    tool returned. Only then is the message walked again and each such integer written
    as its exact digits (:func:`wire_id`). The common case costs nothing more.
    """
    try:
        return orjson.dumps(message, option=option)
    except orjson.JSONEncodeError:
        wire = _exact_ints(message)
        if wire is message:
            raise
        return orjson.dumps(wire, option=option)


def _exact_ints(value: Any) -> Any:
    """``value`` with every integer orjson cannot write as :func:`wire_id`; the same object
    when there is none."""
    kind = type(value)
    if kind is int:
        return wire_id(value)
    if kind is dict:
        items = {k: _exact_ints(v) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    if kind is list or kind is tuple:
        out = [_exact_ints(v) for v in value]
        return value if all(a is b for a, b in zip(out, value, strict=True)) else out
    return value


def valid_id(value: Any) -> bool:
    """Is ``value`` a usable request id? Strings and integers; MCP forbids null ids."""
    kind = type(value)
    if kind is int or kind is str:  # what JSON decoding gives: the common case first
        return True
    return (isinstance(value, str | int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


_JSON_TYPES: Final = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def json_type(value: Any) -> str:
    """``value``'s JSON type, for an error message that must not echo what a peer sent
    (a repr can be megabytes long, and raises ``RecursionError`` ~1,000 levels deep)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def progress_token(meta: Any) -> str | int | None:
    """The ``progressToken`` of a request's ``_meta``, if it is one that can be echoed.

    A ProgressToken is a string or an integer (basic/utilities/progress); anything
    else is ignored, as if absent.
    """
    if not isinstance(meta, dict):
        return None
    token = meta.get("progressToken")
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def classify(msg: Any) -> Kind:
    """What kind of JSON-RPC message ``msg`` is (``INVALID`` when malformed).

    Total over every JSON value: it never raises. A request or notification
    must have a string ``method`` and object ``params`` (MCP never sends
    by-position params); a request id is a string or an integer (never null,
    2025-11-25 basic § requests); any result is accepted here (the
    session checks its shape against what it asked for); an error has an
    integer ``code`` and a string ``message``.
    """
    if type(msg) is not dict or msg.get("jsonrpc") != JSONRPC:
        return Kind.INVALID
    method = msg.get("method")
    if method is not None:
        if type(method) is not str:
            return Kind.INVALID
        params = msg.get("params")
        if params is not None and type(params) is not dict:
            # MCP params are always objects (by-name).
            return Kind.INVALID
        if "id" not in msg:
            return Kind.NOTIFICATION
        return Kind.REQUEST if valid_id(msg["id"]) else Kind.INVALID
    if "id" not in msg:
        return Kind.INVALID
    rid = msg["id"]
    if "result" in msg:
        if "error" in msg or not valid_id(rid):
            return Kind.INVALID
        return Kind.RESPONSE
    err = msg.get("error")
    # An error may carry a null id: the peer could not read the id of our request.
    if (
        type(err) is dict
        and type(err.get("code")) is int
        and type(err.get("message")) is str
        and (rid is None or valid_id(rid))
    ):
        return Kind.ERROR
    return Kind.INVALID


def request(id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": JSONRPC, "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": JSONRPC, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def response(id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": wire_id(id), "result": result}


def error_response(id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": JSONRPC, "id": wire_id(id), "error": err}


def parse_error(detail: str) -> dict[str, Any]:
    return error_response(None, PARSE_ERROR, f"Parse error: {detail}")


def invalid_request(msg: Any, detail: str = "not a valid JSON-RPC 2.0 message") -> dict[str, Any]:
    """The error answer to an invalid message, echoing its id when it has a usable one."""
    mid = msg.get("id") if type(msg) is dict else None
    return error_response(
        mid if valid_id(mid) else None, INVALID_REQUEST, f"Invalid request: {detail}"
    )
