"""Agents as tools: ``MCPServer(agents={"researcher": agent})`` makes tool ``ask_researcher``.

An agent is anything with a ``name``, a non-empty ``description`` and a
``generate(message, *, context)`` method, async or sync (a sync one runs in a
worker thread). Objects from agent frameworks are adapted on registration:
a ``pydantic_ai.Agent`` (:mod:`mcpkit.adapters.pydantic_ai`) and objects with
``ainvoke`` or ``run``, such as LangChain runnables
(:mod:`mcpkit.adapters.langchain`). The adapters import their framework only
when such an object is registered; the frameworks are optional extras.

It lives beside the framework adapters and builds on the server core's public
seams (a ``ToolDefinition`` the server adds); ``MCPServer(agents=...)`` imports
it on first use. The framework adapters build on this module, which imports
none of them at load: each calls :func:`register_agent_adapter` when it is
imported; :func:`as_agent` knows only how to *recognise* a framework's objects
(cheaply, without importing the framework) and the adapter module's name, which
it imports the first time such an object is registered.

The tool's input is ``{"message": string}``; its result is the agent's reply
as one JSON object (``text`` is the answer, other fields are whatever the
agent reports, such as ``usage``), sent both as JSON text and as
``structuredContent`` (2025-06-18 server/tools § structured content).

The agent sees the MCP request through the :class:`~mcpkit.server.context.Context`
passed as ``context``, and, from anywhere below it (its own tools included),
through :func:`mcpkit.current_context` (Mastra's ``mcp.extra``).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from importlib import import_module
from typing import Annotated, Any

from pydantic import Field

from ..errors import ConfigurationError
from ..server.context import Context, run_sync
from ..server.tools import ToolDefinition, tool_from_function
from .base import (
    AgentAdapter,
    AgentLike,
    AgentResponse,
    agent_reply,
    register_agent_adapter,
    registered_adapter,
)

__all__ = [
    "AgentAdapter",
    "AgentLike",
    "AgentResponse",
    "agent_reply",
    "agent_tool",
    "as_agent",
    "register_agent_adapter",
    "tool_name_for_agent",
]

ASK_PREFIX = "ask_"

#: What every ``ask_*`` tool returns: an object with at least the answer text.
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The agent's answer."}},
    "required": ["text"],
}


# -- adapting -------------------------------------------------------------------------------------


def _is_pydantic_ai_agent(obj: Any) -> bool:
    # Only an object built by pydantic-ai can be one, so pydantic-ai is imported already.
    module = sys.modules.get("pydantic_ai.agent")
    abstract = getattr(module, "AbstractAgent", None) if module is not None else None
    return isinstance(abstract, type) and isinstance(obj, abstract)


def _is_runnable(obj: Any) -> bool:
    return callable(getattr(obj, "ainvoke", None)) or callable(getattr(obj, "run", None))


#: The framework adapters mcpkit ships, in the order they are tried: how to recognise the
#: framework's objects, and the module whose import registers the adapter. (A pydantic-ai
#: agent also has ``run``, so it must be recognised before the LangChain-style runnables.)
_FRAMEWORKS: tuple[tuple[Callable[[Any], bool], str], ...] = (
    (_is_pydantic_ai_agent, "mcpkit.adapters.pydantic_ai"),
    (_is_runnable, "mcpkit.adapters.langchain"),
)


def _adapter(module: str) -> AgentAdapter:
    adapter = registered_adapter(module)
    if adapter is None:
        import_module(module)  # registers its adapter
        adapter = registered_adapter(module)
        if adapter is None:
            raise ConfigurationError(f"{module} registered no agent adapter when imported")
    return adapter


def as_agent(obj: Any, *, name: str | None = None, description: str | None = None) -> AgentLike:
    """``obj`` as an agent mcpkit can call, adapting framework objects.

    ``name`` and ``description`` override (or supply) the agent's own, for
    objects that have none, such as most LangChain runnables.
    """
    adapted: AgentLike
    if callable(getattr(obj, "generate", None)):
        if name is None and description is None:
            return obj  # type: ignore[no-any-return]
        adapted = _Renamed(obj, name=name, description=description)
    else:
        module = next((module for is_kind, module in _FRAMEWORKS if is_kind(obj)), None)
        if module is None:
            raise ConfigurationError(
                f"{type(obj).__name__} is not an agent: it needs generate(message, *, context), "
                "or to be a pydantic_ai.Agent, or to have an ainvoke/run method"
            )
        adapted = _adapter(module)(obj, name=name, description=description)
    return adapted


class _Renamed:
    """An agent with its name or description replaced."""

    def __init__(self, agent: Any, *, name: str | None, description: str | None) -> None:
        self.name = name if name is not None else getattr(agent, "name", None)
        self.description = (
            description if description is not None else getattr(agent, "description", None)
        )
        self.generate = agent.generate  # the agent's own method: sync stays sync, async async


def tool_name_for_agent(key: str) -> str:
    return f"{ASK_PREFIX}{key}"


def agent_tool(key: str, agent: Any) -> ToolDefinition:
    """The ``ask_<key>`` tool for ``agent``; raises ``ConfigurationError`` naming ``key``."""
    try:
        adapted = as_agent(agent)
    except ConfigurationError as exc:
        raise ConfigurationError(f"agent {key!r}: {exc}") from None
    description = getattr(adapted, "description", None)
    if not isinstance(description, str) or not description.strip():
        raise ConfigurationError(
            f"agent {key!r}: its description is missing or empty; MCP clients choose tools by "
            "their description, so give the agent one (or wrap it: "
            "as_agent(obj, description=...))"
        )
    agent_name = getattr(adapted, "name", None) or key
    generate = adapted.generate
    is_async = inspect.iscoroutinefunction(generate)
    takes_context = _accepts_context(generate)

    async def ask(
        message: Annotated[str, Field(description="The question or request for the agent.")],
        ctx: Context,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"context": ctx} if takes_context else {}
        if is_async:
            value = await generate(message, **kwargs)
        else:
            value = await run_sync(functools.partial(generate, message), kwargs, ctx)
            if inspect.isawaitable(value):
                value = await value
        return agent_reply(value)

    return tool_from_function(
        ask,
        name=tool_name_for_agent(key),
        description=(
            f"Ask agent '{agent_name}' a question. Agent description: {description.strip()}"
        ),
        output_schema=REPLY_SCHEMA,
    )


def _accepts_context(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and some C callables: assume the protocol
        return True
    return "context" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
