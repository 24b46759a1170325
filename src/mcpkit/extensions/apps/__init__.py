"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865): interactive HTML UIs for tools.

A tool names a ``ui://`` resource in its ``_meta.ui``; the resource is HTML of
type ``text/html;profile=mcp-app`` with its own ``_meta.ui`` (content security
policy, sandbox permissions, border, domain); a host renders it in a sandboxed
iframe and relays the app's ``tools/call`` requests to the server. This
package uses only the core's public seams: ``meta=`` on tool registration,
``server.resource`` for the HTML, ``server.add_extension`` for the capability
(:mod:`.server`), and the client's ``list_tools``/``read_resource``
(:mod:`.client`). Names and shapes follow the ``@modelcontextprotocol/ext-apps``
package, 2.0.x (:mod:`.records`).
"""

from __future__ import annotations

from .client import AppUi, ui_client_capabilities, ui_for_tool
from .html import find_node_module, html_from_file, inline_modules
from .records import (
    EXTENSION_ID,
    LEGACY_RESOURCE_URI_KEY,
    MIME_TYPE,
    Csp,
    Permissions,
    ResourceMeta,
    Visibility,
    ui_capability,
)
from .server import UiResource, add_apps, apps_extension, client_renders_apps, ui_tool_meta

__all__ = [
    "EXTENSION_ID",
    "LEGACY_RESOURCE_URI_KEY",
    "MIME_TYPE",
    "AppUi",
    "Csp",
    "Permissions",
    "ResourceMeta",
    "UiResource",
    "Visibility",
    "add_apps",
    "apps_extension",
    "client_renders_apps",
    "find_node_module",
    "html_from_file",
    "inline_modules",
    "ui_capability",
    "ui_client_capabilities",
    "ui_for_tool",
    "ui_tool_meta",
]
