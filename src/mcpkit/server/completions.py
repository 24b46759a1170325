"""``completion/complete``: argument suggestions for prompts and resource templates."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..errors import InvalidParams
from ..protocol.jsonrpc import json_type

__all__ = ["MAX_VALUES", "CompletionRegistry"]

MAX_VALUES = 100  # server/utilities/completion: at most 100 values per response


class CompletionRegistry:
    def __init__(self) -> None:
        # (ref type, name or uri template, argument name or None) -> handler
        self.handlers: dict[tuple[str, str, str | None], Callable[..., Any]] = {}
        #: Called as ``listener(kind, target, argument, fn)`` after each ``add``.
        self.listeners: list[Callable[[str, str, str | None, Callable[..., Any]], None]] = []

    def add_listener(
        self, listener: Callable[[str, str, str | None, Callable[..., Any]], None]
    ) -> None:
        """Call ``listener(kind, target, argument, fn)`` after each completion is added."""
        self.listeners.append(listener)

    def __bool__(self) -> bool:
        return bool(self.handlers)

    def add(self, kind: str, target: str, argument: str | None, fn: Callable[..., Any]) -> None:
        self.handlers[(kind, target, argument)] = fn
        for listener in self.listeners:
            listener(kind, target, argument, fn)

    def serves(self, params: dict[str, Any]) -> bool:
        """Whether a completion/complete with ``params`` has a handler here (else a source's)."""
        ref, arg = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(arg, dict):
            return True  # malformed: answered (refused) here
        target = ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri")
        kind, name = ref.get("type"), arg.get("name")
        return (kind, target, name) in self.handlers or (kind, target, None) in self.handlers

    async def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        ref = params.get("ref")
        arg = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(arg, dict) or "name" not in arg:
            raise InvalidParams("completion/complete needs 'ref' and 'argument' objects")
        kind = ref.get("type")
        if kind == "ref/prompt":
            target = ref.get("name")
        elif kind == "ref/resource":
            target = ref.get("uri")
        else:
            raise InvalidParams(f"Unknown completion reference type: {kind!r}")
        if not isinstance(target, str):
            raise InvalidParams("completion reference needs a name (prompts) or uri (resources)")
        name = arg["name"]
        value = arg.get("value", "")
        if type(name) is not str or type(value) is not str:
            raise InvalidParams(
                "completion/complete: 'argument.name' and 'argument.value' must be strings"
            )
        context = params.get("context")
        if context is None:
            context = {}
        elif type(context) is not dict:
            raise InvalidParams(
                f"completion/complete: 'context' must be an object, got {json_type(context)}"
            )
        arguments = context.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            raise InvalidParams(
                f"completion/complete: 'context.arguments' must be an object, got {json_type(arguments)}"
            )
        handler = self.handlers.get((kind, target, name)) or self.handlers.get((kind, target, None))
        if handler is None:
            return {"completion": {"values": [], "total": 0, "hasMore": False}}
        result = _call(handler, argument=name, value=value, arguments=dict(arguments))
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, dict):
            values = [str(v) for v in result.get("values", [])]
            total = result.get("total")
            if not isinstance(total, int) or isinstance(total, bool):
                total = len(values)
            has_more = bool(result.get("hasMore", result.get("has_more", False)))
        else:
            values = [str(v) for v in (result or [])]
            total = len(values)
            has_more = False
        if len(values) > MAX_VALUES:
            values = values[:MAX_VALUES]
            has_more = True
        return {"completion": {"values": values, "total": total, "hasMore": has_more}}


def _call(fn: Callable[..., Any], **available: Any) -> Any:
    """Call ``fn`` with whichever of ``argument``, ``value``, ``arguments`` it declares."""
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return fn(**available)
    named = {k: v for k, v in available.items() if k in params}
    if named:
        return fn(**named)
    positional = [
        p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    args = (
        [available["argument"], available["value"], available["arguments"]][-len(positional) :]
        if positional
        else []
    )
    if len(positional) == 1:
        args = [available["value"]]
    elif len(positional) == 2:
        args = [available["argument"], available["value"]]
    return fn(*args)
