"""Component sources: tools, resources and prompts a server serves from elsewhere, per session.

A server's own components live in its registries (``server.tools``,
``server.resources``, ``server.prompts``, ``server.completions``) and are the
same for every session. A *component source* adds components that may differ
per session: a proxy (``mcpkit.compose.proxy``) keeps one connection to another
server per downstream session and serves what that server has.

The list and call handlers of :mod:`.methods` consult the sources, in the order
they were added (``server.add_component_source``):

- a listing (``tools/list``, ``resources/list``, ``resources/templates/list``,
  ``prompts/list``) is the server's own entries followed by each source's
  :meth:`ComponentSource.list_components`, then paginated as one list;
- a call (``tools/call``, ``resources/read``, ``prompts/get``,
  ``completion/complete``) for a component the server does not have itself is
  offered to each source's :meth:`ComponentSource.serve` until one answers
  (the server's own components always win); when none does, the usual
  not-found error is raised;
- ``resources/subscribe`` and ``resources/unsubscribe`` are recorded on the
  session as always (``session.subscriptions``), then offered to the sources the
  same way, so that one holding the resource can follow it where it lives (the
  answer is ``{}`` either way; sending ``notifications/resources/updated`` to
  the session is then the source's part);
- :meth:`ComponentSource.session_closed` is called when a session ends, so that
  a source can release what it holds for it;
- a 2026-07-28 ``subscriptions/listen`` (which has no subscribe request to offer)
  is offered to each source that is also a
  :class:`~mcpkit.server.stateless.listen.ListeningSource`, with what the
  stream was granted, before it is acknowledged: the source follows those items
  where they live and sends their notifications on the stream.

A server without sources pays one attribute test on a listing and nothing on a
call to one of its own components: the sources are consulted only on the
not-found path. Middleware wraps the handlers, so it sees the sourced calls too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from ..errors import ConfigurationError

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    import httpx

    from ..compose.proxy import ProxyTarget
    from .request import Request
    from .server import MCPServer
    from .session import ServerSession

__all__ = [
    "ComponentKind",
    "ComponentSource",
    "ServerSources",
    "listed_by_sources",
    "served_by_sources",
]

#: The listing keys a source adds entries to; ``"completions"`` names completion/complete.
ComponentKind: TypeAlias = Literal[
    "tools", "resources", "resourceTemplates", "prompts", "completions"
]


@runtime_checkable
class ComponentSource(Protocol):
    """Components served from elsewhere, possibly different for each session.

    ``kinds`` names what the source may serve (``"tools"``, ``"resources"``,
    ``"resourceTemplates"``, ``"prompts"``, ``"completions"``): the server
    advertises the matching capabilities even when it has no such component
    of its own.
    """

    kinds: frozenset[str]

    async def list_components(self, session: ServerSession, kind: str) -> list[dict[str, Any]]:
        """The entries of ``kind`` for ``session``, in the newest revision's shape.

        The handler shapes them for the session's revision and paginates them
        with the server's own; entries the caller may not see are the source's
        to leave out.
        """
        ...

    async def serve(self, session: ServerSession, request: Request) -> dict[str, Any] | None:
        """The result of ``request`` (a call, read, get, completion, subscribe or
        unsubscribe), or None: not mine.

        An :class:`~mcpkit.errors.MCPError` raised here is the caller's JSON-RPC
        error, code included.
        """
        ...

    def session_closed(self, session: ServerSession) -> None:
        """``session`` ended: release what the source holds for it (must not block)."""
        ...


class ServerSources:
    """Mixed into ``MCPServer``: its component sources (none by default), and the servers
    built from elsewhere: ``proxy``, ``from_config``, ``from_openapi``, ``from_fastapi``."""

    #: The sources, in the order added; read by the handlers (an empty tuple: none).
    component_sources: tuple[ComponentSource, ...] = ()
    #: The kinds the sources together may serve (for the capabilities).
    sourced_kinds: frozenset[str] = frozenset()

    def add_component_source(self, source: ComponentSource) -> ComponentSource:
        """Consult ``source`` after the server's own components (and earlier sources)."""
        if not isinstance(source, ComponentSource):
            raise ConfigurationError(
                "a component source needs kinds, list_components, serve and session_closed, "
                f"not {type(source).__name__}"
            )
        self.component_sources = (*self.component_sources, source)
        self.sourced_kinds = self.sourced_kinds | frozenset(source.kinds)
        return source

    def remove_component_source(self, source: ComponentSource) -> None:
        """Stop consulting ``source``; absent is no error."""
        self.component_sources = tuple(s for s in self.component_sources if s is not source)
        kinds: frozenset[str] = frozenset()
        for s in self.component_sources:
            kinds |= frozenset(s.kinds)
        self.sourced_kinds = kinds

    @classmethod
    def proxy(cls, target: ProxyTarget, *, name: str = "proxy", **options: Any) -> MCPServer:
        """A server serving what ``target`` (a URL, a command line, an ``mcpServers``
        entry, an ``MCPServer`` or a ``Client``) serves: ``mcpkit.compose.proxy``, which has the rules
        and the other ``options`` (``upstream_version``, ``pool_size``, ...)."""
        from ..compose.proxy import proxy

        return proxy(target, name=name, **options)

    @classmethod
    def from_config(
        cls,
        config: str | os.PathLike[str] | Mapping[str, Any],
        *,
        name: str = "gateway",
        eager: bool = False,
        include: Mapping[str, Sequence[str]] | None = None,
        exclude: Mapping[str, Sequence[str]] | None = None,
        retry_after: float = 30.0,
        connect_timeout: float = 10.0,
    ) -> MCPServer:
        """A gateway: every server of an ``mcpServers`` file (a path, or its dict) proxied
        under its name: ``mcpkit.compose.gateway.from_config``, which has the rules."""
        from ..compose.gateway import from_config

        return from_config(
            config,
            name=name,
            eager=eager,
            include=include,
            exclude=exclude,
            retry_after=retry_after,
            connect_timeout=connect_timeout,
        )

    @classmethod
    def from_openapi(
        cls,
        spec: Mapping[str, Any] | str | bytes | Path,
        *,
        client: httpx.AsyncClient,
        **options: Any,
    ) -> MCPServer:
        """A server calling the operations of the OpenAPI document ``spec`` through
        ``client`` (an ``httpx.AsyncClient``): ``mcpkit.compose.openapi.from_openapi``,
        which has the options and rules (needs the ``openapi`` extra)."""
        from ..compose.openapi import from_openapi

        return from_openapi(spec, client=client, **options)

    @classmethod
    def from_fastapi(cls, app: Any, **options: Any) -> MCPServer:
        """A server calling ``app``'s operations in process (no socket):
        ``mcpkit.compose.openapi.from_fastapi`` (needs the ``openapi`` extra)."""
        from ..compose.openapi import from_fastapi

        return from_fastapi(app, **options)


async def listed_by_sources(session: ServerSession, kind: ComponentKind) -> list[dict[str, Any]]:
    """Every source's entries of ``kind`` for ``session``, in the sources' order."""
    entries: list[dict[str, Any]] = []
    for source in session.server.component_sources:
        if kind in source.kinds:
            entries.extend(await source.list_components(session, kind))
    return entries


async def served_by_sources(
    session: ServerSession, request: Request, kind: ComponentKind
) -> dict[str, Any] | None:
    """The first source's answer to ``request`` (of a component of ``kind``); None: no source's."""
    for source in session.server.component_sources:
        if kind in source.kinds:
            result = await source.serve(session, request)
            if result is not None:
                return result
    return None
