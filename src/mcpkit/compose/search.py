"""Tool-search mode: ``tools/list`` shows a search tool and a call tool instead of every tool.

A server with thousands of tools drowns a model in its listing. With
:func:`tool_search`, ``tools/list`` answers with two tools (and any ``pinned``
ones): ``search_tools(query, limit)``, which returns the best-matching tools'
full entries (name, description, input schema), and ``call_tool(name,
arguments)``, which calls one of them. Every real tool stays callable directly
by name: a client that learnt a name from a search calls it as usual.

- **Ranking** is BM25 (:mod:`.bm25`) over each tool's name (counted twice:
  the name says most), title, description, tags and argument names and
  descriptions. BM25 rather than regular expressions: models write words,
  not patterns, and BM25 ranks partial matches ("weather tomorrow" finds
  ``get_forecast`` described as "the weather of the coming days") where a
  pattern only filters. Tags come from the tool's ``tags`` attribute when the
  server's tools have one, and from a ``tags`` list in the entry's ``_meta``
  (:meth:`ToolSearch.tags_of` is the hook).
- **What a search sees is what the caller's listing would have**: the search
  asks the server's own ``tools/list`` handler (``server.methods``, without
  middleware; every page) on the caller's session, so scopes, visibility rules
  and proxied or mounted tools apply as they would to a plain listing. The
  index is built once per distinct listing (its entries are the server's
  cached ones, compared by identity) and kept for the next searches; a listing
  that is new each time (a proxy's upstream entries) is indexed per search.
- **call_tool** serves ``tools/call`` through the server's middleware on the
  caller's session: scopes, visibility and errors are those of a direct call
  (a JSON-RPC error becomes a tool error the model can read).

The listing is replaced by a middleware (``server.add_middleware``, so install
it before serving) answering ``tools/list`` itself: one string comparison for
every other request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from operator import is_
from typing import Any, Final

import orjson

from ..errors import MCPError, ToolError
from ..server.context import Context
from ..server.methods import shape_listing
from ..server.middleware import CallNext, MiddlewareContext
from ..server.scopes import visible
from ..server.server import MCPServer
from ..server.tools import ToolAnnotations, ToolDefinition, create_tool
from .bm25 import BM25Index, tokens
from .component_tools import request_for, served

__all__ = ["ToolSearch", "tool_search"]

_KEPT_INDEXES: Final = 4  # distinct listings (callers' visibility) whose index is kept
_MAX_PAGES: Final = 10_000


class ToolSearch:
    """The search and call tools of one server, and the index behind them."""

    def __init__(
        self,
        server: MCPServer,
        *,
        search_name: str = "search_tools",
        call_name: str = "call_tool",
        limit: int = 5,
        max_limit: int = 50,
        pinned: Sequence[str] = (),
    ) -> None:
        self.server = server
        self.limit = limit
        self.max_limit = max_limit
        self.pinned = tuple(pinned)
        self.own = frozenset({search_name, call_name})
        # Listing entries -> index, most recent first: (entries, index, kept entries).
        self.indexes: list[tuple[list[dict[str, Any]], BM25Index, list[dict[str, Any]]]] = []
        # id(entry) -> (the entry, kept alive so that the id stays its own; its terms).
        self.documents: dict[int, tuple[dict[str, Any], Counter[str]]] = {}
        self.search_tool = create_tool(
            id=search_name,
            description="Search this server's tools by what they do; returns the best "
            f"matches with their input schemas. Call one by name, or with {call_name}.",
            input_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words describing the task"},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": max_limit,
                        "default": limit,
                        "description": "How many tools to return at most",
                    },
                },
                "required": ["query"],
            },
            execute=self.search_tools,
            output_schema={
                "type": "object",
                "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                "required": ["tools"],
            },
            annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        )
        self.call_tool = create_tool(
            id=call_name,
            description=f"Call one of this server's tools by name (find it with {search_name}).",
            input_schema={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name"},
                    "arguments": {"type": "object", "description": "The tool's arguments"},
                },
                "required": ["name"],
            },
            execute=self.call,
        )

    # -- the listing ----------------------------------------------------------------------
    def shown(self, auth_info: Any) -> list[ToolDefinition]:
        """The tools ``tools/list`` shows: the two of search mode, then the pinned ones."""
        tools = [self.search_tool, self.call_tool]
        for name in self.pinned:
            tool = self.server.tools.get(name)
            if tool is not None and visible(
                [{"name": name}], "name", self.server.tools.scoped, auth_info
            ):
                tools.append(tool)
        return tools

    async def listing(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        """Middleware: answer ``tools/list`` with :meth:`shown`; pass the rest on."""
        if ctx.method != "tools/list":
            return await call_next(ctx)
        revision = ctx.session.revision
        return {"tools": [shape_listing(t.describe(), revision) for t in self.shown(ctx.auth_info)]}

    # -- searching ------------------------------------------------------------------------
    async def entries(self, ctx: Context) -> list[dict[str, Any]]:
        """What the caller's ``tools/list`` holds (every page), without middleware."""
        handler = self.server.methods["tools/list"]
        out: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        for _ in range(_MAX_PAGES):
            page = await handler(ctx.session, request_for(ctx, "tools/list", params))
            tools = page.get("tools") or []
            if not out and "nextCursor" not in page:
                return list(tools)
            out.extend(tools)
            cursor = page.get("nextCursor")
            if not cursor:
                break
            params = {"cursor": cursor}
        return out

    def tags_of(self, entry: dict[str, Any]) -> list[str]:
        """The tags of a listed tool: its ``tags`` attribute (the hook for tagged tools)
        and a ``tags`` list in its ``_meta``."""
        tags: list[str] = []
        tool = self.server.tools.get(str(entry.get("name")))
        own = getattr(tool, "tags", None)
        if own:
            tags.extend(str(t) for t in own)
        meta = entry.get("_meta")
        listed = meta.get("tags") if isinstance(meta, dict) else None
        if isinstance(listed, list):
            tags.extend(str(t) for t in listed)
        return tags

    def document(self, entry: dict[str, Any]) -> Counter[str]:
        """The terms of one tool: its name twice, title, description, tags, arguments."""
        name = str(entry.get("name") or "")
        parts = [name, name, str(entry.get("title") or ""), str(entry.get("description") or "")]
        parts.extend(self.tags_of(entry))
        schema = entry.get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(props, dict):
            for arg, sub in props.items():
                parts.append(str(arg))
                if isinstance(sub, dict) and isinstance(sub.get("description"), str):
                    parts.append(sub["description"])
        return Counter(tokens(" ".join(parts)))

    def index_for(self, entries: list[dict[str, Any]]) -> tuple[BM25Index, list[dict[str, Any]]]:
        """The index of ``entries`` (kept per distinct listing) and the entries it ranks."""
        for i, (seen, index, kept) in enumerate(self.indexes):
            if len(seen) == len(entries) and all(map(is_, seen, entries)):
                if i:
                    self.indexes.insert(0, self.indexes.pop(i))
                return index, kept
        kept = [e for e in entries if e.get("name") not in self.own]
        # The terms of an entry seen in an earlier listing are not worked out again
        # (the entries are the server's cached ones: a tool added costs its own terms).
        known, documents = self.documents, {}
        for e in kept:
            seen_before = known.get(id(e))
            documents[id(e)] = (
                seen_before
                if seen_before is not None and seen_before[0] is e
                else (e, self.document(e))
            )
        self.documents = documents
        index = BM25Index([documents[id(e)][1] for e in kept])
        self.indexes.insert(0, (entries, index, kept))
        del self.indexes[_KEPT_INDEXES:]
        return index, kept

    async def search(self, ctx: Context, query: str, limit: int) -> list[dict[str, Any]]:
        """The caller's best ``limit`` tools for ``query``, best first."""
        index, kept = self.index_for(await self.entries(ctx))
        return [kept[i] for i, _score in index.search(tokens(query), limit)]

    async def search_tools(self, query: str, ctx: Context, limit: int | None = None) -> Any:
        wanted = self.limit if limit is None else max(1, min(limit, self.max_limit))
        found = await self.search(ctx, query, wanted)
        value = {"tools": found}
        return {
            "content": [{"type": "text", "text": orjson.dumps(value).decode()}],
            "structuredContent": value,
        }

    async def call(self, name: str, ctx: Context, arguments: dict[str, Any] | None = None) -> Any:
        if name in self.own:
            raise ToolError(f"{name!r} cannot be called through {self.call_tool.name!r}")
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        meta = ctx.request.params.get("_meta")
        if isinstance(meta, dict):  # the caller's progress token: the tool's progress reaches it
            params["_meta"] = meta
        try:
            return await served(ctx, "tools/call", params)
        except MCPError as exc:
            raise ToolError(exc.message) from None


def tool_search(
    server: MCPServer,
    *,
    search_name: str = "search_tools",
    call_name: str = "call_tool",
    limit: int = 5,
    max_limit: int = 50,
    pinned: Sequence[str] = (),
) -> ToolSearch:
    """Put ``server`` in tool-search mode (see the module docstring); install before serving.

    ``limit``: how many tools a search returns unless asked (at most ``max_limit``).
    ``pinned``: tools listed as well (names of the server's own or mounted tools, shown
    to callers whose scopes allow them), for the few a model always needs.
    """
    search = ToolSearch(
        server,
        search_name=search_name,
        call_name=call_name,
        limit=limit,
        max_limit=max_limit,
        pinned=pinned,
    )
    server.add_tool(search.search_tool)
    server.add_tool(search.call_tool)
    server.add_middleware(search.listing)
    return search
