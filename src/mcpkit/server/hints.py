"""Reading a function's annotations: resolved type hints, and whether one is the Context.

Shared by :mod:`.signature` (handlers) and :mod:`.dependencies` (their
dependencies), which apply the same rules.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin

__all__ = ["is_context", "resolve_hints"]


def is_context(annotation: Any) -> bool:
    """Is ``annotation`` a :class:`Context` (``Context | None`` too): the parameter gets it."""
    from .context import Context

    if isinstance(annotation, str):  # an unresolvable postponed annotation
        return annotation.rsplit(".", 1)[-1] in ("Context", "Context | None", "Optional[Context]")
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (typing.Union, types.UnionType):  # Context | None
        args = [a for a in get_args(annotation) if a is not type(None)]
        return len(args) == 1 and is_context(args[0])
    return isinstance(annotation, type) and issubclass(annotation, Context)


def resolve_hints(
    fn: Callable[..., Any], sig: inspect.Signature, problems: list[str]
) -> dict[str, Any]:
    """The annotations that resolve; a problem naming each parameter whose one does not.

    A string annotation is evaluated in ``fn``'s module, as ``get_type_hints``
    does; an unresolvable return annotation only turns structured output off.
    """
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    hints: dict[str, Any] = {}
    items = [(n, p.annotation) for n, p in sig.parameters.items()]
    items.append(("return", sig.return_annotation))
    for name, annotation in items:
        if annotation is inspect.Parameter.empty:
            continue
        # A quoted annotation under `from __future__ import annotations` is a string
        # twice over: evaluate until it is not one, as get_type_hints does.
        for _ in range(3):
            if not isinstance(annotation, str):
                break
            try:
                annotation = eval(annotation, dict(namespace))
            except Exception as exc:
                if name != "return":
                    problems.append(
                        f"parameter {name!r}: cannot resolve its annotation {annotation!r} "
                        f"({type(exc).__name__}: {exc})"
                    )
                break
        if not isinstance(annotation, str):
            hints[name] = annotation
    return hints
