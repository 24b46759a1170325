"""Checking an accepted elicitation answer against a JSON-Schema dict ``requestedSchema``.

A form-mode ``requestedSchema`` is a restricted subset of JSON Schema (2025-11-25
client/elicitation § requested schema, ``PrimitiveSchemaDefinition``): a flat
object whose properties are

- ``string``: ``minLength``, ``maxLength``, ``format`` (``email``, ``uri``,
  ``date``, ``date-time``), or a single-select enum: ``enum`` (with the legacy
  ``enumNames``) or ``oneOf`` of ``const``/``title``;
- ``number`` / ``integer``: ``minimum``, ``maximum`` (inclusive);
- ``boolean``;
- ``array`` (from 2025-11-25): a multi-select of strings, ``items.enum`` or
  ``items.anyOf`` of ``const``/``title``, with ``minItems``, ``maxItems``.

The server SHOULD check what it receives against it (§ security considerations);
``ctx.elicit`` with a pydantic model gets that from pydantic, and with a dict it
gets it here, reported the same way: a list of pydantic-style error entries
(``type``, ``loc``, ``msg``, ``input``, ``ctx``). Only this subset is checked, so
no general JSON Schema engine is needed: keywords outside it are ignored, as are
properties the schema does not name. As in JSON Schema, ``integer`` takes any
number with a zero fractional part (``3.0``), which the answer then holds as the
``int`` ``3``; ``number`` takes integers and fractions; ``true`` is never a
number. ``default`` does not make a field optional: only ``required`` counts.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TypeGuard

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = ["answer_errors"]

Loc = tuple[str | int, ...]

# RFC 3339 § 5.6: full-date and date-time (T and Z in either case, leap second allowed).
_DATE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_DATE_TIME: Final = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
# RFC 3986 § 3: an absolute URI is a scheme, a colon, then no whitespace or excluded
# characters. RFC 5321 mailbox, loosely: one @ between two parts without whitespace.
_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|\\^`]*")
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+")


def answer_errors(
    schema: Mapping[str, Any], content: Mapping[str, Any]
) -> tuple[dict[str, Any], list[ErrorDetails]]:
    """``content`` checked against the flat object ``schema``.

    Returns the answer (a copy, integers given as ``3.0`` made ``int``) and the
    problems found, one entry per problem, in the order of the schema's fields.
    """
    out = dict(content)
    errors: list[ErrorDetails] = []
    required = schema.get("required")
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in content:
                errors.append(_error("missing", (name,), "Field required", dict(content)))
    for name, prop in props.items():
        if name not in content or not isinstance(prop, Mapping):
            continue
        value = content[name]
        kind = prop.get("type")
        if kind == "string":
            _string(prop, value, (name,), errors)
        elif kind in ("number", "integer"):
            if _number(prop, value, (name,), errors) and kind == "integer":
                out[name] = int(value)
        elif kind == "boolean":
            if type(value) is not bool:
                errors.append(
                    _error("bool_type", (name,), "Input should be a valid boolean", value)
                )
        elif kind == "array":
            _multi_select(prop, value, (name,), errors)
    return out, errors


def _error(kind: str, loc: Loc, msg: str, value: Any, **ctx: Any) -> ErrorDetails:
    entry: ErrorDetails = {"type": kind, "loc": loc, "msg": msg, "input": value}
    if ctx:
        entry["ctx"] = ctx
    return entry


def _choices(prop: Mapping[str, Any], titled: str) -> list[Any] | None:
    """The values a single- or multi-select offers: ``enum``, or the ``const`` of each
    option of ``titled`` (``oneOf`` for single, ``anyOf`` for multi-select items)."""
    enum = prop.get("enum")
    if isinstance(enum, list):
        return enum
    options = prop.get(titled)
    if isinstance(options, list):
        return [o.get("const") for o in options if isinstance(o, Mapping)]
    return None


def _offered(choices: list[Any]) -> str:
    """``'a', 'b' or 'c'``, as pydantic names the values a literal takes."""
    shown = [repr(c) for c in choices]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _one_of(choices: list[Any], value: Any, loc: Loc, errors: list[ErrorDetails]) -> None:
    if value not in choices:
        expected = _offered(choices)
        errors.append(
            _error("literal_error", loc, f"Input should be {expected}", value, expected=expected)
        )


def _string(prop: Mapping[str, Any], value: Any, loc: Loc, errors: list[ErrorDetails]) -> None:
    if type(value) is not str:
        errors.append(_error("string_type", loc, "Input should be a valid string", value))
        return
    choices = _choices(prop, "oneOf")
    if choices is not None:
        _one_of(choices, value, loc, errors)
        return
    least, most = prop.get("minLength"), prop.get("maxLength")
    # JSON Schema counts characters (code points), as len() does.
    if _is_number(least) and len(value) < least:
        errors.append(
            _error(
                "string_too_short",
                loc,
                f"String should have at least {least} character{'s' * (least != 1)}",
                value,
                min_length=least,
            )
        )
    if _is_number(most) and len(value) > most:
        errors.append(
            _error(
                "string_too_long",
                loc,
                f"String should have at most {most} character{'s' * (most != 1)}",
                value,
                max_length=most,
            )
        )
    fmt = prop.get("format")
    problem = _FORMATS.get(fmt) if isinstance(fmt, str) else None
    if problem is not None and not problem[0](value):
        errors.append(_error(problem[1], loc, problem[2], value))


def _number(prop: Mapping[str, Any], value: Any, loc: Loc, errors: list[ErrorDetails]) -> bool:
    """Check a number; True when it is a valid ``integer`` (for the ``int`` conversion)."""
    integer = prop.get("type") == "integer"
    if not _is_number(value):
        kind, what = ("int_type", "integer") if integer else ("float_type", "number")
        errors.append(_error(kind, loc, f"Input should be a valid {what}", value))
        return False
    if integer and isinstance(value, float) and not value.is_integer():
        errors.append(
            _error(
                "int_from_float",
                loc,
                "Input should be a valid integer, got a number with a fractional part",
                value,
            )
        )
        return False
    least, most = prop.get("minimum"), prop.get("maximum")
    if _is_number(least) and value < least:
        errors.append(
            _error(
                "greater_than_equal",
                loc,
                f"Input should be greater than or equal to {least}",
                value,
                ge=least,
            )
        )
    if _is_number(most) and value > most:
        errors.append(
            _error(
                "less_than_equal",
                loc,
                f"Input should be less than or equal to {most}",
                value,
                le=most,
            )
        )
    return integer


def _multi_select(
    prop: Mapping[str, Any], value: Any, loc: Loc, errors: list[ErrorDetails]
) -> None:
    if type(value) is not list:
        errors.append(_error("list_type", loc, "Input should be a valid list", value))
        return
    items = prop.get("items")
    choices = _choices(items, "anyOf") if isinstance(items, Mapping) else None
    for i, item in enumerate(value):
        if type(item) is not str:
            errors.append(_error("string_type", (*loc, i), "Input should be a valid string", item))
        elif choices is not None:
            _one_of(choices, item, (*loc, i), errors)
    least, most = prop.get("minItems"), prop.get("maxItems")
    count = len(value)
    if _is_number(least) and count < least:
        errors.append(
            _error(
                "too_short",
                loc,
                f"List should have at least {least} item{'s' * (least != 1)} "
                f"after validation, not {count}",
                value,
                field_type="List",
                min_length=least,
                actual_length=count,
            )
        )
    if _is_number(most) and count > most:
        errors.append(
            _error(
                "too_long",
                loc,
                f"List should have at most {most} item{'s' * (most != 1)} "
                f"after validation, not {count}",
                value,
                field_type="List",
                max_length=most,
                actual_length=count,
            )
        )


def _is_number(value: object) -> TypeGuard[int | float]:
    """A JSON number: an int or a finite float, never a bool."""
    if type(value) is int:
        return True
    return type(value) is float and math.isfinite(value)


def _date(text: str) -> bool:
    if _DATE.fullmatch(text) is None:
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _date_time(text: str) -> bool:
    match = _DATE_TIME.fullmatch(text)
    if match is None:
        return False
    day, hour, minute, second, _, offset = match.groups()
    if not _date(day) or int(hour) > 23 or int(minute) > 59 or int(second) > 60:
        return False  # 60: a leap second (RFC 3339 § 5.7)
    if offset not in ("Z", "z") and (int(offset[1:3]) > 23 or int(offset[4:6]) > 59):
        return False
    return True


_FORMATS: Final = {
    "date": (_date, "date_parsing", "Input should be a valid date in the format YYYY-MM-DD"),
    "date-time": (
        _date_time,
        "datetime_parsing",
        "Input should be a valid RFC 3339 date-time (YYYY-MM-DDTHH:MM:SS with Z or an offset)",
    ),
    "email": (
        lambda text: _EMAIL.fullmatch(text) is not None,
        "value_error",
        "value is not a valid email address",
    ),
    "uri": (
        lambda text: _URI.fullmatch(text) is not None,
        "url_parsing",
        "Input should be a valid absolute URI (a scheme, then ':')",
    ),
}
