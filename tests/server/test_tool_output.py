"""Primitive and list returns: ``structuredContent {"result": ...}`` and its output schema."""

from __future__ import annotations

import enum
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel

from mcpkit import Image, MCPServer
from mcpkit.testing import connect


class Point(BaseModel):
    x: int
    y: int


class Colour(enum.Enum):
    RED = "red"


def wrapped(inner: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"result": inner}, "required": ["result"]}


async def listed_and_called(
    fn: Any, arguments: dict[str, Any] | None = None, **options: Any
) -> Any:
    server = MCPServer("out")
    server.tool(**options)(fn)
    async with connect(server) as client:
        (tool,) = await client.list_tools()
        result = await client.call_tool(tool["name"], arguments or {})
    return tool.get("outputSchema"), result


@pytest.mark.parametrize(
    ("value", "annotation", "inner"),
    [
        (3, int, {"type": "integer"}),
        (2.5, float, {"type": "number"}),
        (True, bool, {"type": "boolean"}),
        ([1, 2], list[int], {"type": "array", "items": {"type": "integer"}}),
        (None, int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        ("b", Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    ],
)
async def test_a_primitive_or_list_return_is_wrapped_as_result(
    value: Any, annotation: Any, inner: dict[str, Any]
) -> None:
    def tool() -> Any:
        return value

    tool.__annotations__["return"] = annotation
    schema, result = await listed_and_called(tool)
    assert schema == wrapped(inner)
    assert result["structuredContent"] == {"result": value}
    jsonschema.validate(result["structuredContent"], schema)
    assert result["content"] or value is None  # the text blocks a text-only client reads


async def test_the_text_block_of_a_wrapped_value_is_what_it_was_unwrapped() -> None:
    def count() -> int:
        return 7

    def items() -> list[str]:
        return ["a", "b"]

    _, result = await listed_and_called(count)
    assert result["content"] == [{"type": "text", "text": "7"}]
    _, result = await listed_and_called(items)
    assert result["content"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]


async def test_models_in_a_list_keep_their_definitions_at_the_root() -> None:
    def points() -> list[Point]:
        return [Point(x=1, y=2)]

    schema, result = await listed_and_called(points)
    assert schema["properties"]["result"]["items"] == {"$ref": "#/$defs/Point"}
    assert "Point" in schema["$defs"]
    assert result["structuredContent"] == {"result": [{"x": 1, "y": 2}]}
    jsonschema.validate(result["structuredContent"], schema)


async def test_an_enum_return_is_wrapped_as_its_value() -> None:
    def colour() -> Colour:
        return Colour.RED

    schema, result = await listed_and_called(colour)
    assert result["structuredContent"] == {"result": "red"}
    jsonschema.validate(result["structuredContent"], schema)


async def test_a_str_return_is_plain_text_unless_asked() -> None:
    def echo(text: str) -> str:
        return text

    schema, result = await listed_and_called(echo, {"text": "hi"})
    assert schema is None and "structuredContent" not in result
    schema, result = await listed_and_called(echo, {"text": "hi"}, structured_output=True)
    assert schema == wrapped({"type": "string"})
    assert result == {
        "content": [{"type": "text", "text": "hi"}],
        "structuredContent": {"result": "hi"},
    }


async def test_structured_output_false_keeps_content_only() -> None:
    def count() -> int:
        return 7

    schema, result = await listed_and_called(count, structured_output=False)
    assert schema is None
    assert result == {"content": [{"type": "text", "text": "7"}]}


async def test_object_returns_are_not_wrapped() -> None:
    def point() -> Point:
        return Point(x=1, y=2)

    schema, result = await listed_and_called(point)
    assert "result" not in schema["properties"]
    assert result["structuredContent"] == {"x": 1, "y": 2}


async def test_content_lists_and_untyped_returns_are_not_wrapped() -> None:
    def pictures() -> list[Image]:
        return [Image(data=b"\x89PNG", mime_type="image/png")]

    def anything():  # type: ignore[no-untyped-def]
        return [1, 2]

    def bare() -> list:  # type: ignore[type-arg]
        return [{"type": "text", "text": "block"}]

    for fn in (pictures, anything, bare):
        schema, result = await listed_and_called(fn)
        assert schema is None and "structuredContent" not in result, fn.__name__


async def test_a_value_that_breaks_the_declared_type_is_a_tool_error() -> None:
    def numbers() -> list[int]:
        return ["not a number"]  # type: ignore[list-item]

    _, result = await listed_and_called(numbers)
    assert result["isError"] is True
    assert "does not match its output schema" in result["content"][0]["text"]


async def test_a_primitive_of_a_compatible_type_is_converted() -> None:
    def ratio() -> float:
        return 2  # an int where a float is declared

    _, result = await listed_and_called(ratio)
    assert result["structuredContent"] == {"result": 2.0}
