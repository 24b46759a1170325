"""Arguments checked against a raw JSON Schema (``create_tool(input_schema={...})``).

The ``jsonschema`` library is used when installed (Draft 2020-12, the default
dialect from 2025-11-25 on); without it only ``required`` is checked. Messages
name each failing path and are bounded, since a validator quotes the instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InvalidParams

__all__ = ["json_schema_validator"]


def json_schema_validator(
    name: str, schema: dict[str, Any]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Validate against a raw JSON Schema; the validator is built on first use."""
    compiled: list[Any] = []

    def validate(args: dict[str, Any]) -> dict[str, Any]:
        if not compiled:
            try:
                from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]
            except ImportError:  # minimal check without the optional library
                compiled.append(None)
            else:
                compiled.append(Draft202012Validator(schema))
        validator = compiled[0]
        if validator is None:
            missing = [k for k in schema.get("required", ()) if k not in args]
            if missing:
                raise InvalidParams("; ".join(f"{k}: Field required" for k in missing))
            return args
        try:
            errors = sorted(
                validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path]
            )
        except RecursionError:
            # jsonschema recurses in Python and puts the instance's repr in its messages:
            # arguments ~1,000 levels deep (the JSON decoder allows 1,024) exhaust the stack.
            raise InvalidParams("(arguments): nested too deeply to validate") from None
        if errors:
            raise InvalidParams("; ".join(_describe_schema_error(e) for e in errors))
        return args

    return validate


def _describe_schema_error(error: Any) -> str:
    """``path: message``, naming the missing property itself for ``required`` errors."""
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [
            name
            for name in error.validator_value
            if name not in error.instance and repr(name) in error.message
        ]
        if missing:
            return f"{'.'.join([*path, str(missing[0])])}: Field required"
    message = error.message
    if len(message) > _MAX_MESSAGE:  # it quotes the instance, which may be huge
        message = message[: _MAX_MESSAGE - 3] + "..."
    return f"{'.'.join(path) or '(arguments)'}: {message}"


_MAX_MESSAGE = 200
