"""The method table: each MCP request method's handler, in one public mapping.

:data:`METHODS` maps a JSON-RPC method name to an async handler
``handler(session, request) -> result dict``. It is built once, at import; a
session looks a request's method up in it with one dict lookup (no handler is
a closure over a server: each reads what it needs from ``session.server``,
so one table serves every server in the process).

A handler returns the ``result`` member of the response, or raises an
:class:`~mcpkit.errors.MCPError` for a JSON-RPC error. It does not check the
lifecycle, the request id or the era's envelope: the session did that before
(see :mod:`.session`). Middleware (:mod:`.middleware`) wraps these handlers;
it is the place to add behaviour around a method, not this table.

Scopes (:mod:`.scopes`) are enforced here, in the handlers, rather than in a
step before the middleware chain: a handler holds the very tool, resource or
prompt it is about to run (the check is one attribute test, no second lookup,
and a template is matched once), every transport and both eras reach these
handlers (each 2026-07-28 input round too), and middleware still sees the
refused request and its ``InsufficientScope`` error (for audit logs), as it
sees any other error. The list handlers leave out what the caller cannot use.

The results are shaped for the session's revision: a client on an older
revision gets the entries without the fields its revision lacks
(:func:`shape_listing`), and 2026-07-28 results are completed afterwards by
:func:`~mcpkit.server.stateless.dispatch.complete_result` (``resultType``, caching hints).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from ..errors import InvalidParams, ResourceNotFound
from ..protocol.jsonrpc import json_type
from ..protocol.versions import Revision
from .content import shape_content, shape_result
from .context import Context, _current
from .heard_updates import hides_update
from .middleware import Handler as MethodHandler
from .pagination import paginate
from .scopes import completion_scopes, enforce, granted_scopes, visible
from .sourced_visibility import kept_entries, refuse_completion, refuse_sourced
from .sources import listed_by_sources, served_by_sources
from .stateless.dispatch import discover
from .stateless.listen import listen

if TYPE_CHECKING:
    from .session import Request, ServerSession

__all__ = ["METHODS", "Handler", "shape_listing"]

#: ``handler(session, request)``: the result of one request, or an MCPError raised.
# ``async handler(session, request) -> result``; defined beside the middleware that wraps it.
Handler = MethodHandler


def shape_listing(item: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """A tool, resource, template or prompt entry without the fields ``revision`` lacks.

    Entries are described in the newest shape; a client on an older revision
    gets them without ``title``/``_meta``/``outputSchema`` (2025-06-18),
    ``icons`` (2025-11-25) or tool ``annotations`` (2025-03-26).
    """
    drop = set()
    if not revision.titles:
        drop.add("title")
    if not revision.icons:
        drop.add("icons")
    if not revision.meta_fields:
        drop.add("_meta")
    if not revision.structured_output:
        drop.add("outputSchema")
    if not revision.tool_annotations and "inputSchema" in item:
        drop.add("annotations")
    if not drop:
        return item
    out = {k: v for k, v in item.items() if k not in drop}
    arguments = out.get("arguments")
    if "title" in drop and isinstance(arguments, list):  # PromptArgument.title is 2025-06-18 too
        out["arguments"] = [
            {k: v for k, v in a.items() if k != "title"} if isinstance(a, dict) else a
            for a in arguments
        ]
    return out


def _shaped(items: list[dict[str, Any]], revision: Revision) -> list[dict[str, Any]]:
    return [shape_listing(i, revision) for i in items]


# -- lifecycle and utilities ---------------------------------------------------------------------


async def initialize(session: ServerSession, req: Request) -> dict[str, Any]:
    return await session.initialize(req)


async def ping(session: ServerSession, req: Request) -> dict[str, Any]:
    return {}


async def set_level(session: ServerSession, req: Request) -> dict[str, Any]:
    return await session.set_level(req)


async def complete(session: ServerSession, req: Request) -> dict[str, Any]:
    server = session.server
    if req.auth_info is not None and (server.prompts.any_scoped or server.resources.any_scoped):
        needed = completion_scopes(server, req.params)
        if needed:
            enforce(req.auth_info, needed, "completing these arguments")
    if server.visibility.active:  # a hidden prompt's or template's suggestions are refused
        await refuse_completion(server.visibility, session, req)
    if server.component_sources and not server.completions.serves(req.params):
        result = await served_by_sources(session, req, "completions")
        if result is not None:
            return result
    return await server.completions.complete(req.params)


# -- tools ---------------------------------------------------------------------------------------


def _listed(
    session: ServerSession,
    req: Request,
    key: str,
    entries: list[dict[str, Any]],
    scoped: bool,
) -> dict[str, Any]:
    """One page of ``entries`` as the list result under ``key``.

    A listing that depends on the caller's scopes is never marked shareable on
    2026-07-28 (``cacheScope: "private"`` on every page, as caching § cache scope
    asks); when nothing in it has scopes the server's own hints apply.
    """
    server = session.server
    items, nxt = paginate(entries, req.params.get("cursor"), server.page_size)
    out: dict[str, Any] = {key: items, "nextCursor": nxt} if nxt else {key: items}
    if scoped and session.revision.era == "stateless":
        out["cacheScope"] = "private"
    return out


async def tools_list(session: ServerSession, req: Request) -> dict[str, Any]:
    tools = session.server.tools
    listing = tools.listing(session.revision)  # without what the server's rules hide
    if session.server.visibility.scoped:  # the caller may have rules of its own
        own = await session.server.visibility.own_rules(session, req)
        if own is not None:
            listing = tools.listing_for(own, session.revision)
    if session.server.component_sources:
        sourced = await listed_by_sources(session, "tools")
        vis = session.server.visibility
        keep = await vis.keeper(session, req) if vis.active else None
        if keep is not None:  # the server's rules hold for what its sources serve too
            sourced = kept_entries(vis, keep, "tools", sourced)
        listing = [*listing, *_shaped(sourced, session.revision)]
    if not tools.scoped:  # the fast path: nothing depends on the caller
        return _listed(session, req, "tools", listing, False)
    return _listed(
        session, req, "tools", visible(listing, "name", tools.scoped, req.auth_info), True
    )


async def tools_call(session: ServerSession, req: Request) -> dict[str, Any]:
    server = session.server
    params = req.params
    name = params.get("name")
    tool = server.tools.by_name.get(name) if isinstance(name, str) else None
    if tool is None:
        # Only a name the server lacks reaches the sources: its own tools cost nothing more.
        sourced = None
        if server.component_sources:
            if server.visibility.active:
                await refuse_sourced(server.visibility, session, req, "tools", name)
            sourced = await served_by_sources(session, req, "tools")
        if sourced is None:
            raise InvalidParams(f"Unknown tool: {name}")
        return _call_result(sourced, session.revision)
    if server.tools.versions and name in server.tools.versions:
        version = params.get("version") or req.meta.get("version")  # as prompts/get takes it
        if version is not None:
            tool = server.tools.get(name, version) if type(version) is str else None
            if tool is None:
                raise InvalidParams(f"Unknown version {version!r} of tool {name!r}")
    if tool.scopes:
        enforce(req.auth_info, tool.scopes, f"tool {name!r}")
    visibility = server.visibility
    if visibility.active and (
        # The server's own rules are in tools.hidden already: a set lookup, no await.
        await visibility.refuse_hidden(session, req, "tools", tool.name, tool.tags)
        if visibility.scoped
        else tool.name in server.tools.hidden
    ):
        raise InvalidParams(f"Tool {name!r} is disabled")
    arguments = params.get("arguments")
    if arguments is not None and type(arguments) is not dict:
        raise InvalidParams("tools/call: 'arguments' must be an object")
    ctx = Context(session, req)
    token = _current.set(ctx)
    try:
        result = await tool.run(arguments, ctx, debug=server.debug)
    finally:
        _current.reset(token)
    revision = session.revision  # inline, not _call_result: one call less on the hot path
    if revision.meta_fields and revision.structured_output:
        return result
    return shape_result(result, revision)


def _call_result(result: dict[str, Any], revision: Revision) -> dict[str, Any]:
    if revision.meta_fields and revision.structured_output:
        return result
    return shape_result(result, revision)


# -- resources -----------------------------------------------------------------------------------


async def resources_list(session: ServerSession, req: Request) -> dict[str, Any]:
    resources = session.server.resources
    vis = session.server.visibility  # no await at all while no rule exists
    keep = await vis.keeper(session, req) if vis.active else None
    listing = await resources.list(req.auth_info, keep)
    if session.server.component_sources:
        sourced = await listed_by_sources(session, "resources")
        if keep is not None:
            sourced = kept_entries(vis, keep, "resources", sourced)
        listing = [*listing, *sourced]
    listing = _shaped(listing, session.revision)
    return _listed(session, req, "resources", listing, resources.any_scoped)


async def templates_list(session: ServerSession, req: Request) -> dict[str, Any]:
    resources = session.server.resources
    vis = session.server.visibility  # no await at all while no rule exists
    keep = await vis.keeper(session, req) if vis.active else None
    listing = await resources.list_templates(req.auth_info, keep)
    if session.server.component_sources:
        sourced = await listed_by_sources(session, "resourceTemplates")
        if keep is not None:
            sourced = kept_entries(vis, keep, "resourceTemplates", sourced)
        listing = [*listing, *sourced]
    listing = _shaped(listing, session.revision)
    return _listed(session, req, "resourceTemplates", listing, resources.any_scoped)


async def resources_read(session: ServerSession, req: Request) -> dict[str, Any]:
    uri = req.params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams("resources/read needs a 'uri' string")
    version = req.params.get("version") or req.meta.get("version")  # as prompts/get
    if version is not None and type(version) is not str:
        raise InvalidParams(f"resources/read: 'version' must be a string, got {json_type(version)}")
    vis = session.server.visibility  # no await at all while no rule exists
    keep = await vis.keeper(session, req) if vis.active else None
    ctx = Context(session, req)
    token = _current.set(ctx)
    try:
        contents, hint = await session.server.resources.read_with_hint(uri, ctx, keep, version)
    except ResourceNotFound:
        # Not the server's own: a source may have it (its answer is already complete).
        sourced = None
        if session.server.component_sources:
            if keep is not None:
                await refuse_sourced(vis, session, req, "resources", uri)
            sourced = await served_by_sources(session, req, "resources")
        if sourced is None:
            raise
        contents, hint = sourced.get("contents") or [], None
    finally:
        _current.reset(token)
    if not session.revision.meta_fields:
        contents = [{k: v for k, v in c.items() if k != "_meta"} for c in contents]
    if hint is not None and session.revision.era == "stateless":
        # The resource's own hint; serve_stateless fills the rest (2026-07-28 only).
        return {"contents": contents, **hint.fields()}
    return {"contents": contents}


async def subscribe(session: ServerSession, req: Request) -> dict[str, Any]:
    uri = req.params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams("resources/subscribe needs a 'uri' string")
    resources = session.server.resources
    if resources.any_scoped:
        # Updates tell as much as a read (that it changed, when): the same scopes.
        enforce(req.auth_info, resources.scopes_for(uri), f"resource {uri!r}")
    if req.auth_info is not None:
        session.subscriber_scopes = frozenset(granted_scopes(req.auth_info))
    session.subscriptions.add(uri)
    if session.on_state_change is not None:
        await session.on_state_change(session)
    if session.server.component_sources and not await hides_update(session, req, uri):
        # A source's resource: it subscribes upstream (not one the caller may not see:
        # accepted as an unknown URI is, and never followed, .heard_updates).
        await served_by_sources(session, req, "resources")
    return {}


async def unsubscribe(session: ServerSession, req: Request) -> dict[str, Any]:
    uri = req.params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams("resources/unsubscribe needs a 'uri' string")
    if req.auth_info is not None:
        session.subscriber_scopes = frozenset(granted_scopes(req.auth_info))
    session.subscriptions.discard(uri)
    if session.on_state_change is not None:
        await session.on_state_change(session)
    if session.server.component_sources:
        await served_by_sources(session, req, "resources")
    return {}


# -- prompts -------------------------------------------------------------------------------------


async def prompts_list(session: ServerSession, req: Request) -> dict[str, Any]:
    prompts = session.server.prompts
    vis = session.server.visibility  # no await at all while no rule exists
    keep = await vis.keeper(session, req) if vis.active else None
    listing = await prompts.list(req.auth_info, keep)
    if session.server.component_sources:
        sourced = await listed_by_sources(session, "prompts")
        if keep is not None:
            sourced = kept_entries(vis, keep, "prompts", sourced)
        listing = [*listing, *sourced]
    listing = _shaped(listing, session.revision)
    return _listed(session, req, "prompts", listing, prompts.any_scoped)


async def prompts_get(session: ServerSession, req: Request) -> dict[str, Any]:
    params = req.params
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidParams("prompts/get needs a 'name' string")
    args = params.get("arguments") or {}
    if not isinstance(args, dict):
        raise InvalidParams("prompts/get: 'arguments' must be an object")
    version = params.get("version") or req.meta.get("version")
    if version is not None and type(version) is not str:
        raise InvalidParams(f"prompts/get: 'version' must be a string, got {json_type(version)}")
    server = session.server
    sourced = None
    vis = server.visibility
    if server.component_sources and not server.prompts.serves(name, version):
        if vis.active:
            await refuse_sourced(vis, session, req, "prompts", name)
        sourced = await served_by_sources(session, req, "prompts")
    keep = await vis.keeper(session, req) if vis.active and sourced is None else None
    ctx = Context(session, req)
    token = _current.set(ctx)
    try:
        result = sourced or await server.prompts.get(name, args, version, ctx, keep)
    finally:
        _current.reset(token)
    revision = session.revision
    if not (revision.meta_fields and revision.audio):
        result["messages"] = [
            {**m, "content": shape_content(m["content"], revision)} for m in result["messages"]
        ]
    return result


#: Every request method the server answers, name -> handler; read-only.
METHODS: Final[Mapping[str, Handler]] = MappingProxyType(
    {
        "initialize": initialize,
        "ping": ping,
        "logging/setLevel": set_level,
        "tools/list": tools_list,
        "tools/call": tools_call,
        "resources/list": resources_list,
        "resources/templates/list": templates_list,
        "resources/read": resources_read,
        "resources/subscribe": subscribe,
        "resources/unsubscribe": unsubscribe,
        "prompts/list": prompts_list,
        "prompts/get": prompts_get,
        "completion/complete": complete,
        # 2026-07-28 only (the handlers refuse other revisions).
        "server/discover": discover,
        "subscriptions/listen": listen,
    }
)
