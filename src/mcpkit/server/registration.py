"""The components given to ``MCPServer(...)``: its ``tools``, ``components``, ``agents``, ``workflows``.

Registered in that order; derived tools (an agent's ``ask_*``, a workflow's
``run_*``) come last, so that an explicit tool of the same name wins (Mastra's
rule). Every problem is returned, each naming its tool, for the constructor to
raise together.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, RegistrationError
from .tools import ToolDefinition, tool_from_function

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = ["register_given"]

log = logging.getLogger("mcpkit.server")


def register_given(
    server: MCPServer,
    tools: Mapping[str, ToolDefinition | Callable[..., Any]]
    | Sequence[ToolDefinition | Callable[..., Any]]
    | None,
    components: Sequence[Any] | None,
    agents: Mapping[str, Any] | None,
    workflows: Mapping[str, Any] | None,
) -> list[str]:
    """Register what the constructor was given; the problems, each naming its tool."""
    problems: list[str] = []
    if tools:
        items = tools.items() if isinstance(tools, Mapping) else ((None, t) for t in tools)
        for key, tool in items:
            label = repr(key) if key is not None else f"#{len(server.tools) + 1}"
            try:
                if isinstance(tool, ToolDefinition):
                    server.tools.add(tool)
                elif callable(tool):
                    server.tools.add(tool_from_function(tool, name=key))
                else:
                    problems.append(
                        f"tool {label}: {type(tool).__name__} is not a ToolDefinition or a function"
                    )
            except RegistrationError as exc:  # each problem names the tool already
                problems.extend(exc.problems)
            except Exception as exc:
                problems.append(f"tool {label}: {exc}")
    if components:
        from .declarative import collect

        problems.extend(collect(server, components))
    if agents:
        from ..adapters.agents import agent_tool

        for key, agent in agents.items():
            _add_derived(server, problems, "agent", key, functools.partial(agent_tool, key, agent))
    if workflows:
        from ..workflow.tool import workflow_tool

        for key, wf in workflows.items():
            _add_derived(
                server, problems, "workflow", key, functools.partial(workflow_tool, key, wf)
            )
    return problems


def _add_derived(
    server: MCPServer,
    problems: list[str],
    kind: str,
    key: str,
    build: Callable[[], ToolDefinition],
) -> None:
    """Register a tool derived from an agent or workflow, unless its name is taken."""
    try:
        tool = build()
    except ConfigurationError as exc:
        problems.append(str(exc))
        return
    if tool.name in server.tools:
        log.warning(
            "%s %r: tool name %r is already taken by an explicit tool, which wins; "
            "the %s is not exposed",
            kind,
            key,
            tool.name,
            kind,
        )
        return
    server.tools.add(tool)
