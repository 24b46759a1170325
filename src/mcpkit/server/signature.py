"""Turning a Python function signature into a validator and a JSON Schema, once.

Used for tools (arguments as JSON values) and prompts (arguments as strings,
validated in lax mode). Built at registration; calls only run the prebuilt
pydantic validator (ARCHITECTURE.md, principle 3), or, for a signature of plain
parameters, an exact-type check that hands anything else to that validator
(see :class:`FunctionSignature`). A plain signature's JSON Schema is written
here, the same as pydantic's (tests/server/test_signature_lazy.py), and its
validator is built the first time an argument needs it, so that a server of
plain tools starts without importing pydantic (:mod:`.lazy_pydantic`).
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin, get_type_hints

from ..errors import SignatureError
from .dependencies import bind, depends_of, plan
from .hints import is_context, resolve_hints
from .lazy_pydantic import is_model_class

if TYPE_CHECKING:
    from pydantic import BaseModel, TypeAdapter, ValidationError

__all__ = [
    "FunctionSignature",
    "SignatureError",
    "format_validation_error",
    "inspect_function",
    "is_context",
    "parameter_names",
    "resolve_hints",
]


_MISSING: Any = object()
# Annotations whose values, when the argument already has exactly this type, pydantic's
# lax mode returns unchanged (JSON has no subclasses of these; None is for ``T | None``).
_EXACT: dict[Any, frozenset[type]] = {
    str: frozenset({str}),
    int: frozenset({int}),
    float: frozenset({float}),
    bool: frozenset({bool}),
}
_IMMUTABLE_DEFAULTS = (str, int, float, bool, type(None))
# One plain parameter: its name, the argument types taken as they are (None: any value),
# and its default (_MISSING: required).
Plain = tuple[str, frozenset[type] | None, Any]


@dataclass(slots=True)
class FunctionSignature:
    """What registration learned about a function.

    ``plain`` is set when every parameter is a bare ``str``, ``int``, ``float``,
    ``bool`` (optionally ``| None``) or ``Any`` with an immutable default or none:
    arguments that already have exactly those types are then taken as they are,
    and anything else (a missing, mistyped or coercible value) goes through the
    pydantic model, so results and errors are pydantic's either way. Most tools
    look like this, and on a hot path pydantic's validator (large native code,
    cold in the CPU caches between requests) costs several times what it does
    in a tight loop.
    """

    #: What to call: the function, or with ``Depends`` parameters the wrapper that
    #: resolves them (.dependencies); ``context_param`` and ``is_async`` are its.
    fn: Callable[..., Any]
    is_async: bool
    context_param: str | None
    param_names: tuple[str, ...]
    return_annotation: Any
    doc: str | None
    plain: tuple[Plain, ...] | None = None
    dependency_params: tuple[str, ...] = ()  # hidden: resolved per call, never arguments
    # The pydantic model, or what builds it on first use (a plain signature).
    _model: type[BaseModel] | None = None
    _build: Callable[[], type[BaseModel]] | None = None
    _schema: dict[str, Any] | None = None  # a plain signature's, written by hand

    @property
    def model(self) -> type[BaseModel]:
        """The arguments' pydantic model (built on first use for a plain signature)."""
        model = self._model
        if model is None:
            assert self._build is not None
            model = self._model = self._build()
        return model

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments; raises ``ValidationError``."""
        plain = self.plain
        if plain is not None:
            out: dict[str, Any] = {}
            for name, exact, default in plain:
                value = arguments.get(name, _MISSING)
                if value is _MISSING:
                    if default is _MISSING:
                        break
                    value = default
                elif exact is not None and type(value) not in exact:
                    if (
                        type(value) is int
                        and float in exact
                        and -(2**53) <= value <= 2**53  # exactly representable
                    ):
                        value = float(value)  # what pydantic's lax float does
                    else:
                        break
                out[name] = value
            else:
                return out
        obj = self.model.model_validate(arguments)
        return {name: getattr(obj, name) for name in self.param_names}

    def described_parameters(self) -> list[tuple[str, str | None, bool]]:
        """``(name, description, required)`` per parameter, without building the model."""
        schema = self._schema
        if schema is not None:
            required = set(schema.get("required", ()))
            return [
                (name, prop.get("description"), name in required)
                for name, prop in schema["properties"].items()
            ]
        return [
            (name, info.description, info.is_required())
            for name, info in self.model.model_fields.items()
        ]

    def json_schema(self) -> dict[str, Any]:
        """The input schema; raises :class:`SignatureError` naming each type it cannot describe."""
        if self._schema is not None:
            return copy_schema(self._schema)
        try:
            schema = self.model.model_json_schema()
        except Exception:
            fields = {
                name: (info.annotation, info) for name, info in self.model.model_fields.items()
            }
            problems = _field_problems(fields, dict(self.model.model_config), schema=True)
            raise SignatureError(problems or ["cannot build its input schema"]) from None
        schema.pop("title", None)
        schema.setdefault("properties", {})
        return schema


_ARG_SECTIONS = frozenset(
    {"args:", "arguments:", "parameters:", "params:", "keyword args:", "keyword arguments:"}
)
_OTHER_SECTIONS = frozenset(
    {"returns:", "return:", "raises:", "yields:", "examples:", "example:", "notes:", "note:"}
)


def _param_descriptions(doc: str | None) -> dict[str, str]:
    """Parameter descriptions from a Google-style (``Args:``) or Sphinx-style (``:param x:``)
    docstring; indented continuation lines are joined to the description they continue."""
    if not doc:
        return {}
    out: dict[str, str] = {}
    section: int | None = None  # indentation of the `Args:` header while inside that section
    entry: int | None = None  # indentation of the entries of that section
    current: str | None = None  # the parameter a continuation line belongs to
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not stripped:
            continue
        if stripped.startswith(":"):  # Sphinx field list
            section = None
            current = None
            if stripped.startswith((":param ", ":parameter ", ":arg ", ":argument ")):
                head, _, desc = stripped.split(" ", 1)[1].partition(":")
                words = head.split()
                if words and words[-1].isidentifier():
                    current = words[-1]
                    out[current] = desc.strip()
            continue
        if stripped.lower() in _ARG_SECTIONS:
            section, entry, current = indent, None, None
            continue
        if section is not None and indent > section:
            if entry is None:
                entry = indent
            if indent == entry:
                name, sep, desc = stripped.partition(":")
                name = name.split("(")[0].strip().lstrip("*")
                current = name if sep and name.isidentifier() else None
                if current is not None:
                    out[current] = desc.strip()
                continue
        elif section is not None:
            section = None
            current = None
        if current is not None and indent > 0:
            out[current] = f"{out[current]} {stripped}".strip()
        else:
            current = None
    return out


def summary(doc: str | None) -> str | None:
    """The docstring up to its first section (arguments, returns, raises...)."""
    if not doc:
        return None
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    for line in lines:
        stripped = line.strip()
        lowered = stripped.lower()
        if lowered in _ARG_SECTIONS or lowered in _OTHER_SECTIONS:
            break
        if stripped.startswith((":param", ":parameter", ":arg", ":type", ":return", ":raise")):
            break
        kept.append(line)
    text = "\n".join(kept).strip()
    return text or None


def inspect_function(
    fn: Callable[..., Any],
    *,
    model_name: str,
    strings: bool = False,
    schema: bool = False,
    run_in_thread: bool = True,
) -> FunctionSignature:
    """Inspect ``fn`` once. ``strings`` marks prompt arguments (always strings on the wire);
    ``schema`` checks that every parameter can be described as JSON Schema (tools);
    ``run_in_thread`` is where a sync ``fn`` with async dependencies runs (.dependencies).

    Raises :class:`SignatureError` naming every parameter mcpkit cannot call or
    validate: positional-only ones and ``*args`` (arguments come by name),
    annotations that do not resolve, types pydantic cannot validate.
    """
    target = fn
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise SignatureError([f"cannot read its signature: {exc}"]) from None
    problems: list[str] = []
    try:
        hints = get_type_hints(target, include_extras=True)
    except Exception:  # unresolved forward references: resolve one by one, naming the bad ones
        hints = resolve_hints(target, sig, problems)
    doc = inspect.getdoc(target)
    descriptions = _param_descriptions(doc)
    params: list[tuple[str, Any, Any, str | None]] = []  # name, annotation, default, doc
    context_param: str | None = None
    plain: list[Plain] | None = []
    wanted: list[tuple[str, Any, Any]] = []  # Depends parameters: name, marker, annotation
    for name, param in sig.parameters.items():
        if param.kind is param.VAR_KEYWORD:
            continue  # **kwargs: receives nothing, the declared parameters are the schema
        if name in ("self", "cls") and param.annotation is inspect.Parameter.empty:
            continue
        if param.kind is param.VAR_POSITIONAL:
            problems.append(
                f"*{name} cannot receive arguments: MCP sends them by name, as one JSON "
                "object; declare each parameter"
            )
            continue
        if param.kind is param.POSITIONAL_ONLY:
            problems.append(
                f"parameter {name!r} is positional-only (declared before '/'), but MCP "
                "passes arguments by name; remove the '/'"
            )
            continue
        annotation = hints.get(name, Any)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        if isinstance(annotation, str):
            continue  # unresolvable: already a problem
        if (marker := depends_of(annotation, param.default)) is not None:
            wanted.append((name, marker, annotation))
            continue
        if is_context(annotation):
            context_param = name
            continue
        default: Any = ... if param.default is inspect.Parameter.empty else param.default
        params.append((name, annotation, default, descriptions.get(name)))
        if plain is not None:
            step = _plain_param(name, annotation, default)
            plain = None if step is None else [*plain, step]
    config = {"arbitrary_types_allowed": True, "coerce_numbers_to_str": strings}
    out = FunctionSignature(
        fn=fn,
        is_async=inspect.iscoroutinefunction(fn)
        or inspect.iscoroutinefunction(getattr(fn, "__call__", None)),  # noqa: B004 (async callables)
        context_param=context_param,
        param_names=tuple(p[0] for p in params),
        return_annotation=hints.get("return", inspect.Parameter.empty),
        doc=doc,
        plain=tuple(plain) if plain is not None else None,
    )
    if wanted and (deps := plan(wanted, problems)) is not None:
        bound = bind(
            fn,
            deps,
            is_async=out.is_async,
            context_param=context_param,
            run_in_thread=run_in_thread,
        )
        out.fn, out.context_param, out.is_async = bound.fn, bound.context_param, bound.is_async
        out.dependency_params = deps.params
    if not problems and plain is not None and all(_hand_written(p[0], p[2]) for p in params):
        # Plain parameters: pydantic takes them all and its schema is known (module docstring).
        out._schema = _plain_schema(params)
        out._build = lambda: _create_model(model_name, config, _fields(params))
        return out
    fields = _fields(params)
    if problems:  # say what else is wrong, too
        problems.extend(_field_problems(fields, config, schema=schema))
        raise SignatureError(problems)
    try:
        out._model = _create_model(model_name, config, fields)
        if schema:
            out._model.model_json_schema()
    except Exception:
        raise SignatureError(_field_problems(fields, config, schema=schema)) from None
    return out


def _create_model(name: str, config: dict[str, Any], fields: dict[str, Any]) -> type[BaseModel]:
    from pydantic import create_model

    return create_model(name, __config__=config, **fields)  # type: ignore[call-overload, no-any-return]


def _fields(params: list[tuple[str, Any, Any, str | None]]) -> dict[str, Any]:
    """pydantic's ``(annotation, FieldInfo)`` per parameter."""
    from pydantic import Field
    from pydantic.fields import FieldInfo

    fields: dict[str, Any] = {}
    for name, annotation, default, described in params:
        if isinstance(default, FieldInfo):
            info = default
        # A docstring description fills in, but never overrides, an explicit
        # `Annotated[..., Field(description=...)]`.
        elif described and not _has_description(annotation):
            info = Field(default=default, description=described)
        else:
            info = Field(default=default)
        fields[name] = (annotation, info)
    return fields


# Names pydantic refuses or warns about as fields (private, or shadowing BaseModel's
# attributes): those signatures keep going through pydantic at registration, so that
# what it says about them is still said. A test pins this against ``dir(BaseModel)``.
_MODEL_ATTRIBUTES = frozenset(
    {
        "construct", "copy", "dict", "from_orm", "json", "parse_file", "parse_obj",
        "parse_raw", "schema", "schema_json", "update_forward_refs", "validate",
    }
)  # fmt: skip
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _hand_written(name: str, default: Any) -> bool:
    """Can this plain parameter's schema be written here (not by pydantic)?"""
    if name.startswith(("_", "model_")) or name in _MODEL_ATTRIBUTES:
        return False
    return not (type(default) is float and not math.isfinite(default))


def _plain_schema(params: list[tuple[str, Any, Any, str | None]]) -> dict[str, Any]:
    """pydantic's JSON Schema of plain parameters, keys sorted as pydantic sorts them."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, annotation, default, described in params:
        prop: dict[str, Any] = {}
        if annotation is not Any:
            members = [m for m in get_args(annotation) or (annotation,) if m is not type(None)]
            kind = {"type": _JSON_TYPES[members[0]]}
            if annotation in _JSON_TYPES:
                prop.update(kind)
            else:  # `T | None`, in either order: pydantic puts the null last
                prop["anyOf"] = [kind, {"type": "null"}]
        if default is ...:
            required.append(name)
        else:
            prop["default"] = default
        if described:
            prop["description"] = described
        prop["title"] = name.title().replace("_", " ").strip()
        properties[name] = dict(sorted(prop.items()))
    out: dict[str, Any] = {"properties": properties}
    if required:
        out["required"] = required
    out["type"] = "object"
    return out


def copy_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy the caller may change (the plain schemas hold only JSON values)."""
    return {
        k: copy_schema(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v
        for k, v in schema.items()
    }


def parameter_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The parameters of ``fn`` that take arguments, even when its signature has problems."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(
        p.name
        for p in params
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and not (p.name in ("self", "cls") and p.annotation is inspect.Parameter.empty)
        and not is_context(p.annotation)
        and depends_of(p.annotation, p.default) is None
    )


def _field_problems(fields: dict[str, Any], config: dict[str, Any], *, schema: bool) -> list[str]:
    """One problem per parameter whose type pydantic cannot validate (or describe)."""
    problems = []
    for name, field in fields.items():
        try:
            one = _create_model("parameter", config, {name: field})
            if schema:
                one.model_json_schema()
        except Exception as exc:
            problems.append(f"parameter {name!r}: {_type_problem(field[0], exc, schema=schema)}")
    return problems


def _type_problem(annotation: Any, exc: Exception, *, schema: bool) -> str:
    shown = getattr(annotation, "__name__", None) or repr(annotation)
    if schema:
        return (
            f"type {shown} cannot be described as JSON Schema; use JSON types (str, int, "
            "float, bool, list, dict), a pydantic model, a dataclass or a TypedDict"
        )
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"type {shown} is not supported ({first})"


def _plain_param(name: str, annotation: Any, default: Any) -> Plain | None:
    """The fast check of one parameter (see :class:`FunctionSignature`), or None."""
    if default is not ... and type(default) not in _IMMUTABLE_DEFAULTS:
        return None  # a FieldInfo (constraints, aliases) or a default pydantic would copy
    required = _MISSING if default is ... else default
    if annotation is Any:
        return (name, None, required)
    exact = _EXACT.get(annotation)
    if exact is None and get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(get_args(annotation)) == 2:
            inner = _EXACT.get(members[0])
            exact = inner | {type(None)} if inner is not None else None
    return None if exact is None else (name, exact, required)


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    from pydantic.fields import FieldInfo

    return any(isinstance(m, FieldInfo) and m.description for m in get_args(annotation)[1:])


def format_validation_error(exc: ValidationError, *, root: str = "(arguments)") -> str:
    """One readable ``path: message`` part per failing path (``root`` names an empty path)."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or root
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
        if is_model_class(origin):
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
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    schema = adapter.json_schema(mode="serialization")
    schema.pop("title", None)
    return adapter, schema
