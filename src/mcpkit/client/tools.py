"""``Tool``: one server's tool as a Python awaitable, for agents and scripts.

>>> result = await tools["weather_forecast"](city="Tokyo")        # doctest: +SKIP
>>> result = await tools["weather_forecast"].call({"city": "Tokyo"}, timeout=5)  # doctest: +SKIP

A call returns the tool's ``structuredContent`` when it sent one (2025-06-18
server/tools § structured content), otherwise its ``content`` list. A result
with ``isError: true`` raises :class:`~mcpkit.errors.ToolCallError` carrying
that content, or is returned like any result when the tool was made with
``raise_on_error=False`` (an agent loop usually wants to show the error to
the model rather than stop).
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ToolCallError
from .handlers import ProgressCallback

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["Tool", "tool_error", "tool_output"]


class Tool:
    """A tool of one server, callable as ``await tool(**arguments)``.

    ``name`` is the name an agent sees (``server_tool``); ``server_name`` and
    ``tool_name`` are its parts. ``input_schema``, ``output_schema``,
    ``annotations`` and ``meta`` are the definition's fields as the server sent
    them; ``definition`` is the whole definition.
    """

    __slots__ = ("_connection", "definition", "name", "raise_on_error", "server_name", "tool_name")

    def __init__(
        self,
        connection: ServerConnection,
        definition: Mapping[str, Any],
        *,
        name: str,
        raise_on_error: bool = True,
    ) -> None:
        self._connection = connection
        self.definition = dict(definition)
        self.name = name
        self.server_name = connection.name
        self.tool_name: str = self.definition["name"]
        self.raise_on_error = raise_on_error

    @property
    def title(self) -> str | None:
        title = self.definition.get("title")
        if isinstance(title, str):
            return title
        annotations = self.annotations or {}
        legacy = annotations.get("title")  # 2025-03-26 put the title in the annotations
        return legacy if isinstance(legacy, str) else None

    @property
    def description(self) -> str:
        description = self.definition.get("description")
        return description if isinstance(description, str) else ""

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = self.definition.get("inputSchema")
        return schema if isinstance(schema, dict) else {"type": "object"}

    @property
    def output_schema(self) -> dict[str, Any] | None:
        schema = self.definition.get("outputSchema")
        return schema if isinstance(schema, dict) else None

    @property
    def annotations(self) -> dict[str, Any] | None:
        annotations = self.definition.get("annotations")
        return annotations if isinstance(annotations, dict) else None

    @property
    def meta(self) -> dict[str, Any] | None:
        meta = self.definition.get("_meta")
        return meta if isinstance(meta, dict) else None

    def __call__(self, /, **arguments: Any) -> Coroutine[Any, Any, Any]:
        """``await tool(city="Tokyo")``: the arguments are the tool's own."""
        return self.call(arguments)

    async def call(
        self,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        raise_on_error: bool | None = None,
    ) -> Any:
        """Call the tool; ``timeout`` overrides the server's for this call."""
        result = await self._connection.client.call_tool(
            self.tool_name, arguments or {}, timeout=timeout, progress=progress
        )
        if result.get("isError") is True:
            if self.raise_on_error if raise_on_error is None else raise_on_error:
                raise tool_error(result, tool=self.tool_name, server=self.server_name)
        return tool_output(result)

    def __repr__(self) -> str:
        return f"<Tool {self.name!r} ({self.tool_name!r} on {self.server_name!r})>"


def tool_output(result: Mapping[str, Any]) -> Any:
    """What a call gives back: ``structuredContent`` when present, else the content."""
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    content = result.get("content")
    return content if isinstance(content, list) else []


def tool_error(result: Mapping[str, Any], *, tool: str, server: str) -> ToolCallError:
    """The exception for an ``isError`` result; its message is the error's text."""
    texts = [
        block["text"]
        for block in result.get("content") or ()
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    detail = "\n".join(texts) or "(no text in the error result)"
    return ToolCallError(
        f"tool {tool!r} on MCP server {server!r} failed: {detail}",
        tool=tool,
        server=server,
        result=dict(result),
    )
