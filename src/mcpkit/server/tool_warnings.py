"""Warnings at registration for a tool a model will find hard to use.

A model chooses a tool by its description and fills its arguments from its
input schema, so a tool without a description, or with a parameter whose
schema says nothing of its type (a Python parameter without an annotation),
works but is called badly. Each such problem is one ``WARNING`` line on the
``mcpkit.registration`` logger when the tool is registered
(:meth:`~.tool_manager.ToolManager.add`), once per function (a mounted copy of
the same tool says nothing again). mcpkit refuses an *agent* without a
description outright; for a tool it warns, since a tool may be self-evident.

The option that silences them is the logger's level, set before the tools are
registered (at the top of the server's module, for ``mcpkit run``)::

    logging.getLogger("mcpkit.registration").setLevel(logging.ERROR)

Nothing here reads the environment: a library object's behaviour stays in the code.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .tools import ToolDefinition

__all__ = ["LOGGER", "unclear_parts", "warn_if_unclear"]

LOGGER: Final = "mcpkit.registration"

log = logging.getLogger(LOGGER)

# Keys by which a property's schema says what its values are.
_TYPED: Final = frozenset(
    {"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "items", "properties", "not"}
)
_warned: weakref.WeakSet[Any] = weakref.WeakSet()


def unclear_parts(tool: ToolDefinition) -> list[str]:
    """What a model would miss in ``tool``: one sentence per problem (empty when clear)."""
    problems: list[str] = []
    if not (tool.description or "").strip():
        problems.append(
            f"tool {tool.name!r} has no description: models choose tools by it "
            "(add a docstring or description=...)"
        )
    properties = tool.input_schema.get("properties")
    if isinstance(properties, Mapping):
        untyped = [
            name
            for name, schema in properties.items()
            if isinstance(schema, Mapping) and not _TYPED & set(schema)
        ]
        if untyped:
            problems.append(
                f"tool {tool.name!r} has untyped parameter(s) {', '.join(untyped)}: models "
                "guess their values (annotate them, e.g. city: str)"
            )
    return problems


def warn_if_unclear(tool: ToolDefinition) -> None:
    """Log :func:`unclear_parts` of a newly registered ``tool``, once per function."""
    if not log.isEnabledFor(logging.WARNING):  # silenced: not even the checks run
        return
    try:
        if tool.execute in _warned:
            return
        _warned.add(tool.execute)
    except TypeError:  # an execute that cannot be weakly referenced: warn each time
        pass
    for problem in unclear_parts(tool):
        log.warning("%s", problem)
