"""Declared functions as mcpkit registers them: ``ToolParam``/``PromptArg`` metadata, proxies.

The ``mcp_*`` decorators of :mod:`.declarative` leave the user's function as it
is; what gets registered is a *proxy* with the same behaviour whose signature
carries the parameter metadata as pydantic ``Field``\\ s (so the schema mcpkit
builds is the function's own), and which unwraps a whole result
(``{"contents": [...]}``, ``{"messages": [...]}``, ``{"completion": {...}}``).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from pydantic import Field

from ..errors import ConfigurationError
from .signature import SignatureError, resolve_hints

__all__ = [
    "PromptArg",
    "Rewritten",
    "ToolParam",
    "completion_value",
    "prompt_value",
    "proxy",
    "resource_value",
    "rewrite",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolParam:
    """Metadata of a tool parameter: ``Annotated[int, ToolParam(description=...)]``.

    ``required=False`` on a parameter without a default makes it optional
    (``None`` when absent); ``required=True`` on one with a default is an error.
    """

    description: str | None = None
    required: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptArg:
    """Metadata of a prompt argument: ``Annotated[str, PromptArg(description=...)]``."""

    description: str | None = None
    required: bool | None = None


# -- proxies: the user's function with rewritten annotations and result unwrapping -----------------


@dataclass(frozen=True, slots=True)
class Rewritten:
    signature: inspect.Signature
    annotations: dict[str, Any]


def rewrite(fn: Callable[..., Any], marker: type | None) -> Rewritten:
    """``fn``'s resolved signature, its ``marker`` metadata turned into pydantic ``Field``\\ s.

    The proxy registered in ``fn``'s place carries this signature and these
    annotations, so the schema mcpkit builds is ``fn``'s own.
    """
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        unresolved: list[str] = []
        hints = resolve_hints(fn, sig, unresolved)
        if unresolved:
            raise SignatureError(unresolved) from None
    params = []
    annotations: dict[str, Any] = {}
    for pname, param in sig.parameters.items():
        annotation = hints.get(pname, param.annotation)
        default = param.default
        if get_origin(annotation) is Annotated:
            base, *extras = get_args(annotation)
            found = [e for e in extras if marker is not None and isinstance(e, marker)]
            if found:
                meta = found[-1]
                rest = [e for e in extras if not isinstance(e, ToolParam | PromptArg)]
                required = meta.required  # type: ignore[attr-defined]
                if required is True and default is not param.empty:
                    raise ConfigurationError(
                        f"parameter {pname!r} is marked required=True but has a default"
                    )
                if required is False and default is param.empty:
                    default = None
                    base = typing.Optional[base]  # noqa: UP045 (base is a runtime object)
                description = meta.description  # type: ignore[attr-defined]
                if description:
                    rest.append(Field(description=description))
                annotation = Annotated[(base, *rest)] if rest else base
            elif any(isinstance(e, ToolParam | PromptArg) for e in extras):
                raise ConfigurationError(
                    f"parameter {pname!r}: ToolParam describes tool parameters and PromptArg "
                    "prompt arguments; this one is on the other kind"
                )
        if annotation is not param.empty:
            annotations[pname] = annotation
        params.append(param.replace(annotation=annotation, default=default))
    if "return" in hints:
        annotations["return"] = hints["return"]
    ret = hints.get("return", sig.return_annotation)
    return Rewritten(sig.replace(parameters=params, return_annotation=ret), annotations)


def proxy(
    fn: Callable[..., Any],
    rewritten: Rewritten,
    *,
    before: Callable[[], None] | None = None,
    after: Callable[[Any], Any] | None = None,
) -> Callable[..., Any]:
    """A function mcpkit registers in place of ``fn``: same behaviour, rewritten signature."""
    proxy: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):

        async def call_async(*args: Any, **kwargs: Any) -> Any:
            if before is not None:
                before()
            value = await fn(*args, **kwargs)
            return after(value) if after is not None else value

        proxy = call_async
    else:

        def call(*args: Any, **kwargs: Any) -> Any:
            if before is not None:
                before()
            value = fn(*args, **kwargs)
            return after(value) if after is not None else value

        proxy = call
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(proxy, attr, getattr(fn, attr))
        except AttributeError:
            pass
    proxy.__signature__ = rewritten.signature  # type: ignore[union-attr]
    proxy.__annotations__ = rewritten.annotations
    return proxy


def unwrapper(key: str, kind: type) -> Callable[[Any], Any]:
    """A function that turns a whole result (``{key: kind}``) into that value, else passes it."""

    def unwrap(value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get(key), kind):
            return value[key]
        return value

    return unwrap


resource_value = unwrapper("contents", list)  # a ReadResourceResult → its contents
prompt_value = unwrapper("messages", list)  # a GetPromptResult → its messages
completion_value = unwrapper("completion", dict)  # a CompleteResult → the completion
