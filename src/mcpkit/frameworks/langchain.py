"""LangChain: an MCP client's tools as LangChain ``BaseTool`` objects.

:func:`langchain_tools` wraps the tools of an ``MCPClient`` as ``StructuredTool``
objects with their JSON schemas as ``args_schema``, for ``model.bind_tools(...)``
and any LangChain or LangGraph agent. Every call goes through the client's one
long-lived session per server (not a session per call). A tool error result
raises ``ToolException`` and the tools are made with ``handle_tool_error=True``,
so the agent gets the error's text as the tool's answer (LangChain's convention
for errors the model should see) instead of an exception ending the run. A tool
that sent structured content answers with it; others with their text. (The
server side, a runnable as an ``ask_*`` tool, is :mod:`mcpkit.adapters.langchain`.)

Requires ``langchain-core``: ``pip install 'mcpkit[langchain]'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._extras import require_extra

with require_extra("langchain", feature="the LangChain tools (mcpkit.frameworks.langchain)"):
    from langchain_core.tools import BaseTool, StructuredTool, ToolException

from ..errors import ToolCallError
from .common import ToolSource, function_names, result_text

if TYPE_CHECKING:
    from ..client.tools import Tool

__all__ = ["langchain_tools", "tools_of"]


async def langchain_tools(source: ToolSource) -> list[BaseTool]:
    """The tools ``source`` (an ``MCPClient``) lists now, as LangChain tools."""
    return tools_of(await source.get_tools())


def tools_of(tools: Mapping[str, Tool]) -> list[BaseTool]:
    """``tools`` (``await mcp.get_tools()``, filtered as you like) as LangChain tools."""
    names = function_names(tools)
    return [_langchain_tool(names[name], tool) for name, tool in tools.items()]


def _langchain_tool(name: str, tool: Tool) -> BaseTool:
    async def run(**arguments: Any) -> Any:
        try:
            output = await tool.call(arguments, raise_on_error=True)
        except ToolCallError as exc:
            raise ToolException(result_text(exc.result) or str(exc)) from None
        if isinstance(output, list):
            return result_text({"content": output})
        return output

    return StructuredTool.from_function(
        coroutine=run,
        name=name,
        description=tool.description or tool.title or name,
        args_schema=tool.input_schema,
        handle_tool_error=True,
        metadata={"mcp_server": tool.server_name, "mcp_tool": tool.tool_name},
    )
