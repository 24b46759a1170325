"""``server.tools``: the registered tools of one server, changeable at run time.

The counterpart of :class:`~.resources.ResourceManager` and
:class:`~.prompts.PromptManager`; ``tools/list`` reads its listing, cached per
revision until the tools change, and ``tools/call`` looks a tool up in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..protocol.versions import Revision
from .methods import shape_listing
from .scopes import checked_scopes
from .tools import ToolDefinition

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = ["ToolManager"]


class ToolManager:
    """``server.tools``: the registered tools, changeable at run time."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        #: Name -> tool: read it (``tools/call`` looks each call's tool up here, a plain
        #: dict on the hot path); change it with :meth:`add` and :meth:`remove`, which
        #: keep the ``tools/list`` cache and the scopes right.
        self.by_name: dict[str, ToolDefinition] = {}
        self._listing: dict[str, list[dict[str, Any]]] = {}
        #: Name -> scopes of the tools that need some; empty on an unscoped server.
        self.scoped: dict[str, frozenset[str]] = {}

    def add(self, tool: ToolDefinition) -> ToolDefinition:
        if tool.scopes:  # checked again: a ToolDefinition may be built by hand
            tool.scopes = self.scoped[tool.name] = checked_scopes(
                f"tool {tool.name!r}", tool.scopes
            )
        else:
            self.scoped.pop(tool.name, None)
        self.by_name[tool.name] = tool
        self._listing.clear()
        return tool

    def remove(self, name: str) -> ToolDefinition | None:
        self._listing.clear()
        self.scoped.pop(name, None)
        return self.by_name.pop(name, None)

    def get(self, name: str) -> ToolDefinition | None:
        return self.by_name.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(list(self.by_name.values()))

    def __len__(self) -> int:
        return len(self.by_name)

    def listing(self, revision: Revision) -> list[dict[str, Any]]:
        """``tools/list`` entries shaped for ``revision`` (cached until the tools change)."""
        cached = self._listing.get(revision.name)
        if cached is None:
            cached = [shape_listing(t.describe(), revision) for t in self.by_name.values()]
            self._listing[revision.name] = cached
        return cached

    async def notify_list_changed(self) -> None:
        """Tell every session the tool list changed (after ``add``/``remove`` at run time)."""
        self._listing.clear()
        await self._server.broadcast("notifications/tools/list_changed")
