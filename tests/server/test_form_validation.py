"""An accepted elicitation answer checked against a JSON-Schema dict ``requestedSchema``.

The subset is 2025-11-25 client/elicitation § requested schema. Errors are reported
like pydantic's, so a tool handles a model and a dict schema the same way; where
pydantic has the same case, the test checks that it reports the same ``loc`` and
``type``.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

from mcpkit.server.form_validation import answer_errors

FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "guests": {"type": "integer", "minimum": 1, "maximum": 10},
        "score": {"type": "number", "minimum": 0, "maximum": 100, "default": 95.5},
        "ok": {"type": "boolean", "default": True},
        "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "colour": {
            "type": "string",
            "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}],
        },
        "extras": {
            "type": "array",
            "items": {"type": "string", "enum": ["milk", "sugar", "ice"]},
            "minItems": 1,
            "maxItems": 2,
        },
        "toppings": {
            "type": "array",
            "items": {"anyOf": [{"const": "1", "title": "One"}, {"const": "2", "title": "Two"}]},
        },
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
    },
    "required": ["name", "guests"],
}

GOOD: dict[str, Any] = {
    "name": "Ada",
    "guests": 4,
    "score": 95.5,
    "ok": False,
    "size": "m",
    "colour": "#0f0",
    "extras": ["milk"],
    "toppings": ["2", "1"],
    "email": "ada@example.org",
    "site": "https://example.org/a?b=c",
    "born": "1815-12-10",
    "at": "2025-11-25T10:00:00.5+01:00",
}


def problems(content: dict[str, Any], schema: dict[str, Any] = FORM) -> list[tuple[Any, str]]:
    return [(e["loc"], e["type"]) for e in answer_errors(schema, content)[1]]


def test_a_fitting_answer_has_no_errors_and_comes_back_equal() -> None:
    checked, errors = answer_errors(FORM, GOOD)
    assert errors == []
    assert checked == GOOD


def test_optional_fields_may_be_left_out_and_unknown_ones_are_kept() -> None:
    checked, errors = answer_errors(FORM, {"name": "Bo", "guests": 1, "note": "extra"})
    assert errors == []
    assert checked == {"name": "Bo", "guests": 1, "note": "extra"}


def test_a_required_field_with_a_default_still_has_to_be_there() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "default": 1}},
        "required": ["n"],
    }
    (error,) = answer_errors(schema, {})[1]
    assert error == {"type": "missing", "loc": ("n",), "msg": "Field required", "input": {}}


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("name", 7, "string_type"),
        ("name", None, "string_type"),
        ("name", "A", "string_too_short"),
        ("name", "Adelaide", "string_too_long"),
        ("guests", "4", "int_type"),
        ("guests", True, "int_type"),
        ("guests", 3.5, "int_from_float"),
        ("guests", 0, "greater_than_equal"),
        ("guests", 11, "less_than_equal"),
        ("score", "95.5", "float_type"),
        ("score", False, "float_type"),
        ("score", -0.5, "greater_than_equal"),
        ("score", 100.01, "less_than_equal"),
        ("ok", "true", "bool_type"),
        ("ok", 1, "bool_type"),
        ("size", "xl", "literal_error"),
        ("colour", "Red", "literal_error"),  # the title is not the value
        ("extras", "milk", "list_type"),
        ("extras", [], "too_short"),
        ("extras", ["milk", "sugar", "ice"], "too_long"),
        ("email", "ada.example.org", "value_error"),
        ("email", "a b@example.org", "value_error"),
        ("site", "example.org/no-scheme", "url_parsing"),
        ("site", "https://exa mple.org", "url_parsing"),
        ("born", "1815-13-10", "date_parsing"),
        ("born", "10/12/1815", "date_parsing"),
        ("at", "2025-11-25T10:00:00", "datetime_parsing"),  # RFC 3339 needs the offset
        ("at", "2025-11-25 25:00:00Z", "datetime_parsing"),
    ],
)
def test_each_kind_of_problem_is_named_with_its_field(field: str, value: Any, kind: str) -> None:
    (error,) = answer_errors(FORM, {**GOOD, field: value})[1]
    assert (error["loc"], error["type"], error["input"]) == ((field,), kind, value)
    assert error["msg"]


def test_the_items_of_a_multi_select_are_named_by_position() -> None:
    assert problems({**GOOD, "extras": ["milk", 3], "toppings": ["2", "Two"]}) == [
        (("extras", 1), "string_type"),
        (("toppings", 1), "literal_error"),
    ]


def test_every_problem_is_reported_not_just_the_first() -> None:
    assert problems({"size": "xl", "guests": 0.5, "name": "A"}) == [  # in the schema's order
        (("name",), "string_too_short"),
        (("guests",), "int_from_float"),
        (("size",), "literal_error"),
    ]
    assert problems({}) == [(("name",), "missing"), (("guests",), "missing")]


def test_an_integer_field_takes_3_point_0_as_the_int_3() -> None:
    """JSON Schema: an integer is a number with a zero fractional part, 3.0 included."""
    checked, errors = answer_errors(FORM, {**GOOD, "guests": 3.0})
    assert errors == []
    assert checked["guests"] == 3 and type(checked["guests"]) is int


def test_a_number_field_takes_fractions_and_integers() -> None:
    for score in (95.5, 0, 100, 12.0):
        checked, errors = answer_errors(FORM, {**GOOD, "score": score})
        assert errors == [] and checked["score"] == score


def test_a_leap_second_and_a_lower_case_t_and_z_are_rfc_3339_date_times() -> None:
    for at in ("2016-12-31T23:59:60Z", "2025-11-25t10:00:00z", "2025-11-25T10:00:00-05:30"):
        assert answer_errors(FORM, {**GOOD, "at": at})[1] == [], at


def test_bounds_and_choices_are_in_the_context_and_message() -> None:
    (low,) = answer_errors(FORM, {**GOOD, "guests": 0})[1]
    assert low["msg"] == "Input should be greater than or equal to 1" and low["ctx"] == {"ge": 1}
    (choice,) = answer_errors(FORM, {**GOOD, "colour": "blue"})[1]
    assert choice["msg"] == "Input should be '#f00' or '#0f0'"


def test_keywords_and_types_outside_the_subset_are_not_checked() -> None:
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[0-9]+$"},
            "thing": {"type": "object"},
            "odd": "not a property schema",
        },
    }
    assert answer_errors(schema, {"code": "abc", "thing": [1], "odd": 1})[1] == []


class Booking(BaseModel):
    name: str = Field(min_length=2, max_length=5)
    guests: int = Field(ge=1, le=10)
    size: Literal["s", "m"] = "s"
    extras: list[Literal["milk", "sugar", "ice"]] = Field(default=["milk"], min_length=1)


@pytest.mark.parametrize(
    "content",
    [
        {},
        {"name": "A", "guests": 3.5},
        {"name": "Adelaide", "guests": 0, "size": "xl"},
        {"name": ["x"], "guests": 11, "extras": []},
        {"name": "Ada", "guests": 2, "extras": ["tea"]},
    ],
)
def test_the_same_problems_as_pydantic_for_the_equivalent_model(content: dict[str, Any]) -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5},
            "guests": {"type": "integer", "minimum": 1, "maximum": 10},
            "size": {"type": "string", "enum": ["s", "m"]},
            "extras": {
                "type": "array",
                "items": {"type": "string", "enum": ["milk", "sugar", "ice"]},
                "minItems": 1,
            },
        },
        "required": ["name", "guests"],
    }
    with pytest.raises(ValidationError) as caught:
        Booking.model_validate(content)
    expected = sorted((e["loc"], e["type"]) for e in caught.value.errors())
    assert sorted(problems(content, schema)) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from([*sorted(FORM["properties"]), "other"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=2)
            ),
            max_leaves=5,
        ),
    )
)
def test_any_json_answer_gets_a_verdict_never_an_exception(content: dict[str, Any]) -> None:
    checked, errors = answer_errors(FORM, content)
    assert set(checked) == set(content)
    for error in errors:
        assert error["loc"][0] in FORM["properties"] and error["msg"]
