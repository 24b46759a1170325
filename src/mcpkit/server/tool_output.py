"""Structured output of tools: ``{"result": value}`` for primitives and lists, and objects' JSON.

``structuredContent`` is a JSON object on 2025-06-18 and 2025-11-25 (server/tools
§ structured content; ``outputSchema`` "restricted to type: object at the root
level"), so a tool declared to return ``int``, ``float``, ``bool``, a list (of
such values, models, dataclasses, ...), an ``Enum`` or a ``Literal`` sends its value
wrapped as ``{"result": value}``, described by an output schema of the same shape.
The official SDK and FastMCP send the same, so clients written against them read
``structuredContent["result"]`` from an mcpkit server too. The ``content`` blocks
stay what they were without the wrapping, for clients that read text.

A ``str`` return is wrapped only when the tool asks (``structured_output=True``):
its text block already is the value, and wrapping would send every text answer
twice. A bare ``list`` (or ``list[Any]``) is never wrapped, since it may hold
content blocks, nor are content helpers (``Image``, ``Text``, ...).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin

from .lazy_pydantic import is_model, is_model_class
from .signature import is_object_type, output_adapter

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["dump_any", "structured_dumper", "wrappable", "wrapped_output"]

_NUMBERS = (int, float, bool)
_SEQUENCES = (list, tuple, set, frozenset)


def _bare(annotation: Any) -> Any:
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def _members(annotation: Any) -> tuple[Any, ...] | None:
    """The members of a union, or None for anything else."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return get_args(annotation)
    return None


def _plain(annotation: Any) -> bool:
    """A type whose values are plain JSON mcpkit can describe (no ``Any``, no content)."""
    annotation = _bare(annotation)
    if annotation in _NUMBERS or annotation is str or annotation is type(None):
        return True
    if get_origin(annotation) is Literal:
        return True
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return True
    members = _members(annotation)
    if members is not None:
        return all(_plain(m) for m in members)
    if get_origin(annotation) in _SEQUENCES:
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return bool(args) and all(_plain(a) for a in args)
    return is_object_type(annotation)


def wrappable(annotation: Any, *, text: bool = False) -> bool:
    """Whether a tool declared to return ``annotation`` sends ``{"result": value}``
    (``text``: also for ``str``, as ``structured_output=True`` asks)."""
    annotation = _bare(annotation)
    if annotation is str:
        return text
    if annotation in _NUMBERS or get_origin(annotation) is Literal:
        return True
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return True
    if get_origin(annotation) in _SEQUENCES:
        return _plain(annotation)
    members = _members(annotation)
    if members is not None:
        named = [m for m in members if m is not type(None)]
        return (
            bool(named)
            and all(_plain(m) for m in named)
            and any(wrappable(m, text=text) or is_object_type(m) for m in named)
        )
    return False


#: JSON Schema of the primitives, written out so that a tool returning one does not
#: import pydantic at registration (start-up time, see .lazy_pydantic).
_PRIMITIVE_SCHEMAS: dict[Any, dict[str, str]] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    str: {"type": "string"},
}


def wrapped_output(annotation: Any) -> tuple[dict[str, Any], Callable[[Any], Any]]:
    """The output schema ``{"result": <annotation's schema>}`` and a function giving a
    returned value's JSON form, validated against ``annotation`` unless it has the
    declared primitive type exactly (the common case: no validation cost)."""
    exact = _bare(annotation)
    primitive = _PRIMITIVE_SCHEMAS.get(exact)
    adapters: list[Any] = []
    if primitive is not None:
        inner: dict[str, Any] = dict(primitive)
    else:
        adapter, inner = output_adapter(annotation)
        adapters.append(adapter)
    schema: dict[str, Any] = {"type": "object", "properties": {"result": inner}}
    schema["required"] = ["result"]
    defs = inner.pop("$defs", None)
    if defs:  # $ref paths start at the root, which is now the wrapper
        schema["$defs"] = defs

    def result_of(value: Any) -> Any:
        if primitive is not None and type(value) is exact:
            return value
        if not adapters:  # a primitive of another type (an int for a float): built once
            adapters.append(output_adapter(annotation)[0])
        adapter = adapters[0]
        return adapter.dump_python(adapter.validate_python(value), mode="json")

    return schema, result_of


# -- object returns ---------------------------------------------------------------------------


def structured_dumper(adapter: TypeAdapter[Any], output_type: Any) -> Callable[[Any], Any]:
    """JSON for a declared object return type; validated unless already an instance.

    A model or dataclass instance was validated when it was built, so only other
    values (dicts for a ``TypedDict`` or ``dict[...]``, a stray ``None``...) pay
    for validation.
    """
    origin = get_origin(output_type) or output_type
    exact = (
        origin
        if isinstance(origin, type) and (is_model_class(origin) or dataclasses.is_dataclass(origin))
        else None
    )
    dump = functools.partial(adapter.dump_python, mode="json")

    def dump_structured(value: Any) -> Any:
        if exact is None or not isinstance(value, exact):
            value = adapter.validate_python(value)
        return dump(value)

    return dump_structured


def dump_any(value: Any) -> Any:
    if is_model(value):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return value
    from pydantic import TypeAdapter

    return TypeAdapter(type(value)).dump_python(value, mode="json")
