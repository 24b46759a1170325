"""The exact-type fast path of argument validation gives pydantic's answer, always.

``FunctionSignature.plain`` lets arguments that already have a plain
parameter's exact type skip the pydantic model. These tests compare it with
the model itself on many values, including every kind that must fall back
(coercible, mistyped, missing), and check which signatures get the fast path.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from mcpkit.server.signature import FunctionSignature, inspect_function

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def plain_tool(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    anything: Any,
    note: str | None = None,
    limit: Optional[int] = 10,  # noqa: UP045 (the spelling under test)
    scale: float = 1.5,
    label: str = "x",
) -> str:
    return text


def by_model(sig: FunctionSignature, args: dict[str, Any]) -> tuple[str, Any]:
    try:
        obj = sig.model.model_validate(args)
    except ValidationError as exc:
        return "error", [(e["loc"], e["type"]) for e in exc.errors()]
    return "ok", {name: getattr(obj, name) for name in sig.param_names}


def by_signature(sig: FunctionSignature, args: dict[str, Any]) -> tuple[str, Any]:
    try:
        out = sig.validate(args)
    except ValidationError as exc:
        return "error", [(e["loc"], e["type"]) for e in exc.errors()]
    return "ok", out


def same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    # repr: NaN != NaN, and 1 == 1.0 == True would hide a changed type
    return repr(a) == repr(b)


SIG = inspect_function(plain_tool, model_name="plain_tool")


def test_plain_signature_gets_the_fast_path() -> None:
    assert SIG.plain is not None
    assert [p[0] for p in SIG.plain] == list(SIG.param_names)


@settings(max_examples=400, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "text": json_values,
            "count": json_values,
            "ratio": json_values,
            "flag": json_values,
            "anything": json_values,
            "note": json_values,
            "limit": json_values,
            "scale": json_values,
            "label": json_values,
            "extra": json_values,
        },
    )
)
def test_fast_path_agrees_with_the_model(args: dict[str, Any]) -> None:
    assert same(by_signature(SIG, args), by_model(SIG, args))


@pytest.mark.parametrize(
    "args",
    [
        {"text": "a", "count": 1, "ratio": 0.5, "flag": True, "anything": {"k": [1]}},
        {"text": "a", "count": 1, "ratio": 3, "flag": False, "anything": None},  # int -> float
        {"text": "a", "count": 1, "ratio": 2**60, "flag": False, "anything": 1},  # big int -> float
        {"text": "a", "count": True, "ratio": 1.0, "flag": True, "anything": 1},  # bool for int
        {"text": "a", "count": 1.0, "ratio": 1.0, "flag": 1, "anything": 1},  # coercions
        {"text": 5, "count": 1, "ratio": 1.0, "flag": True, "anything": 1},  # wrong type
        {"text": "a", "count": "1", "ratio": "1.5", "flag": "true", "anything": 1},
        {"count": 1, "ratio": 1.0, "flag": True, "anything": 1},  # missing required
        {"text": "a", "count": 1, "ratio": 1.0, "flag": True, "anything": 1, "note": None},
        {"text": "a", "count": 1, "ratio": 1.0, "flag": True, "anything": 1, "limit": None},
        {"text": "a", "count": 1, "ratio": 1.0, "flag": True, "anything": 1, "label": None},
        {"text": "a", "count": 2**70, "ratio": float("nan"), "flag": True, "anything": 1},
    ],
)
def test_edge_values_agree_with_the_model(args: dict[str, Any]) -> None:
    assert same(by_signature(SIG, args), by_model(SIG, args))


def test_values_are_passed_through_unchanged() -> None:
    payload = {"k": [1, 2]}
    out = SIG.validate({"text": "a", "count": 1, "ratio": 0.5, "flag": True, "anything": payload})
    assert out["anything"] is payload
    assert out["note"] is None and out["limit"] == 10 and out["label"] == "x"


def constrained(text: Annotated[str, Field(min_length=3)]) -> str:
    return text


def field_default(text: str = Field(default="abc", min_length=2)) -> str:
    return text


def mutable_default(items: list[int] = [1]) -> int:  # noqa: B006
    return len(items)


def container(items: list[int]) -> int:
    return len(items)


@pytest.mark.parametrize("fn", [constrained, field_default, mutable_default, container])
def test_other_signatures_keep_the_model_only(fn: Any) -> None:
    sig = inspect_function(fn, model_name=fn.__name__)
    assert sig.plain is None
    with pytest.raises(ValidationError):
        sig.validate({"text": "x", "items": ["not an int"]})


def test_prompt_strings_still_coerce() -> None:
    def prompt(count: str) -> str:
        return count

    sig = inspect_function(prompt, model_name="prompt", strings=True)
    assert sig.validate({"count": "7"}) == {"count": "7"}
    assert sig.validate({"count": 7}) == {"count": "7"}  # numbers to str, by the model
