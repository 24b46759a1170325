"""MCP Apps records: the extension's names, ``_meta.ui`` of tools and UI resources, and checks.

The names and shapes follow the ``@modelcontextprotocol/ext-apps`` package
(2.0.x, its ``schema.json``): a tool's ``_meta.ui`` is ``McpUiToolMeta``
(``resourceUri``, ``visibility``; ``csp`` and ``permissions`` are forbidden
there), a UI resource's ``_meta.ui`` is ``McpUiResourceMeta`` (``csp``,
``permissions``, ``domain``, ``prefersBorder``). The extension defines no
preferred-size metadata: an app reports its size at run time
(``ui/notifications/size-changed``), so none is offered here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "EXTENSION_ID",
    "LEGACY_RESOURCE_URI_KEY",
    "MIME_TYPE",
    "Csp",
    "Permissions",
    "Visibility",
    "resource_meta_problems",
    "tool_meta_problems",
    "tool_resource_uri",
    "ui_capability",
    "ui_uri_problem",
]

#: The extension's key in ``capabilities.extensions`` (SEP-1865, extensions overview).
EXTENSION_ID: Final = "io.modelcontextprotocol/ui"
#: The MIME type of an MCP App's HTML resource (``RESOURCE_MIME_TYPE`` in the package).
MIME_TYPE: Final = "text/html;profile=mcp-app"
#: The deprecated flat form of ``_meta.ui.resourceUri``, still read by hosts.
LEGACY_RESOURCE_URI_KEY: Final = "ui/resourceUri"

Visibility = Literal["model", "app"]
_VISIBILITIES: Final = ("model", "app")

# ui://<authority>/<path>: the package's examples always name a server-ish authority and a
# path; a template ({var}) would make the resource a template, which hosts cannot preload.
_UI_URI: Final = re.compile(r"ui://[^/\s{}?#]+(?:/[^\s{}]*)?")

# McpUiResourceCsp field -> wire name; McpUiResourcePermissions likewise.
_CSP_FIELDS: Final = {
    "connect_domains": "connectDomains",
    "resource_domains": "resourceDomains",
    "frame_domains": "frameDomains",
    "base_uri_domains": "baseUriDomains",
}
_PERMISSION_FIELDS: Final = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboard_write": "clipboardWrite",
}
_TOOL_META_KEYS: Final = frozenset({"resourceUri", "visibility"})
_RESOURCE_META_KEYS: Final = frozenset({"csp", "permissions", "domain", "prefersBorder"})


def ui_capability(client_capabilities: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The client's settings for this extension (``McpUiClientCapabilities``), or None.

    A client that renders apps declares ``capabilities.extensions[EXTENSION_ID]``
    with the ``mimeTypes`` it renders, which must include :data:`MIME_TYPE`
    (in ``initialize``, or the 2026-07-28 ``_meta`` envelope of each request).
    """
    extensions = (client_capabilities or {}).get("extensions")
    if not isinstance(extensions, Mapping):
        return None
    settings = extensions.get(EXTENSION_ID)
    if not isinstance(settings, Mapping):
        return None
    mime_types = settings.get("mimeTypes")
    if not isinstance(mime_types, list) or MIME_TYPE not in mime_types:
        return None
    return dict(settings)


def ui_uri_problem(uri: object) -> str | None:
    """Why ``uri`` cannot name an MCP App resource (None: it can)."""
    if not isinstance(uri, str):
        return f"a UI resource URI must be a string, not {type(uri).__name__}"
    if _UI_URI.fullmatch(uri) is None:
        return (
            f"UI resource URI {uri!r} must be 'ui://<server>/<path>' "
            "(the ui:// scheme, no template variables, no whitespace)"
        )
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Csp:
    """The origins a UI resource may reach (``McpUiResourceCsp``); empty means none."""

    connect_domains: tuple[str, ...] = ()
    resource_domains: tuple[str, ...] = ()
    frame_domains: tuple[str, ...] = ()
    base_uri_domains: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        """The wire form: only the directives given."""
        out: dict[str, list[str]] = {}
        for attr, key in _CSP_FIELDS.items():
            value: tuple[str, ...] = getattr(self, attr)
            if value:
                out[key] = list(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Csp:
        """Read the wire form (unknown keys ignored: a client reads what it knows)."""
        values = {
            attr: tuple(str(v) for v in data.get(key) or ()) for attr, key in _CSP_FIELDS.items()
        }
        return cls(**values)


@dataclass(frozen=True, slots=True, kw_only=True)
class Permissions:
    """Sandbox features a UI resource asks for (``McpUiResourcePermissions``)."""

    camera: bool = False
    microphone: bool = False
    geolocation: bool = False
    clipboard_write: bool = False

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The wire form: each feature asked for maps to an empty object."""
        return {key: {} for attr, key in _PERMISSION_FIELDS.items() if getattr(self, attr)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Permissions:
        """Read the wire form: a feature is asked for when its key is present."""
        return cls(**{attr: key in data for attr, key in _PERMISSION_FIELDS.items()})


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceMeta:
    """A UI resource's ``_meta.ui`` (``McpUiResourceMeta``)."""

    csp: Csp | None = None
    permissions: Permissions | None = None
    domain: str | None = None
    prefers_border: bool | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The wire form, only the fields given."""
        out: dict[str, Any] = {}
        if self.csp is not None:
            out["csp"] = self.csp.to_dict()
        if self.permissions is not None:
            out["permissions"] = self.permissions.to_dict()
        if self.domain is not None:
            out["domain"] = self.domain
        if self.prefers_border is not None:
            out["prefersBorder"] = self.prefers_border
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResourceMeta:
        """Read the wire form, keeping the object as received in ``raw``."""
        csp, perms = data.get("csp"), data.get("permissions")
        domain, border = data.get("domain"), data.get("prefersBorder")
        return cls(
            csp=Csp.from_dict(csp) if isinstance(csp, Mapping) else None,
            permissions=Permissions.from_dict(perms) if isinstance(perms, Mapping) else None,
            domain=domain if isinstance(domain, str) else None,
            prefers_border=border if isinstance(border, bool) else None,
            raw=dict(data),
        )


def _strings(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str | bytes)
        and all(isinstance(v, str) for v in value)
    )


def resource_meta_problems(label: str, meta: object) -> list[str]:
    """What breaks ``McpUiResourceMeta`` in ``meta`` (the wire form), one sentence each."""
    if not isinstance(meta, Mapping):
        return [f"{label}: _meta.ui must be an object"]
    problems = [
        f"{label}: _meta.ui has no field {k!r} (allowed: {sorted(_RESOURCE_META_KEYS)})"
        for k in meta
        if k not in _RESOURCE_META_KEYS
    ]
    csp = meta.get("csp")
    if csp is not None:
        if not isinstance(csp, Mapping):
            problems.append(f"{label}: csp must be an object")
        else:
            for key, value in csp.items():
                if key not in _CSP_FIELDS.values():
                    problems.append(f"{label}: csp has no directive {key!r}")
                elif not _strings(value):
                    problems.append(f"{label}: csp.{key} must be a list of origins")
                else:
                    problems.extend(
                        f"{label}: csp.{key} origin {o!r} has whitespace or a ';'"
                        for o in value
                        if not o or any(c.isspace() or c == ";" for c in o)
                    )
    perms = meta.get("permissions")
    if perms is not None:
        if not isinstance(perms, Mapping):
            problems.append(f"{label}: permissions must be an object")
        else:
            problems.extend(
                f"{label}: permissions has no feature {k!r}"
                for k in perms
                if k not in _PERMISSION_FIELDS.values()
            )
    if "domain" in meta and not isinstance(meta["domain"], str):
        problems.append(f"{label}: domain must be a string")
    if "prefersBorder" in meta and not isinstance(meta["prefersBorder"], bool):
        problems.append(f"{label}: prefersBorder must be a boolean")
    return problems


def tool_resource_uri(meta: Mapping[str, Any] | None) -> object:
    """The UI resource a tool's ``_meta`` names: ``ui.resourceUri``, else the legacy key."""
    if not meta:
        return None
    ui = meta.get("ui")
    if isinstance(ui, Mapping) and "resourceUri" in ui:
        return ui["resourceUri"]
    return meta.get(LEGACY_RESOURCE_URI_KEY)


def tool_meta_problems(label: str, meta: Mapping[str, Any] | None) -> list[str]:
    """What breaks ``McpUiToolMeta`` in a tool's ``_meta`` (nothing if it names no UI)."""
    if not meta or ("ui" not in meta and LEGACY_RESOURCE_URI_KEY not in meta):
        return []
    problems: list[str] = []
    ui = meta.get("ui")
    if ui is not None:
        if not isinstance(ui, Mapping):
            return [f"{label}: _meta.ui must be an object"]
        for key in ui:
            if key in ("csp", "permissions"):  # `not: {}` in McpUiToolMeta
                problems.append(
                    f"{label}: _meta.ui.{key} belongs on the UI resource, not on the tool"
                )
            elif key not in _TOOL_META_KEYS:
                problems.append(f"{label}: _meta.ui has no field {key!r}")
        vis = ui.get("visibility")
        if vis is not None and (not _strings(vis) or any(v not in _VISIBILITIES for v in vis)):
            problems.append(f"{label}: _meta.ui.visibility must list 'model' and/or 'app'")
    uri = tool_resource_uri(meta)
    if uri is None:
        problems.append(f"{label}: _meta.ui names no resourceUri")
    else:
        problem = ui_uri_problem(uri)
        if problem is not None:
            problems.append(f"{label}: {problem}")
    return problems
