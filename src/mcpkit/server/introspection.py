"""What a server tells about itself without a client (Mastra's introspection API).

``MCPServer`` mixes :class:`ServerIntrospection` in: its id and metadata, Mastra's
``ServerInfo``/``ServerDetail`` shapes, a registry ``server.json``, the tool
descriptions, and running one tool with no transport at all (tests, agents in the
same process). None of it is on the MCP request path, so it lives apart from the
object that serves requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import InvalidParams
from .context import Context, _current
from .metadata import ServerMetadata
from .session import Request, ServerSession

if TYPE_CHECKING:
    from ..protocol.versions import Revision
    from .tools import ToolDefinition

__all__ = ["ServerIntrospection"]


class _Tools(Protocol):
    """What introspection reads of ``server.tools`` (a ``ToolManager``)."""

    def get(self, name: str) -> ToolDefinition | None: ...
    def __iter__(self) -> Iterator[ToolDefinition]: ...


class ServerIntrospection:
    """Mixed into ``MCPServer``; the attributes below are the server's own."""

    name: str
    version: str
    description: str | None
    website_url: str | None
    title: str | None
    icons: list[dict[str, Any]] | None
    debug: bool
    _implementation_info: dict[str | None, tuple[tuple[Any, ...], dict[str, Any]]]
    tools: _Tools
    _metadata: ServerMetadata

    if TYPE_CHECKING:

        def capabilities(self, revision: Revision | None = None) -> dict[str, Any]: ...

    def implementation_info(self, revision: Revision | None = None) -> dict[str, Any]:
        """``serverInfo`` (an ``Implementation``): ``title`` is 2025-06-18, the rest 2025-11-25.

        Every 2026-07-28 result carries it: built once per revision, and again only
        when one of the fields it is made of was reassigned. The dict is shared:
        callers must not change it.
        """
        key = (self.name, self.version, self.title, self.description, self.website_url, self.icons)
        name = revision.name if revision is not None else None
        cached = self._implementation_info.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title and (revision is None or revision.titles):
            info["title"] = self.title
        if revision is None or revision.icons:
            for field, value in (
                ("description", self.description),
                ("websiteUrl", self.website_url),
                ("icons", self.icons),
            ):
                if value:
                    info[field] = value
        self._implementation_info[name] = (key, info)
        return info

    @property
    def id(self) -> str:
        """The server's id: the ``id`` option slugified, or a UUID; it never changes."""
        return self._metadata.id

    @property
    def metadata(self) -> ServerMetadata:
        """Repository, release date, packages and remotes (see :mod:`.metadata`)."""
        return self._metadata

    def get_server_info(self) -> dict[str, Any]:
        """Mastra's ``ServerInfo``: id, name, description, repository, version_detail.

        ``version`` and ``capabilities`` are there too, for a quick look.
        """
        meta = self._metadata
        info: dict[str, Any] = {"id": meta.id, "name": self.name}
        if self.description is not None:
            info["description"] = self.description
        if meta.repository is not None:
            info["repository"] = meta.repository.to_dict()
        info["version_detail"] = {
            "version": self.version,
            "release_date": meta.release_date,
            "is_latest": meta.is_latest,
        }
        info["version"] = self.version
        info["capabilities"] = self.capabilities()
        return info

    def get_server_detail(self) -> dict[str, Any]:
        """Mastra's ``ServerDetail``: the info plus package_canonical, packages, remotes."""
        meta = self._metadata
        detail = self.get_server_info()
        if meta.package_canonical is not None:
            detail["package_canonical"] = meta.package_canonical
        detail["packages"] = [p.to_detail() for p in meta.packages]
        detail["remotes"] = [r.to_detail() for r in meta.remotes]
        return detail

    def registry_json(
        self, *, name: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """A ``server.json`` for the official MCP registry, validated first.

        ``name`` is the registry name (reverse DNS, one ``/``); by default the
        server ``id`` when it is one, else ``io.github.<owner>/<repo>`` from a
        GitHub ``repository``. Raises :class:`~.metadata.ServerJsonError`
        naming every field the registry would reject.
        """
        from .metadata import registry_document, registry_name_from_repository

        return registry_document(
            name=name,
            fallback_names=[self.id, registry_name_from_repository(self._metadata.repository)],
            description=self.description,
            version=self.version,
            website_url=self.website_url,
            metadata=self._metadata,
            meta=meta,
        )

    def get_tool_list_info(self) -> dict[str, Any]:
        return {"tools": [dict(t.describe()) for t in self.tools]}

    def get_tool_info(self, name: str) -> dict[str, Any] | None:
        tool = self.tools.get(name)
        return dict(tool.describe()) if tool is not None else None

    async def execute_tool(
        self, name: str, args: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Validate and run a tool without a transport; returns the ``CallToolResult`` dict.

        No client is connected: the tool's ``ctx.elicit``, ``ctx.sample``,
        ``ctx.list_roots`` and ``ctx.ping`` raise :class:`~mcpkit.errors.CapabilityError`
        saying so (a tool error if uncaught); logging and progress go nowhere.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise InvalidParams(f"Unknown tool: {name}")
        session = ServerSession(cast(Any, self), stateless=True)  # self is the MCPServer
        session.detached = True
        req = Request(
            session, {"id": 0, "method": "tools/call", "params": {"name": name}}, _no_send, None
        )
        req.task = asyncio.current_task()
        ctx = Context(session, req)
        token = _current.set(ctx)
        try:
            return await tool.run(args, ctx, debug=self.debug)
        finally:
            _current.reset(token)


async def _no_send(message: dict[str, Any]) -> None:
    return None
