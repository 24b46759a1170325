"""Turning a Python function signature into a validator and a JSON Schema, once.

Used for tools (arguments as JSON values) and prompts (arguments as strings,
validated in lax mode). Built at registration; calls only run the prebuilt
pydantic validator (ARCHITECTURE.md, principle 3).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo

__all__ = ["FunctionSignature", "format_validation_error", "inspect_function"]


def _is_context(annotation: Any) -> bool:
    from .context import Context

    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return isinstance(annotation, type) and issubclass(annotation, Context)


@dataclass(slots=True)
class FunctionSignature:
    """What registration learned about a function."""

    fn: Callable[..., Any]
    is_async: bool
    context_param: str | None
    param_names: tuple[str, ...]
    model: type[BaseModel]
    return_annotation: Any
    doc: str | None

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments; raises ``ValidationError``."""
        obj = self.model.model_validate(arguments)
        return {name: getattr(obj, name) for name in self.param_names}

    def json_schema(self) -> dict[str, Any]:
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        schema.setdefault("properties", {})
        return schema


def _param_descriptions(doc: str | None) -> dict[str, str]:
    """Descriptions of parameters from Google/NumPy/Sphinx-style docstrings."""
    if not doc:
        return {}
    out: dict[str, str] = {}
    lines = inspect.cleandoc(doc).splitlines()
    in_args = False
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:", "params:"):
            in_args = True
            continue
        if stripped.startswith(":param "):
            head, _, desc = stripped[len(":param ") :].partition(":")
            out[head.split()[-1]] = desc.strip()
            continue
        if in_args:
            if not stripped:
                continue
            if not line.startswith((" ", "\t")) and stripped.endswith(":"):
                in_args = False
                continue
            name, sep, desc = stripped.partition(":")
            name = name.split("(")[0].strip()
            if sep and name.isidentifier():
                out[name] = desc.strip()
    return out


def summary(doc: str | None) -> str | None:
    """The docstring without its argument section."""
    if not doc:
        return None
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    for line in lines:
        if line.strip().lower() in ("args:", "arguments:", "parameters:", "params:", "returns:", "raises:"):
            break
        if line.strip().startswith(":param"):
            break
        kept.append(line)
    text = "\n".join(kept).strip()
    return text or None


def inspect_function(fn: Callable[..., Any], *, model_name: str, strings: bool = False) -> FunctionSignature:
    """Inspect ``fn`` once. ``strings`` marks prompt arguments (always strings on the wire)."""
    target = fn
    sig = inspect.signature(target)
    try:
        hints = get_type_hints(target, include_extras=True)
    except Exception:  # unresolved forward references: fall back to raw annotations
        hints = {name: p.annotation for name, p in sig.parameters.items()}
    doc = inspect.getdoc(target)
    descriptions = _param_descriptions(doc)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    names: list[str] = []
    for name, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if name in ("self", "cls") and param.annotation is inspect.Parameter.empty:
            continue
        annotation = hints.get(name, Any)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        if _is_context(annotation):
            context_param = name
            continue
        default: Any = ... if param.default is inspect.Parameter.empty else param.default
        if isinstance(default, FieldInfo):
            info = default
        else:
            info = Field(default=default, description=descriptions.get(name))
        fields[name] = (annotation, info)
        names.append(name)
    config = ConfigDict(arbitrary_types_allowed=True, coerce_numbers_to_str=strings)
    model = create_model(model_name, __config__=config, **fields)
    ret = hints.get("return", inspect.Parameter.empty)
    return FunctionSignature(
        fn=fn,
        is_async=inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)),
        context_param=context_param,
        param_names=tuple(names),
        model=model,
        return_annotation=ret,
        doc=doc,
    )


def format_validation_error(exc: ValidationError) -> str:
    """One readable line per failing argument path."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


_OBJECT_ORIGINS = (dict, typing.Mapping)


def is_object_type(annotation: Any) -> bool:
    """Does ``annotation`` describe a JSON object (→ structured output)?"""
    if annotation is inspect.Parameter.empty or annotation is None or annotation is Any:
        return False
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    origin = get_origin(annotation) or annotation
    if isinstance(origin, type):
        if issubclass(origin, BaseModel):
            return True
        if origin in _OBJECT_ORIGINS or (origin is not str and issubclass(origin, dict)):
            return True
        from .content import Audio, EmbeddedResource, Image, ResourceLink, Text, ToolResult

        if issubclass(origin, Text | Image | Audio | ResourceLink | EmbeddedResource | ToolResult):
            return False  # content helpers become content blocks, not structuredContent
        import dataclasses

        if dataclasses.is_dataclass(origin):
            return True
        if typing.is_typeddict(origin):
            return True
    return False


def output_adapter(annotation: Any) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    schema = adapter.json_schema(mode="serialization")
    schema.pop("title", None)
    return adapter, schema
