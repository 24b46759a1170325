"""``KEY=VALUE`` tool arguments, typed by the tool's input schema."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.cli.arguments import split_pairs, typed_arguments
from mcpkit.cli.client_args import UsageError

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "ok": {"type": "boolean"},
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "point": {"type": "object"},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "size": {"enum": ["small", "large"]},
        "any": {},
    },
    "additionalProperties": False,
}


def typed(*pairs: str) -> dict[str, Any]:
    return typed_arguments(split_pairs(pairs), SCHEMA, tool="t")


def test_each_value_takes_the_type_of_its_parameter() -> None:
    assert typed(
        "n=3",
        "x=2.5",
        "ok=yes",
        "name=007",
        "tags=a, b",
        "ids=[1,2]",
        'point={"x": 1}',
        "limit=null",
        "size=large",
        "any=[1]",
    ) == {
        "n": 3,
        "x": 2.5,
        "ok": True,
        "name": "007",
        "tags": ["a", "b"],
        "ids": [1, 2],
        "point": {"x": 1},
        "limit": None,
        "size": "large",
        "any": [1],
    }


def test_lenient_forms() -> None:
    assert typed("n=4.0", "x=1", "ok=False", "limit=7", "any=plain text", "name=a=b") == {
        "n": 4,
        "x": 1,
        "ok": False,
        "limit": 7,
        "any": "plain text",
        "name": "a=b",
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("n=three", "n=three: 'n' takes an integer"),
        ("x=2.5.1", "x=2.5.1: 'x' takes a number"),
        ("ok=maybe", "ok=maybe: 'ok' takes a boolean"),
        ("limit=lots", "limit=lots: 'limit' takes integer or null"),
        ("point=[1]", "point=[1]: 'point' takes an object"),
        (
            "nam=x",
            "tool 't' has no parameter 'nam' (it takes: n, x, ok, name, tags, ids, point, "
            "limit, size, any)",
        ),
        (
            "novalue",
            "'novalue' is not KEY=VALUE (tool arguments are KEY=VALUE words, or --args JSON)",
        ),
    ],
)
def test_a_value_that_does_not_fit_is_refused_naming_the_parameter(pair: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        typed(pair)
    assert str(caught.value) == message


def test_a_schema_open_to_more_keys_takes_them_as_given() -> None:
    schema = {"properties": {"a": {"type": "integer"}}, "additionalProperties": True}
    assert typed_arguments([("b", "2"), ("a", "1")], schema, tool="t") == {"b": 2, "a": 1}
    typed_extra = {"properties": {}, "additionalProperties": {"type": "string"}}
    assert typed_arguments([("b", "2")], typed_extra, tool="t") == {"b": "2"}
