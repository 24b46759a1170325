"""Resources: static ones, RFC 6570 templates, Mastra's callbacks, subscriptions.

``resources/read`` looks a URI up in this order: static resources, templates
(first registered wins), then the ``get_resource_content`` callback. Nothing
found is -32002 (2025-11-25 server/resources § error handling).
"""

from __future__ import annotations

import base64
import builtins
import inspect
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams, MCPError, RegistrationError, ResourceNotFound
from .context import run_sync
from .heard_updates import hides_update
from .lazy_pydantic import validation_error
from .scopes import NO_SCOPES, enforce, granted_scopes, parse_scopes
from .signature import (
    FunctionSignature,
    SignatureError,
    format_validation_error,
    inspect_function,
    parameter_names,
    summary,
)
from .uri_template import UriTemplate
from .visibility import Keep, checked_tags

if TYPE_CHECKING:
    from .context import Context
    from .server import MCPServer
    from .stateless.cache_hints import CacheHint

__all__ = [
    "MCPServerResources",
    "ResourceDefinition",
    "ResourceManager",
    "TemplateDefinition",
    "bare_resource_problem",
]


def bare_resource_problem(decorator: str, fn: Any) -> str:
    """What to say when ``decorator`` was used bare, without the URI it needs."""
    name = getattr(fn, "__name__", None) or repr(fn)
    return (
        f"resource {name!r}: {decorator} needs the resource's URI, as in "
        f'{decorator}("data://{name}") (a URI with {{variables}} makes a template)'
    )


@dataclass(slots=True)
class MCPServerResources:
    """Resource callbacks as in Mastra (``MCPServerResources``).

    ``list_resources()`` returns resource dicts (``uri``, ``name``, ...),
    ``get_resource_content(uri)`` returns ``{"text": ...}``, ``{"blob": ...}``,
    a ``str``/``bytes``, or a list of those; ``resource_templates()`` returns
    template dicts (``uriTemplate``, ``name``, ...). Each may be sync or async.
    """

    list_resources: Callable[[], Any] | None = None
    get_resource_content: Callable[[str], Any] | None = None
    resource_templates: Callable[[], Any] | None = None


@dataclass(slots=True)
class ResourceDefinition:
    uri: str
    name: str
    fn: Callable[..., Any]
    sig: FunctionSignature
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    cache: CacheHint | None = None  # on its resources/read results (2026-07-28)
    scopes: frozenset[str] = frozenset()  # OAuth scopes to see and read it (.scopes)
    tags: frozenset[str] = frozenset()  # for enable/disable by tag (.visibility)
    version: str | None = None  # listed; a read naming another version is refused

    def describe(self) -> dict[str, Any]:
        item: dict[str, Any] = {"uri": self.uri, "name": self.name}
        _fill(item, self)
        if self.size is not None:
            item["size"] = self.size
        return item


@dataclass(slots=True)
class TemplateDefinition:
    template: UriTemplate
    name: str
    fn: Callable[..., Any]
    sig: FunctionSignature
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    completions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    cache: CacheHint | None = None  # on the resources/read results of matching URIs
    scopes: frozenset[str] = frozenset()  # OAuth scopes to see and read matching URIs
    tags: frozenset[str] = frozenset()  # for enable/disable by tag (.visibility)
    version: str | None = None  # listed; a read naming another version is refused

    def describe(self) -> dict[str, Any]:
        item: dict[str, Any] = {"uriTemplate": self.template.template, "name": self.name}
        _fill(item, self)
        return item


def _fill(item: dict[str, Any], d: ResourceDefinition | TemplateDefinition) -> None:
    for key, value in (
        ("title", d.title),
        ("description", d.description),
        ("mimeType", d.mime_type),
        ("annotations", d.annotations),
        ("icons", d.icons),
        ("_meta", d.meta),
        ("version", d.version),
    ):
        if value:
            item[key] = value


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """``ResourceContents`` items from whatever a resource function returned."""
    if isinstance(value, list | tuple):
        out: list[dict[str, Any]] = []
        for v in value:
            out.extend(_contents(uri, v, mime_type))
        return out
    item: dict[str, Any]
    if isinstance(value, str):
        item = {"uri": uri, "text": value}
    elif isinstance(value, bytes | bytearray | memoryview):
        item = {"uri": uri, "blob": base64.b64encode(bytes(value)).decode("ascii")}
        mime_type = mime_type or "application/octet-stream"
    elif isinstance(value, dict) and ("text" in value or "blob" in value):
        item = dict(value)
        item.setdefault("uri", uri)
        if isinstance(item.get("blob"), bytes | bytearray):
            item["blob"] = base64.b64encode(bytes(item["blob"])).decode("ascii")
    else:
        from .content import EmbeddedResource, dump_text

        if isinstance(value, EmbeddedResource):
            return [value.contents()]
        item = {"uri": uri, "text": dump_text(value)}
        mime_type = mime_type or "application/json"
    if mime_type and "mimeType" not in item:
        item["mimeType"] = mime_type
    return [item]


class ResourceManager:
    """``server.resources``: registration, reading, subscriptions, notifications."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        self.static: dict[str, ResourceDefinition] = {}
        self.templates: list[TemplateDefinition] = []
        self.callbacks = MCPServerResources()
        # Set once a resource or template with scopes is registered; until then no
        # scope check costs anything (see .scopes).
        self.any_scoped = False
        self._scoped_templates = False
        #: Called with each resource or template after it is added (see add_listener).
        self.listeners: builtins.list[Callable[[ResourceDefinition | TemplateDefinition], None]]
        self.listeners = []
        #: Awaited with the URI on each notify_updated (see add_update_listener).
        self.update_listeners: builtins.list[Callable[[str], Awaitable[None]]] = []

    def add_listener(
        self, listener: Callable[[ResourceDefinition | TemplateDefinition], None]
    ) -> None:
        """Call ``listener(definition)`` after each resource or template is added.

        Synchronous, inside ``add``: it must not block. ``mcpkit.compose.mount``
        follows a mounted server's new resources this way.
        """
        self.listeners.append(listener)

    def add_update_listener(self, listener: Callable[[str], Awaitable[None]]) -> None:
        """Await ``listener(uri)`` on each :meth:`notify_updated`, after the subscribers here.

        ``mcpkit.compose.mount`` passes a mounted server's updates on to the
        parent's subscribers this way.
        """
        self.update_listeners.append(listener)

    @property
    def enabled(self) -> bool:
        c = self.callbacks
        return bool(
            self.static
            or self.templates
            or c.list_resources
            or c.get_resource_content
            or c.resource_templates
        )

    @property
    def has_templates(self) -> bool:
        return bool(self.templates or self.callbacks.resource_templates)

    def add(
        self,
        uri: str,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        size: int | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        cache: CacheHint | None = None,
        scopes: Collection[str] | None = None,
        tags: Collection[str] | None = None,
        enabled: bool = True,
        version: str | None = None,
    ) -> ResourceDefinition | TemplateDefinition:
        from .stateless.cache_hints import check_cache_hint

        check_cache_hint(f"resource {uri!r}", cache)
        if not isinstance(uri, str):
            raise RegistrationError(
                [f"a resource needs a URI string, not {type(uri).__name__} {uri!r}"]
            )
        problems: list[str] = []
        needed = parse_scopes(scopes, problems)
        tagged = checked_tags("tags", tags, problems)
        if version is not None and (type(version) is not str or not version):
            problems.append(f"version must be a non-empty string, not {version!r}")
        if needed:
            if cache is not None and cache.scope == "public":
                problems.append(
                    "cache=CacheHint(scope='public') would let a shared cache serve it to "
                    "callers without its scopes; leave the scope out (reads of a resource "
                    "with scopes are marked private)"
                )
            cache = _private(cache)
        template: UriTemplate | None = None
        sig: FunctionSignature | None = None
        try:
            template = UriTemplate(uri)
        except ValueError as exc:  # UriTemplateError: say which registration failed
            problems.append(f"invalid URI template: {exc}")
        try:
            sig = inspect_function(
                fn, model_name=f"resource_{getattr(fn, '__name__', 'fn')}", strings=True
            )
        except SignatureError as exc:
            problems.extend(exc.problems)
        if template is not None:
            names = sig.param_names if sig is not None else parameter_names(fn)
            if template.is_static and names:
                problems.append(
                    "a static resource function takes no parameters "
                    f"(got {list(names)}); use {{variables}} in the URI for a template"
                )
            hidden = [v for v in template.variables if sig and v in sig.dependency_params]
            if hidden:  # a URI cannot fill a Depends parameter (.dependencies)
                problems.append(f"template variables {hidden} name Depends parameters")
            missing = [p for p in names if p not in template.variables]
            if not template.is_static and missing:
                problems.append(f"parameters {missing} are not template variables")
        if problems or template is None or sig is None:
            raise RegistrationError([f"resource {uri!r}: {p}" for p in problems])
        res_name: str = name or getattr(fn, "__name__", None) or uri
        desc = description if description is not None else summary(sig.doc)
        if template.is_static:
            res = ResourceDefinition(
                uri,
                res_name,
                fn,
                sig,
                desc,
                mime_type,
                title,
                size,
                annotations,
                icons,
                meta,
                cache,
                needed,
                tagged,
                version,
            )
            if not enabled:
                self._server.visibility.disable_at_registration("resources", uri)
            self.static[uri] = res
            if needed:
                self.any_scoped = True
            for listener in self.listeners:
                listener(res)
            return res
        tmpl = TemplateDefinition(
            template,
            res_name,
            fn,
            sig,
            desc,
            mime_type,
            title,
            annotations,
            icons,
            meta,
            cache=cache,
            scopes=needed,
            tags=tagged,
            version=version,
        )
        if not enabled:
            self._server.visibility.disable_at_registration("templates", uri)
        self.templates.append(tmpl)
        if needed:
            self.any_scoped = self._scoped_templates = True
        for listener in self.listeners:
            listener(tmpl)
        return tmpl

    def serving(self, uri: str) -> tuple[str, str, ResourceDefinition | TemplateDefinition] | None:
        """What a read of ``uri`` runs, as ``(kind, key, definition)``: its static resource
        (``"resources"``, the URI), else the first matching template (``"templates"``, the
        template): the order :meth:`read_with_hint` serves them in. None for neither."""
        res = self.static.get(uri)
        if res is not None:
            return "resources", uri, res
        for tmpl in self.templates:
            if tmpl.template.match(uri) is not None:  # None past max_match_length too
                return "templates", tmpl.template.template, tmpl
        return None

    def scopes_for(self, uri: str) -> frozenset[str]:
        """The scopes reading ``uri`` needs (those of what :meth:`serving` finds)."""
        if uri not in self.static and not self._scoped_templates:
            return NO_SCOPES  # no template has scopes: none need be matched
        found = self.serving(uri)
        return found[2].scopes if found is not None else NO_SCOPES

    # -- protocol handlers -------------------------------------------------------------------
    async def list(
        self, auth_info: Any = None, keep: Keep | None = None
    ) -> builtins.list[dict[str, Any]]:
        """``resources/list`` entries; with ``auth_info``, only what it may read; with
        ``keep``, only what ``keep("resources", uri, tags)`` keeps (.visibility)."""
        found = self.static.values()
        if keep is not None:
            found = [r for r in found if keep("resources", r.uri, r.tags)]  # type: ignore[assignment]
        if auth_info is not None and self.any_scoped:
            granted = granted_scopes(auth_info)
            items = [r.describe() for r in found if r.scopes.issubset(granted)]
        else:
            items = [r.describe() for r in found]
        if self.callbacks.list_resources is not None:
            items.extend(_as_dicts(await _maybe_await(_call0(self.callbacks.list_resources))))
        return items

    async def list_templates(
        self, auth_info: Any = None, keep: Keep | None = None
    ) -> builtins.list[dict[str, Any]]:
        """``resources/templates/list`` entries; with ``auth_info``, only what it may read;
        with ``keep``, only what ``keep("templates", uri_template, tags)`` keeps."""
        found = self.templates
        if keep is not None:
            found = [t for t in found if keep("templates", t.template.template, t.tags)]
        if auth_info is not None and self._scoped_templates:
            granted = granted_scopes(auth_info)
            items = [t.describe() for t in found if t.scopes.issubset(granted)]
        else:
            items = [t.describe() for t in found]
        if self.callbacks.resource_templates is not None:
            items.extend(_as_dicts(await _maybe_await(_call0(self.callbacks.resource_templates))))
        return items

    async def read(self, uri: str, ctx: Context | None) -> builtins.list[dict[str, Any]]:
        contents, _ = await self.read_with_hint(uri, ctx)
        return contents

    async def read_with_hint(
        self,
        uri: str,
        ctx: Context | None,
        keep: Keep | None = None,
        version: str | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], CacheHint | None]:
        """The contents of ``uri`` and the cache hint of the resource or template that served
        it; one ``keep`` refuses (.visibility) is an error saying it is disabled, and so is
        one whose version is not the ``version`` asked for."""
        res = self.static.get(uri)
        if res is not None:
            if version is not None and version != res.version:
                raise InvalidParams(f"Resource {uri!r} has no version {version!r}")
            if keep is not None and not keep("resources", uri, res.tags):
                raise InvalidParams(f"Resource {uri!r} is disabled", data={"uri": uri})
            if res.scopes:
                enforce(ctx.auth_info if ctx else None, res.scopes, f"resource {uri!r}")
            value = await self._invoke(res.sig.fn, res.sig, {}, ctx)  # sig.fn resolves Depends
            return _contents(uri, value, res.mime_type), res.cache
        too_long: list[str] = []
        for tmpl in self.templates:
            if len(uri) > tmpl.template.max_match_length:
                too_long.append(tmpl.template.template)
                continue
            values = tmpl.template.match(uri)
            if values is None:
                continue
            if keep is not None and not keep("templates", tmpl.template.template, tmpl.tags):
                raise InvalidParams(f"Resource {uri!r} is disabled", data={"uri": uri})
            if version is not None and version != tmpl.version:
                raise InvalidParams(f"Resource {uri!r} has no version {version!r}")
            if tmpl.scopes:
                enforce(ctx.auth_info if ctx else None, tmpl.scopes, f"resource {uri!r}")
            args = {k: v for k, v in values.items() if k in tmpl.sig.param_names}
            try:
                kwargs = tmpl.sig.validate(args)
            except validation_error() as exc:
                raise InvalidParams(
                    f"Invalid URI {uri!r} for template {tmpl.template.template!r}: "
                    f"{format_validation_error(exc)}"
                ) from None
            value = await self._invoke(tmpl.sig.fn, tmpl.sig, kwargs, ctx, validated=True)
            return _contents(uri, value, tmpl.mime_type), tmpl.cache
        getter = self.callbacks.get_resource_content
        if getter is not None:
            try:
                value = await _maybe_await(getter(uri))
            except MCPError:
                raise
            except (KeyError, LookupError, FileNotFoundError):
                raise ResourceNotFound(uri) from None
            if value is None:
                raise ResourceNotFound(uri)
            mime = None
            if self.callbacks.list_resources is not None:
                for r in _as_dicts(await _maybe_await(_call0(self.callbacks.list_resources))):
                    if r.get("uri") == uri:
                        mime = r.get("mimeType")
                        break
            return _contents(uri, value, mime), None
        if too_long:
            # Say why instead of a misleading "not found" (uri_template: match bounds).
            raise InvalidParams(
                f"URI of {len(uri)} characters is too long to match the template(s) "
                f"{', '.join(too_long)}",
                data={"uri": uri},
            )
        raise ResourceNotFound(uri)

    async def _invoke(
        self,
        fn: Callable[..., Any],
        sig: FunctionSignature,
        kwargs: dict[str, Any],
        ctx: Context | None,
        *,
        validated: bool = False,
    ) -> Any:
        if sig.context_param is not None:
            kwargs[sig.context_param] = ctx
        if sig.is_async:
            return await fn(**kwargs)
        return await run_sync(fn, kwargs, ctx)

    def template_for(self, uri_template: str) -> TemplateDefinition | None:
        for t in self.templates:
            if t.template.template == uri_template:
                return t
        return None

    # -- notifications -----------------------------------------------------------------------
    async def notify_updated(self, uri: str) -> None:
        """``notifications/resources/updated`` to the sessions subscribed to ``uri``
        (in a cluster, also those other processes deliver to)."""
        await self.deliver_updated(uri)
        await self._server.fan_out({"k": "u", "uri": uri})
        for listener in self.update_listeners:
            await listener(uri)

    async def deliver_updated(self, uri: str) -> None:
        """``notifications/resources/updated`` to the subscribed sessions this process
        delivers broadcasts to: for :meth:`notify_updated`, or in a cluster for an update
        another node raised (transports/cluster.py)."""
        needed = self.scopes_for(uri) if self.any_scoped else NO_SCOPES
        hiding = self._server.visibility.active
        for session in self._server.sessions():
            if session.broadcast_here and uri in session.subscriptions:
                if needed and not _covers(session.subscriber_scopes, needed):
                    continue
                # Nor of a resource the session may not see, by its rules as they are now
                # (.heard_updates); a listen stream checks its own with its caller's.
                if (
                    hiding
                    and session.revision.era != "stateless"
                    and await hides_update(session, None, uri)
                ):
                    continue
                await session.notify("notifications/resources/updated", {"uri": uri})

    def may_hear(self, uri: str, subscriber_scopes: frozenset[str] | None) -> bool:
        """Whether updates of ``uri`` may reach a session whose subscriber was granted
        ``subscriber_scopes`` (its ``subscriber_scopes``; None: no auth info): the
        resource's scopes as they are now, since it may have gained some after the
        subscription, or a template may match it."""
        if not self.any_scoped:
            return True
        return _covers(subscriber_scopes, self.scopes_for(uri))

    async def notify_list_changed(self) -> None:
        await self._server.broadcast("notifications/resources/list_changed")


def _covers(granted: frozenset[str] | None, needed: frozenset[str]) -> bool:
    # None: a session without auth info (stdio, unprotected HTTP), where scopes are
    # not enforced (see .scopes).
    return granted is None or needed.issubset(granted)


def _private(hint: CacheHint | None) -> CacheHint:
    """The cache hint of a scoped resource: its reads are never shareable, since a
    shared cache would hand them to callers without the scopes (2026-07-28
    server/utilities/caching § security considerations)."""
    from .stateless.cache_hints import CacheHint

    return CacheHint(ttl_ms=hint.ttl_ms if hint is not None else None, scope="private")


def _call0(fn: Callable[..., Any]) -> Any:
    return fn()


def _as_dicts(items: Sequence[Any] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items or ():
        if hasattr(item, "model_dump"):
            item = item.model_dump(by_alias=True, exclude_none=True)
        out.append(dict(item))
    return out


_ = Awaitable  # re-exported type name used in annotations of callers
