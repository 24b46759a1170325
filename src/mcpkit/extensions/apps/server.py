"""The MCP Apps extension on the server: UI resources, tools that name them, and the checks.

A tool declares its app with ``meta=ui_tool_meta("ui://...")`` (``_meta.ui``
on its definition, the core's ``tools`` seam); :func:`add_apps` then serves
each :class:`UiResource` through ``server.resource`` with the extension's MIME
type and ``_meta.ui`` (on the listing and on the read contents, as the
package's ``registerAppResource`` does), checks every tool that names a UI
against the resources that exist, and adds the ``io.modelcontextprotocol/ui``
:class:`~mcpkit.Extension` so ``capabilities.extensions`` advertises it on
both eras. Problems are raised together as
:class:`~mcpkit.errors.RegistrationError`; the extension's lifespan checks the
tools again at start-up, for tools registered after :func:`add_apps` (the
server then fails to start with a ``LifespanError`` caused by the
``RegistrationError``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import RegistrationError
from ...server.extension import Extension
from .records import (
    EXTENSION_ID,
    MIME_TYPE,
    Csp,
    Permissions,
    ResourceMeta,
    Visibility,
    resource_meta_problems,
    tool_meta_problems,
    tool_resource_uri,
    ui_capability,
    ui_uri_problem,
)

if TYPE_CHECKING:
    from ...server.context import Context
    from ...server.server import MCPServer

__all__ = ["UiResource", "add_apps", "apps_extension", "client_renders_apps", "ui_tool_meta"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UiResource:
    """One app's HTML, served at a ``ui://`` URI with its ``_meta.ui``.

    ``html`` is the page (a string, or a function returning it at each read).
    ``csp`` lists the origins it may reach, ``permissions`` the sandbox
    features it asks for, ``domain`` a host-specific dedicated origin and
    ``prefers_border`` whether it wants the host's border (McpUiResourceMeta).
    """

    uri: str
    html: str | Callable[[], str]
    name: str | None = None
    title: str | None = None
    description: str | None = None
    csp: Csp | None = None
    permissions: Permissions | None = None
    domain: str | None = None
    prefers_border: bool | None = None

    def ui_meta(self) -> dict[str, Any]:
        """The ``_meta.ui`` object of this resource (wire form)."""
        return ResourceMeta(
            csp=self.csp,
            permissions=self.permissions,
            domain=self.domain,
            prefers_border=self.prefers_border,
        ).to_dict()

    def problems(self) -> list[str]:
        """What is wrong with this declaration, one sentence each."""
        label = f"UI resource {self.uri!r}"
        out: list[str] = []
        problem = ui_uri_problem(self.uri)
        if problem is not None:
            out.append(problem)
        if isinstance(self.html, str):
            if not self.html.strip():
                out.append(f"{label}: the HTML is empty")
        elif not callable(self.html):
            out.append(f"{label}: html must be a string or a function returning one")
        if self.csp is not None and not isinstance(self.csp, Csp):
            out.append(f"{label}: csp must be a Csp")
        elif self.permissions is not None and not isinstance(self.permissions, Permissions):
            out.append(f"{label}: permissions must be Permissions")
        else:
            out.extend(resource_meta_problems(label, self.ui_meta()))
        return out


def client_renders_apps(ctx: Context) -> bool:
    """Whether the client of this request renders MCP Apps (declared the extension).

    For graceful degradation (extensions overview): a tool may return richer
    text to a client that shows no app. Works on both eras, from the
    ``initialize`` capabilities or the request's ``_meta`` envelope.
    """
    return ui_capability(ctx.client_capabilities) is not None


def ui_tool_meta(
    resource_uri: str,
    *,
    visibility: Sequence[Visibility] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A tool's ``_meta`` naming its app: ``{"ui": {"resourceUri": ..., "visibility": ...}}``.

    ``visibility``: ``"model"`` (the agent sees and calls it), ``"app"`` (the
    app may call it); the extension's default is both. ``meta`` holds other
    ``_meta`` keys to keep. Checked by :func:`add_apps`.
    """
    ui: dict[str, Any] = {"resourceUri": resource_uri}
    if visibility is not None:
        ui["visibility"] = list(visibility)
    return {**(meta or {}), "ui": ui}


def _tool_problems(server: MCPServer, known: set[str]) -> list[str]:
    problems: list[str] = []
    for tool in server.tools:
        label = f"tool {tool.name!r}"
        found = tool_meta_problems(label, tool.meta)
        problems.extend(found)
        uri = tool_resource_uri(tool.meta)
        if not found and isinstance(uri, str) and uri not in known:
            problems.append(f"{label}: names UI resource {uri!r}, which is not served")
    return problems


def _served_ui(server: MCPServer) -> set[str]:
    """The ``ui://`` resources the server serves with the extension's MIME type."""
    return {
        uri
        for uri, res in server.resources.static.items()
        if uri.startswith("ui://") and res.mime_type == MIME_TYPE
    }


def apps_extension() -> Extension:
    """The ``io.modelcontextprotocol/ui`` extension (no settings), with a start-up check."""

    @contextlib.asynccontextmanager
    async def check(server: MCPServer) -> AsyncIterator[None]:
        problems = _tool_problems(server, _served_ui(server))
        if problems:
            raise RegistrationError(problems)
        yield

    return Extension(identifier=EXTENSION_ID, settings={}, lifespan=check)


def _reader(res: UiResource, ui_meta: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    def read() -> dict[str, Any]:
        html = res.html() if callable(res.html) else res.html
        if not isinstance(html, str):
            raise TypeError(f"UI resource {res.uri!r}: the html function returned no string")
        item: dict[str, Any] = {"uri": res.uri, "mimeType": MIME_TYPE, "text": html}
        if ui_meta:
            item["_meta"] = {"ui": ui_meta}
        return item

    return read


def add_apps(server: MCPServer, resources: Sequence[UiResource]) -> Extension:
    """Serve ``resources``, check the tools that name a UI, and add the extension.

    Every problem is raised at once (:class:`~mcpkit.errors.RegistrationError`):
    a bad ``ui://`` URI, a URI declared twice or already served, a bad
    ``_meta.ui`` on a resource or a tool, a tool naming a UI resource that is
    not served. Nothing is registered when a problem is raised. Returns the
    extension added.
    """
    problems: list[str] = []
    seen: set[str] = set()
    served = set(server.resources.static)
    for res in resources:
        if not isinstance(res, UiResource):
            problems.append(f"a UI resource must be a UiResource, not {type(res).__name__}")
            continue
        problems.extend(res.problems())
        if res.uri in seen:
            problems.append(f"UI resource {res.uri!r} is declared twice")
        elif res.uri in served:
            problems.append(f"UI resource {res.uri!r} is already served by the server")
        seen.add(res.uri)
    if EXTENSION_ID in server.extensions:
        problems.append(f"extension {EXTENSION_ID!r} is added twice")
    problems.extend(_tool_problems(server, seen | _served_ui(server)))
    if problems:
        raise RegistrationError(problems)
    for res in resources:
        ui_meta = res.ui_meta()
        server.resource(
            res.uri,
            name=res.name or res.uri.removeprefix("ui://"),
            title=res.title,
            description=res.description,
            mime_type=MIME_TYPE,
            meta={"ui": ui_meta} if ui_meta else None,
        )(_reader(res, ui_meta))
    return server.add_extension(apps_extension())
