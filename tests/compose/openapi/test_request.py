"""Parameters serialized in their styles: the examples of OpenAPI 3.1 § 4.8.12.4.1."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.compose.openapi.parse import Parameter
from mcpkit.compose.openapi.request import serialize

COLOR = ["blue", "black", "brown"]
RGB = {"R": 100, "G": 200, "B": 150}


def _param(location: str, style: str, explode: bool, **kw: Any) -> Parameter:
    return Parameter(
        name="color",
        location=location,  # type: ignore[arg-type]
        required=True,
        style=style,
        explode=explode,
        schema={},
        **kw,
    )


@pytest.mark.parametrize(
    ("style", "explode", "value", "expected"),
    [
        ("simple", False, "blue", "blue"),
        ("simple", False, COLOR, "blue,black,brown"),
        ("simple", False, RGB, "R,100,G,200,B,150"),
        ("simple", True, RGB, "R=100,G=200,B=150"),
        ("label", False, "blue", ".blue"),
        ("label", False, COLOR, ".blue,black,brown"),
        ("label", True, COLOR, ".blue.black.brown"),
        ("label", False, RGB, ".R,100,G,200,B,150"),
        ("label", True, RGB, ".R=100.G=200.B=150"),
        ("matrix", False, "blue", ";color=blue"),
        ("matrix", False, COLOR, ";color=blue,black,brown"),
        ("matrix", True, COLOR, ";color=blue;color=black;color=brown"),
        ("matrix", False, RGB, ";color=R,100,G,200,B,150"),
        ("matrix", True, RGB, ";R=100;G=200;B=150"),
    ],
)
def test_path_styles(style: str, explode: bool, value: Any, expected: str) -> None:
    request = serialize("/x/{color}", [(_param("path", style, explode), value)])
    assert request.path == "/x/" + expected


@pytest.mark.parametrize(
    ("style", "explode", "value", "expected"),
    [
        ("form", True, "blue", [("color", "blue")]),
        ("form", True, COLOR, [("color", "blue"), ("color", "black"), ("color", "brown")]),
        ("form", False, COLOR, [("color", "blue,black,brown")]),
        ("form", True, RGB, [("R", "100"), ("G", "200"), ("B", "150")]),
        ("form", False, RGB, [("color", "R,100,G,200,B,150")]),
        ("spaceDelimited", False, COLOR, [("color", "blue black brown")]),
        ("pipeDelimited", False, COLOR, [("color", "blue|black|brown")]),
        (
            "deepObject",
            True,
            RGB,
            [("color[R]", "100"), ("color[G]", "200"), ("color[B]", "150")],
        ),
        ("form", True, True, [("color", "true")]),
        ("form", True, 1.5, [("color", "1.5")]),
    ],
)
def test_query_styles(style: str, explode: bool, value: Any, expected: list[Any]) -> None:
    assert serialize("/", [(_param("query", style, explode), value)]).query == expected


def test_header_and_cookie_styles() -> None:
    request = serialize(
        "/",
        [
            (_param("header", "simple", False), COLOR),
            (Parameter("X-Obj", "header", False, "simple", True, {}), RGB),
            (Parameter("id", "cookie", False, "form", True, {}), 5),
            (Parameter("list", "cookie", False, "form", False, {}), COLOR),
        ],
    )
    assert request.headers == {"color": "blue,black,brown", "X-Obj": "R=100,G=200,B=150"}
    assert request.cookies == [("id", "5"), ("list", "blue,black,brown")]


def test_path_values_are_percent_encoded_unless_reserved_characters_are_allowed() -> None:
    plain = serialize("/f/{color}", [(_param("path", "simple", False), "a/b c?")])
    assert plain.path == "/f/a%2Fb%20c%3F"
    reserved = serialize(
        "/f/{color}", [(_param("path", "simple", False, allow_reserved=True), "a/b c?")]
    )
    assert reserved.path == "/f/a/b%20c?"


def test_a_content_parameter_is_sent_as_json_and_a_null_is_left_out() -> None:
    request = serialize(
        "/",
        [
            (_param("query", "form", True, as_json=True), {"a": [1, 2]}),
            (Parameter("gone", "query", False, "form", True, {}), None),
        ],
    )
    assert request.query == [("color", '{"a":[1,2]}')]
