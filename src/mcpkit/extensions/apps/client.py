"""The MCP Apps extension on the client: a tool's UI resource and metadata, for the host.

:func:`ui_for_tool` finds the tool (``tools/list``), reads the ``ui://``
resource its ``_meta.ui.resourceUri`` names (or the legacy
``_meta["ui/resourceUri"]``, which hosts must still read), and returns an
:class:`AppUi`: the HTML and the ``_meta.ui`` to render it with. The resource
metadata on the read contents wins over the listing's, as the extension says;
the listing is only asked for when the contents carry none. It uses the
public ``list_tools``/``list_resources``/``read_resource`` of :class:`Client`,
and :meth:`MCPClient.client` to reach one server of an ``MCPClient``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .records import (
    EXTENSION_ID,
    MIME_TYPE,
    ResourceMeta,
    Visibility,
    tool_resource_uri,
    ui_uri_problem,
)

if TYPE_CHECKING:
    from ...client.client import Client
    from ...client.mcp_client import MCPClient

__all__ = ["AppUi", "ui_client_capabilities", "ui_for_tool"]


@dataclass(frozen=True, slots=True)
class AppUi:
    """What a host needs to render one tool's app."""

    tool_name: str
    resource_uri: str
    html: str
    mime_type: str
    meta: ResourceMeta
    visibility: tuple[Visibility, ...] = ("model", "app")
    tool: Mapping[str, Any] = field(default_factory=dict)


def ui_client_capabilities(*, mime_types: Sequence[str] = (MIME_TYPE,)) -> dict[str, Any]:
    """Client capabilities declaring that this host renders MCP Apps.

    ``Client(capabilities=ui_client_capabilities())`` sends
    ``{"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [...]}}}`` in
    ``initialize`` and in each 2026-07-28 request's ``_meta`` envelope.
    """
    return {"extensions": {EXTENSION_ID: {"mimeTypes": list(mime_types)}}}


async def _tool(client: Client, name: str) -> dict[str, Any] | None:
    for tool in await client.list_tools():
        if tool.get("name") == name:
            return tool
    return None


async def ui_for_tool(
    client: Client | MCPClient, tool_name: str, *, server: str | None = None
) -> AppUi | None:
    """The app of ``tool_name`` (None when the tool names no UI).

    With an ``MCPClient``, ``server`` names the server (default: the first
    connected server that has the tool). Raises :class:`LookupError` for an
    unknown tool, a URI that is not ``ui://``, or a resource with no content
    of the extension's MIME type.
    """
    from ...client.mcp_client import MCPClient

    target: Client
    tool: dict[str, Any] | None = None
    if isinstance(client, MCPClient):
        names = [server] if server is not None else client.server_names
        for name in names:
            candidate = client.client(name)
            tool = await _tool(candidate, tool_name)
            if tool is not None:
                target = candidate
                break
    else:
        target = client
        tool = await _tool(client, tool_name)
    if tool is None:
        raise LookupError(f"no tool {tool_name!r} on the server")
    tool_meta = tool.get("_meta")
    uri = tool_resource_uri(tool_meta if isinstance(tool_meta, Mapping) else None)
    if uri is None:
        return None
    problem = ui_uri_problem(uri)
    if problem is not None or not isinstance(uri, str):
        raise LookupError(f"tool {tool_name!r}: {problem}")
    result = await target.read_resource(uri)
    html, meta = _html(uri, result.get("contents") or [])
    if meta is None:  # the listing's _meta.ui applies when the contents carry none
        for res in await target.list_resources():
            listed = res.get("_meta")
            if res.get("uri") == uri and isinstance(listed, Mapping):
                meta = listed.get("ui")
    ui = tool_meta.get("ui") if isinstance(tool_meta, Mapping) else None
    vis = ui.get("visibility") if isinstance(ui, Mapping) else None
    visibility = tuple(v for v in vis if v in ("model", "app")) if isinstance(vis, list) else None
    return AppUi(
        tool_name=tool_name,
        resource_uri=uri,
        html=html,
        mime_type=MIME_TYPE,
        meta=ResourceMeta.from_dict(meta if isinstance(meta, Mapping) else {}),
        visibility=visibility if visibility is not None else ("model", "app"),
        tool=tool,
    )


def _html(uri: str, contents: list[dict[str, Any]]) -> tuple[str, object]:
    """The app's HTML and its contents-level ``_meta.ui`` (None if absent)."""
    for item in contents:
        if item.get("mimeType") != MIME_TYPE:
            continue
        text = item.get("text")
        if not isinstance(text, str):
            blob = item.get("blob")
            if not isinstance(blob, str):
                continue
            text = base64.b64decode(blob).decode("utf-8")
        meta = item.get("_meta")
        return text, meta.get("ui") if isinstance(meta, Mapping) else None
    raise LookupError(f"resource {uri!r} has no content of type {MIME_TYPE!r}")
