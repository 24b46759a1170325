"""Validate JSON-RPC messages against the official MCP JSON schemas, per revision.

The schemas are the published ones, carried in ``tests/schemas/<revision>/schema.json``
(source and licence in ``tests/schemas/README.md``). A message is mapped to its
definition:

* requests and notifications by ``method`` (``tools/call`` → ``CallToolRequest``),
  found by scanning the definitions for a ``method`` constant, so no table has
  to be kept in step with the spec;
* results by the method of the request they answer (``CallToolRequest`` →
  ``CallToolResult``; no ``<X>Result`` definition means ``EmptyResult``), and,
  where the revision defines one, the whole ``<X>ResultResponse`` envelope;
* from 2026-07-28 on, a result with ``resultType: "input_required"`` by
  ``InputRequiredResult`` (the multi round-trip interim result);
* error responses by the error definition, which is named ``JSONRPCError`` up
  to 2025-06-18 and ``JSONRPCErrorResponse`` from 2025-11-25 on.

Strictness beyond the published schema: the generated schemas leave most
objects open (no ``additionalProperties``), so on their own they would let
newer fields leak to clients of older revisions. Every object in a
definition (the definition itself and the inline objects under it, matched by
definition name and property path, following ``$ref``) is therefore closed
against the properties that *other* revisions declare there and this one does
not (for example ``outputSchema`` on a 2024-11-05 ``Tool``, ``completions`` in
2024-11-05 ``ServerCapabilities``, ``message`` in 2024-11-05 progress params). Properties no revision knows (extensions such as a
prompt's ``version``) stay allowed, as the schema allows them.

Two documented relaxations: ``ServerCapabilities.extensions`` (the map of
the extensions a server was given, SEP-2133) and ``ClientCapabilities.extensions``
(the extensions a client supports) are allowed on every revision, not only on
2026-07-28, which first names them; and an error response whose request id could not be
read carries ``"id": null`` (JSON-RPC 2.0 §5); its envelope is checked without
the id, since the MCP schemas only describe the id of readable requests.

Usage::

    validate_message(msg, "2025-11-25", request_method="tools/call")
    assert_valid_traffic(client)  # an InMemoryClient, after use
"""

from __future__ import annotations

import copy
import functools
import json
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft7Validator, Draft202012Validator

__all__ = [
    "SchemaViolation",
    "assert_valid_conversation",
    "assert_valid_traffic",
    "definition_for",
    "revisions",
    "schema_dir",
    "unchecked_client_traffic",
    "validate_message",
]


class SchemaViolation(AssertionError):
    """A message does not match its revision's schema."""


def schema_dir() -> Path:
    """``tests/schemas``, one ``<revision>/schema.json`` per protocol revision."""
    path = Path(__file__).resolve().parent / "schemas"
    if not (path / "2025-11-25" / "schema.json").is_file():
        raise RuntimeError(f"MCP JSON schemas not found at {path} (tests/schemas/README.md)")
    return path


def revisions() -> list[str]:
    return sorted(p.name for p in schema_dir().iterdir() if (p / "schema.json").is_file())


@functools.cache
def _raw(revision: str) -> dict[str, Any]:
    path = schema_dir() / revision / "schema.json"
    if not path.is_file():
        raise RuntimeError(f"no schema for revision {revision!r} at {path}")
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _defs_key(schema: dict[str, Any]) -> str:
    return "$defs" if "$defs" in schema else "definitions"


def _resolve(raw: dict[str, Any], node: Any) -> Any:
    defs = raw[_defs_key(raw)]
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
    return node


def _properties_at(revision: str, definition: str, path: tuple[str, ...]) -> frozenset[str]:
    """The properties the object at ``path`` inside ``definition`` declares in ``revision``.

    ``$ref`` is followed, so an inline ``params`` object of one revision lines up
    with the named ``...Params`` definition another revision moved it to.
    """
    raw = _raw(revision)
    node = _resolve(raw, raw[_defs_key(raw)].get(definition))
    for key in path:
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict) or key not in props:
            return frozenset()
        node = _resolve(raw, props[key])
    props = node.get("properties") if isinstance(node, dict) else None
    return frozenset(props) if isinstance(props, dict) else frozenset()


def _close(revision: str, definition: str, node: Any, path: tuple[str, ...]) -> None:
    """Forbid, on ``node`` and the inline objects under it, other revisions' properties."""
    if not isinstance(node, dict) or "$ref" in node:
        return  # named definitions are closed under their own name
    props = node.get("properties")
    if not isinstance(props, dict):
        return
    if "additionalProperties" not in node:
        foreign: set[str] = set()
        for rev in revisions():
            if rev != revision:
                foreign |= _properties_at(rev, definition, path) - set(props)
        if not path:  # older schemas leave the JSON-RPC envelope out of method definitions
            foreign -= {"jsonrpc", "id"}
        if path == ("params",):  # every revision's base Request/Notification params has _meta
            foreign.discard("_meta")
        if definition in ("ServerCapabilities", "ClientCapabilities") and not path:
            # A server given extensions advertises them here on every revision (SEP-2133;
            # mcpkit.server.extension), and a client declares the extensions it supports
            # (MCP Apps' mimeTypes, ext-apps getUiCapability): 2026-07-28 is the first
            # schema to name the field, the older ones leave both objects open to it.
            foreign.discard("extensions")
        if foreign:
            node["propertyNames"] = {"not": {"enum": sorted(foreign)}}
    for key, child in props.items():
        _close(revision, definition, child, (*path, key))


@functools.cache
def _strict(revision: str) -> dict[str, Any]:
    """The revision's schema with other revisions' properties forbidden (see module doc)."""
    schema = copy.deepcopy(_raw(revision))
    for name, d in schema[_defs_key(schema)].items():
        _close(revision, name, d, ())
    return schema


@functools.cache
def _method_index(revision: str) -> tuple[dict[str, str], dict[str, str]]:
    """(request method → definition, notification method → definition)."""
    raw = _raw(revision)
    requests: dict[str, str] = {}
    notifications: dict[str, str] = {}
    for name, d in raw[_defs_key(raw)].items():
        if not isinstance(d, dict):
            continue
        const = d.get("properties", {}).get("method", {}).get("const")
        if not isinstance(const, str):
            continue
        if name.endswith("Request"):
            requests.setdefault(const, name)
        elif name.endswith("Notification") and name not in (
            "ClientNotification",
            "ServerNotification",
        ):
            notifications[const] = name
        elif name.endswith("Notification"):
            notifications.setdefault(const, name)
    return requests, notifications


@functools.cache
def _validator(revision: str, definition: str) -> jsonschema.protocols.Validator:
    schema = _strict(revision)
    defs = _defs_key(schema)
    if definition not in schema[defs]:
        raise KeyError(f"revision {revision} has no definition {definition!r}")
    cls = Draft202012Validator if defs == "$defs" else Draft7Validator
    wrapper = {
        "$schema": schema["$schema"],
        defs: schema[defs],
        "$ref": f"#/{defs}/{definition}",
    }
    return cls(wrapper)  # type: ignore[no-any-return]


def _error_definition(revision: str) -> str:
    raw = _raw(revision)
    defs = raw[_defs_key(raw)]
    return "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in defs else "JSONRPCError"


def _result_definitions(revision: str, request_method: str | None) -> tuple[str, str | None]:
    """(definition of the ``result`` member, definition of the whole response or None)."""
    raw = _raw(revision)
    defs = raw[_defs_key(raw)]
    if request_method is None:
        return "Result", None
    requests, _ = _method_index(revision)
    req_def = requests.get(request_method)
    if req_def is None:
        return "Result", None
    stem = req_def[: -len("Request")]
    result = f"{stem}Result" if f"{stem}Result" in defs else "EmptyResult"
    envelope = f"{stem}ResultResponse" if f"{stem}ResultResponse" in defs else None
    return result, envelope


def definition_for(msg: Any, revision: str, *, request_method: str | None = None) -> list[str]:
    """The definitions ``msg`` is checked against (the envelope first)."""
    if not isinstance(msg, dict):
        raise SchemaViolation(f"not a JSON object: {msg!r}")
    requests, notifications = _method_index(revision)
    method = msg.get("method")
    if method is not None and "id" in msg:
        specific = requests.get(method) if isinstance(method, str) else None
        if specific is None:
            raise SchemaViolation(f"revision {revision} has no request method {method!r}")
        return ["JSONRPCRequest", specific]
    if method is not None:
        specific = notifications.get(method) if isinstance(method, str) else None
        if specific is None:
            raise SchemaViolation(f"revision {revision} has no notification method {method!r}")
        return ["JSONRPCNotification", specific]
    if "error" in msg:
        return [_error_definition(revision)]
    if "result" in msg:
        result, envelope = _result_definitions(revision, request_method)
        body = msg["result"]
        if (
            isinstance(body, dict)
            and body.get("resultType") == "input_required"
            and _has(revision, "InputRequiredResult")
        ):
            # 2026-07-28 (SEP-2322): an interim result of tools/call, prompts/get or
            # resources/read; its <X>ResultResponse envelope allows either shape.
            result = "InputRequiredResult"
        out = [
            "JSONRPCResultResponse"
            if _has(revision, "JSONRPCResultResponse")
            else "JSONRPCResponse"
        ]
        if envelope is not None:
            out.append(envelope)
        out.append(f"result:{result}")
        return out
    raise SchemaViolation(f"neither a request, a notification nor a response: {msg!r}")


def _has(revision: str, definition: str) -> bool:
    raw = _raw(revision)
    return definition in raw[_defs_key(raw)]


def _check(instance: Any, revision: str, definition: str, whole: Any) -> None:
    errors = sorted(_validator(revision, definition).iter_errors(instance), key=lambda e: e.path)
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        where = "/".join(str(p) for p in best.absolute_path) or "(root)"
        raise SchemaViolation(
            f"{revision} {definition}: {best.message} at {where}\n"
            f"message: {json.dumps(whole, default=repr)[:2000]}"
        )


def validate_message(msg: Any, revision: str, *, request_method: str | None = None) -> None:
    """Raise :class:`SchemaViolation` unless ``msg`` is valid in ``revision``.

    ``request_method`` names the method of the request a result answers; without
    it a result is only checked as a generic ``Result``.
    """
    targets = definition_for(msg, revision, request_method=request_method)
    if "error" in msg and "method" not in msg and msg.get("id", 0) is None:
        # JSON-RPC 2.0 §5: an unreadable request id is answered with id null.
        envelope = {k: v for k, v in msg.items() if k != "id"}
        if set(envelope) - {"jsonrpc", "error"}:
            raise SchemaViolation(f"unexpected members in error response: {msg!r}")
        if _error_definition(revision) == "JSONRPCError":  # id required there: check the rest
            if envelope.get("jsonrpc") != "2.0":
                raise SchemaViolation(f"jsonrpc must be '2.0': {msg!r}")
            _check_error_object(envelope.get("error"), msg)
            return
        msg = envelope
    for target in targets:
        if target.startswith("result:"):
            _check(msg["result"], revision, target[len("result:") :], msg)
        else:
            _check(msg, revision, target, msg)


def _check_error_object(error: Any, whole: Any) -> None:
    if not (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
        and set(error) <= {"code", "message", "data"}
    ):
        raise SchemaViolation(f"malformed error object: {whole!r}")


# -- whole conversations --------------------------------------------------------------------------

_unchecked_clients: weakref.WeakSet[Any] = weakref.WeakSet()


def unchecked_client_traffic(client: Any) -> Any:
    """Skip checking what ``client`` sends (tests that answer the server with bad data)."""
    _unchecked_clients.add(client)
    return client


def _traffic(client: Any) -> Iterator[tuple[str, Any, bool]]:
    """(direction, message, checked) in the order they crossed the wire."""
    traffic = getattr(client, "traffic", None)
    if traffic is not None:
        yield from traffic
        return
    for m in client.sent:  # older clients without an ordered log
        yield "sent", m, True
    for m in client.received:
        yield "received", m, True


def negotiated_revision(client: Any) -> str:
    init = getattr(client, "initialize_result", None)
    if isinstance(init, dict) and isinstance(init.get("protocolVersion"), str):
        return init["protocolVersion"]  # type: ignore[no-any-return]
    return client.session.revision.name  # type: ignore[no-any-return]


def assert_valid_traffic(client: Any, revision: str | None = None) -> int:
    """Validate every message ``client`` sent and received; returns how many were checked.

    ``client`` is an :class:`mcpkit.testing.InMemoryClient` (or anything with a
    ``traffic`` log, or ``sent``/``received`` lists). Messages the client sent
    through ``send_raw`` are exempt (tests use it to send malformed input on
    purpose), as is everything a client marked with
    :func:`unchecked_client_traffic` sends.
    """
    rev = revision or negotiated_revision(client)
    skip_sent = client in _unchecked_clients
    return assert_valid_conversation(
        ((d, m, c and not (skip_sent and d == "sent")) for d, m, c in _traffic(client)), rev
    )


def assert_valid_conversation(traffic: Iterable[tuple[str, Any, bool]], revision: str) -> int:
    """Validate a conversation: ``(direction, message, checked)`` triples in wire order.

    ``direction`` is ``"sent"`` (client to server) or ``"received"``; a message
    may be a list (a batch). Responses are paired with the request they answer
    by id: a response in one direction answers the latest request with that id
    that went the other way. Unchecked messages still take part in pairing.
    Transport tests can build the triples from what they put on and took off
    the wire. Returns how many messages were checked.
    """
    outstanding: dict[str, dict[Any, str]] = {"sent": {}, "received": {}}
    checked = 0
    problems: list[str] = []
    for direction, msg, check in traffic:
        for item in msg if isinstance(msg, list) else [msg]:
            method_of_request = None
            if isinstance(item, dict):
                if isinstance(item.get("method"), str) and "id" in item:
                    _hashable(item["id"], outstanding[direction], item["method"])
                elif "method" not in item and ("result" in item or "error" in item):
                    other = "received" if direction == "sent" else "sent"
                    method_of_request = _pop(outstanding[other], item.get("id"))
            if not check:
                continue
            try:
                validate_message(item, revision, request_method=method_of_request)
            except SchemaViolation as exc:
                problems.append(f"[{direction}] {exc}")
            checked += 1
    if problems:
        raise SchemaViolation(
            f"{len(problems)} message(s) invalid in {revision}:\n" + "\n".join(problems)
        )
    return checked


def _hashable(key: Any, table: dict[Any, str], method: str) -> None:
    try:
        table[key] = method
    except TypeError:
        pass


def _pop(table: dict[Any, str], key: Any) -> str | None:
    try:
        return table.pop(key, None)
    except TypeError:
        return None


def validate_all(messages: Iterable[Any], revision: str) -> None:
    """Validate standalone messages (no pairing: results are checked as generic results)."""
    for m in messages:
        validate_message(m, revision)
