"""``KEY=VALUE`` tool arguments on the command line, typed by the tool's input schema.

``mcpkit call add a=1 b=2.5 verbose=yes tags=x,y`` sends ``{"a": 1, "b": 2.5,
"verbose": true, "tags": ["x", "y"]}`` when the schema says integer, number,
boolean and array of strings. A value for a string parameter is taken as it is
(``name=007`` stays ``"007"``); JSON is accepted wherever the schema allows
something else (``point={"x": 1}``, ``ids=[1,2]``, ``limit=null``). A key the
schema does not name is refused, naming those it has, when the schema lists its
properties and does not say it takes others (``additionalProperties``): a typo
is caught before the call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .client_args import UsageError

__all__ = ["split_pairs", "typed_arguments"]

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
# JSON's value kinds, as JSON Schema names them.
_KINDS = ("null", "boolean", "integer", "number", "string", "array", "object")


def split_pairs(pairs: Sequence[str]) -> list[tuple[str, str]]:
    """``["a=1", "b=x=y"]`` → ``[("a", "1"), ("b", "x=y")]``; a pair without ``=`` is refused."""
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(
                f"{pair!r} is not KEY=VALUE (tool arguments are KEY=VALUE words, or --args JSON)"
            )
        out.append((key, value))
    return out


def typed_arguments(
    pairs: Sequence[tuple[str, str]], schema: Mapping[str, Any] | None, *, tool: str
) -> dict[str, Any]:
    """The arguments ``pairs`` give, each value converted as ``schema`` types its key."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    extra = schema.get("additionalProperties", False) if isinstance(schema, Mapping) else True
    out: dict[str, Any] = {}
    for key, text in pairs:
        if key not in props and props and extra is False:
            raise UsageError(
                f"tool {tool!r} has no parameter {key!r} (it takes: {', '.join(props)})"
            )
        spec = props.get(key, extra)
        out[key] = _convert(text, spec if isinstance(spec, Mapping) else {}, key)
    return out


def _kinds(spec: Mapping[str, Any]) -> set[str]:
    """The JSON kinds ``spec`` allows (every kind when it does not say)."""
    if "const" in spec:
        return {_kind_of(spec["const"])}
    if isinstance(spec.get("enum"), list):
        return {_kind_of(v) for v in spec["enum"]}
    kind = spec.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if isinstance(options, list):
            return set().union(*(_kinds(o) for o in options if isinstance(o, Mapping)))
    return set(_KINDS)


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "string"


def _convert(text: str, spec: Mapping[str, Any], key: str) -> Any:
    kinds = _kinds(spec)
    if kinds == {"string"}:
        return text
    if "boolean" in kinds and text.lower() in _TRUE | _FALSE:
        return text.lower() in _TRUE
    try:
        value = json.loads(text)
    except ValueError:
        pass
    else:
        kind = _kind_of(value)
        if kind in kinds or (kind == "integer" and "number" in kinds):
            return value
        if kind == "number" and "integer" in kinds and float(value).is_integer():
            return int(value)
    if "array" in kinds and _items_are_strings(spec) and not text.startswith("["):
        return [part.strip() for part in text.split(",")] if text else []
    if "string" in kinds:
        return text
    wanted = " or ".join(sorted(kinds))
    raise UsageError(f"{key}={text}: {key!r} takes {_a(wanted)}")


def _items_are_strings(spec: Mapping[str, Any]) -> bool:
    items = spec.get("items")
    return isinstance(items, Mapping) and _kinds(items) == {"string"}


def _a(kind: str) -> str:
    article = "an" if kind[:1] in "aeiou" else "a"
    return f"{article} {kind}" if " or " not in kind else kind
