"""Size limits per tool: arguments and results over a bound get a clear error.

::

    from mcpkit.middleware import size_limits

    server.add_middleware(
        size_limits(max_arguments=64_000, max_result=1_000_000, per_tool={"upload": (10_000_000, None)})
    )

Sizes are of the JSON encoding (UTF-8 bytes), as the wire carries them. A
``tools/call`` whose ``arguments`` are over the tool's bound is refused before
the tool runs with ``-32602`` Invalid params (the request is what is wrong;
``data`` holds ``tool``, ``size`` and ``limit``). A result over the bound is
replaced by a tool error (``isError``) saying so (2025-11-25 server/tools § error
handling: an execution problem the model can act on, by asking for less); the
tool has run. ``per_tool`` maps a tool name to ``(max_arguments, max_result)``, a
None keeping the default; a bound of None is no bound. The server's transport
limits (``ServerLimits``, the HTTP body size) still apply on top.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from ..errors import ConfigurationError, InvalidParams
from ..server.middleware import CallNext, Middleware, MiddlewareContext

__all__ = ["size_limits"]

Bound = int | None


def _check(label: str, value: int | None) -> Bound:
    if value is not None and (type(value) is not int or value < 1):
        raise ConfigurationError(f"size_limits: {label} must be a positive integer or None")
    return value


def _size(value: Any) -> int:
    try:
        return len(orjson.dumps(value))
    except TypeError:  # an integer beyond 64 bits: the standard library encodes it
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def size_limits(
    *,
    max_arguments: int | None = None,
    max_result: int | None = None,
    per_tool: Mapping[str, tuple[int | None, int | None]] | None = None,
) -> Middleware:
    """A middleware bounding each tool's arguments and result, in bytes of JSON."""
    default = (_check("max_arguments", max_arguments), _check("max_result", max_result))
    bounds: dict[str, tuple[Bound, Bound]] = {}
    for tool, pair in (per_tool or {}).items():
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ConfigurationError(
                f"size_limits: per_tool[{tool!r}] must be (max_arguments, max_result)"
            )
        args, result = pair
        bounds[tool] = (
            default[0] if args is None else _check(f"per_tool[{tool!r}][0]", args),
            default[1] if result is None else _check(f"per_tool[{tool!r}][1]", result),
        )

    async def limited(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        tool = ctx.params.get("name")
        max_args, max_res = bounds.get(tool, default) if isinstance(tool, str) else default
        if max_args is not None:
            size = _size(ctx.params.get("arguments") or {})
            if size > max_args:
                raise InvalidParams(
                    f"Invalid params: the arguments of tool {tool!r} are {size} bytes of "
                    f"JSON, over its limit of {max_args}",
                    data={"tool": tool, "size": size, "limit": max_args},
                )
        result = await call_next(ctx)
        if max_res is None or result.get("resultType", "complete") != "complete":
            return result
        size = _size(result)
        if size <= max_res:
            return result
        text = (
            f"The result of tool {tool!r} was {size} bytes of JSON, over its limit of "
            f"{max_res}; ask for less (a narrower query, a page, a summary)."
        )
        return {"content": [{"type": "text", "text": text}], "isError": True}

    return limited
