"""``server.tools``: the registered tools of one server, changeable at run time.

The counterpart of :class:`~.resources.ResourceManager` and
:class:`~.prompts.PromptManager`; ``tools/list`` reads its listing, cached per
revision until the tools change, and ``tools/call`` looks a tool up in it.

Listeners (:meth:`ToolManager.add_listener`) hear of every ``add`` and
``remove``: the seam a live link to these tools (``mcpkit.compose.mount``)
is built on, with no polling and no per-call cost.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..protocol.versions import Revision
from .methods import shape_listing
from .scopes import checked_scopes
from .tool_warnings import warn_if_unclear
from .tools import ToolDefinition

if TYPE_CHECKING:
    from .server import MCPServer
    from .visibility import VisibilityRules

__all__ = ["ToolListener", "ToolManager"]

#: ``listener(name, tool)``: ``tool`` was added under ``name`` (replacing any), or None
#: when the tool ``name`` was removed.
ToolListener = Callable[[str, ToolDefinition | None], None]


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
        #: Names of the tools the server's own rules hide (.visibility); empty without rules.
        self.hidden: set[str] = set()
        #: Name -> version -> tool, for the names registered with a ``version`` (as prompts
        #: are): ``by_name`` holds the latest registered, which is listed; a call that names
        #: a version gets that one. Empty until a versioned tool is added.
        self.versions: dict[str, dict[str | None, ToolDefinition]] = {}
        self._listeners: list[ToolListener] = []

    def add_listener(self, listener: ToolListener) -> ToolListener:
        """Call ``listener(name, tool)`` after every ``add`` (``tool`` the one added) and
        ``remove`` of a tool that was there (``tool`` None), in the order listeners were added.

        Listeners run synchronously, inside ``add``/``remove``: they must not block.
        A listener that raises makes ``add``/``remove`` raise (after the change is made).
        """
        self._listeners.append(listener)
        return listener

    def remove_listener(self, listener: ToolListener) -> None:
        """Stop calling ``listener`` (added with :meth:`add_listener`); absent is no error."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def add(self, tool: ToolDefinition) -> ToolDefinition:
        if tool.scopes:  # checked again: a ToolDefinition may be built by hand
            tool.scopes = self.scoped[tool.name] = checked_scopes(
                f"tool {tool.name!r}", tool.scopes
            )
        else:
            self.scoped.pop(tool.name, None)
        visibility = self._server.visibility
        if not tool.enabled:
            visibility.disable_at_registration("tools", tool.name)
        if visibility.hides_any and not visibility.visible("tools", tool.name, tool.tags, None):
            self.hidden.add(tool.name)
        else:
            self.hidden.discard(tool.name)
        if tool.version is not None or tool.name in self.versions:
            self.versions.setdefault(tool.name, {})[tool.version] = tool
        self.by_name[tool.name] = tool
        self._listing.clear()
        warn_if_unclear(tool)  # no description, untyped parameters: see .tool_warnings
        for listener in self._listeners:
            listener(tool.name, tool)
        return tool

    def remove(self, name: str) -> ToolDefinition | None:
        self._listing.clear()
        self.scoped.pop(name, None)
        self.hidden.discard(name)
        self.versions.pop(name, None)  # every version of it
        removed = self.by_name.pop(name, None)
        if removed is not None:
            for listener in self._listeners:
                listener(name, None)
        return removed

    def get(self, name: str, version: str | None = None) -> ToolDefinition | None:
        """The tool ``name`` (its ``version`` when given; else the latest registered)."""
        if version is None:
            return self.by_name.get(name)
        return self.versions.get(name, {}).get(version)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(list(self.by_name.values()))

    def __len__(self) -> int:
        return len(self.by_name)

    def listing(self, revision: Revision) -> list[dict[str, Any]]:
        """``tools/list`` entries shaped for ``revision``, without those the server's rules
        hide (cached until the tools or the rules change)."""
        cached = self._listing.get(revision.name)
        if cached is None:
            hidden = self.hidden
            cached = [
                shape_listing(t.describe(), revision)
                for t in self.by_name.values()
                if not hidden or t.name not in hidden
            ]
            self._listing[revision.name] = cached
        return cached

    def listing_for(self, own: VisibilityRules, revision: Revision) -> list[dict[str, Any]]:
        """``tools/list`` entries for a caller with rules of its own (.visibility)."""
        visible = self._server.visibility.visible
        return [
            shape_listing(t.describe(), revision)
            for t in self.by_name.values()
            if visible("tools", t.name, t.tags, own)
        ]

    def refresh_hidden(self) -> None:
        """The server's visibility rules changed: recompute :attr:`hidden` and the listing."""
        visibility = self._server.visibility
        self.hidden = {
            t.name
            for t in self.by_name.values()
            if not visibility.visible("tools", t.name, t.tags, None)
        }
        self._listing.clear()

    async def notify_list_changed(self) -> None:
        """Tell every session the tool list changed (after ``add``/``remove`` at run time)."""
        self._listing.clear()
        await self._server.broadcast("notifications/tools/list_changed")
