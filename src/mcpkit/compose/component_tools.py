"""Resources and prompts as tools, for clients that only speak tools.

Many clients (agent frameworks, some IDEs) call tools and nothing else: a
server's resources and prompts are invisible to them. :func:`resources_as_tools`
and :func:`prompts_as_tools` register four generic tools that reach them:

- ``list_resources``: the resources and resource templates (every page), as
  ``resources/list`` and ``resources/templates/list`` give them;
- ``read_resource(uri)``: the contents of one resource or of a template's
  URI, as ``resources/read`` gives them: text as text, images and audio as
  such, other binary contents as an embedded resource;
- ``list_prompts``: the prompts (every page), as ``prompts/list`` gives them;
- ``get_prompt(name, arguments)``: one prompt's messages, as ``prompts/get``.

Generic tools rather than one tool per resource or template: the resources a
server has change at run time and may differ per session (a proxied server's,
a caller's visibility), the tool listing stays four entries long however many
there are, and a template's variables are already the ``uri`` a model writes.
(A tool for one template is a :func:`~mcpkit.compose.transform.transform_tool`
of ``read_resource`` away: a fixed ``uri`` prefix in a wrapper.)

Each tool serves its request as a client's own would be served: through the
server's middleware and method handlers (``server.wrapped_methods``) on the
caller's session, with the caller's auth info, so mounted and proxied
components are included, scopes and visibility apply, and a component the
caller may not use is refused as it would be. List and get results are
structured (``structuredContent``, with their JSON as text, 2025-06-18
server/tools § structured content); a failed read or get is a tool error.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from ..errors import MCPError, ToolError
from ..server.context import Context
from ..server.request import Request
from ..server.server import MCPServer
from ..server.tools import ToolAnnotations, ToolDefinition, create_tool

__all__ = ["prompts_as_tools", "request_for", "resources_as_tools", "served"]

_READ_ONLY: Final = ToolAnnotations(read_only_hint=True, idempotent_hint=True)
_ARRAY: Final = {"type": "array", "items": {"type": "object"}}
_MAX_PAGES: Final = 1000  # a listing that never ends (a broken source) stops here


def request_for(ctx: Context, method: str, params: dict[str, Any]) -> Request:
    """A ``method`` request on the caller's session: its id, stream and auth info (so a
    proxied upstream's requests and logs reach the caller, and scopes are the caller's)."""
    outer = ctx.request
    return Request(
        ctx.session,
        {"id": outer.id, "method": method, "params": params},
        outer.send_raw,
        outer.auth_info,
    )


async def served(ctx: Context, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The result of ``method`` served on the caller's session, as if the client asked it."""
    handler = ctx.session.server.wrapped_methods[method]
    return await handler(ctx.session, request_for(ctx, method, params))


async def listed(ctx: Context, method: str, key: str) -> list[dict[str, Any]]:
    """Every page of the ``method`` listing, its entries under ``key``."""
    entries: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    for _ in range(_MAX_PAGES):
        page = await served(ctx, method, params)
        entries.extend(e for e in page.get(key) or () if isinstance(e, dict))
        cursor = page.get("nextCursor")
        if not cursor:
            break
        params = {"cursor": cursor}
    return entries


def _structured(value: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": orjson.dumps(value).decode()}],
        "structuredContent": value,
    }


def _content_of(item: dict[str, Any]) -> dict[str, Any]:
    """A ``resources/read`` content item as a tool result's content block."""
    if isinstance(item.get("text"), str):
        return {"type": "text", "text": item["text"]}
    mime = str(item.get("mimeType") or "")
    blob = item.get("blob")
    if isinstance(blob, str) and mime.startswith(("image/", "audio/")):
        kind = "image" if mime.startswith("image/") else "audio"
        return {"type": kind, "data": blob, "mimeType": mime}
    return {"type": "resource", "resource": item}  # embedded, as it came


def resources_as_tools(
    server: MCPServer,
    *,
    list_name: str = "list_resources",
    read_name: str = "read_resource",
) -> tuple[ToolDefinition, ToolDefinition]:
    """Register ``list_resources`` and ``read_resource`` on ``server`` (names changeable)."""

    async def list_resources(ctx: Context) -> dict[str, Any]:
        resources = await listed(ctx, "resources/list", "resources")
        templates = await listed(ctx, "resources/templates/list", "resourceTemplates")
        return _structured({"resources": resources, "resourceTemplates": templates})

    async def read_resource(uri: str, ctx: Context) -> dict[str, Any]:
        try:
            result = await served(ctx, "resources/read", {"uri": uri})
        except MCPError as exc:  # the model reads the reason and can try another URI
            raise ToolError(f"cannot read {uri!r}: {exc.message}") from None
        contents = result.get("contents") or []
        return {"content": [_content_of(c) for c in contents if isinstance(c, dict)]}

    listing = create_tool(
        id=list_name,
        description="List the resources (URIs) and resource templates (URI patterns) "
        f"this server has; read one with {read_name}.",
        input_schema={"type": "object", "properties": {}},
        execute=list_resources,
        output_schema={
            "type": "object",
            "properties": {"resources": _ARRAY, "resourceTemplates": _ARRAY},
            "required": ["resources", "resourceTemplates"],
        },
        annotations=_READ_ONLY,
    )
    reading = create_tool(
        id=read_name,
        description="Read a resource by URI (a listed one, or a template's pattern with "
        f"its variables filled in); {list_name} lists them.",
        input_schema={
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI"}},
            "required": ["uri"],
        },
        execute=read_resource,
        annotations=_READ_ONLY,
    )
    return server.add_tool(listing), server.add_tool(reading)


def prompts_as_tools(
    server: MCPServer,
    *,
    list_name: str = "list_prompts",
    get_name: str = "get_prompt",
) -> tuple[ToolDefinition, ToolDefinition]:
    """Register ``list_prompts`` and ``get_prompt`` on ``server`` (names changeable)."""

    async def list_prompts(ctx: Context) -> dict[str, Any]:
        return _structured({"prompts": await listed(ctx, "prompts/list", "prompts")})

    async def get_prompt(
        name: str, ctx: Context, arguments: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params = {"name": name, "arguments": dict(arguments or {})}
        try:
            result = await served(ctx, "prompts/get", params)
        except MCPError as exc:
            raise ToolError(f"cannot get prompt {name!r}: {exc.message}") from None
        shown = {k: v for k, v in result.items() if k in ("description", "messages")}
        return _structured(shown)

    listing = create_tool(
        id=list_name,
        description=f"List the prompt templates this server has; get one with {get_name}.",
        input_schema={"type": "object", "properties": {}},
        execute=list_prompts,
        output_schema={
            "type": "object",
            "properties": {"prompts": _ARRAY},
            "required": ["prompts"],
        },
        annotations=_READ_ONLY,
    )
    getting = create_tool(
        id=get_name,
        description="Get a prompt's messages, its arguments filled in "
        f"({list_name} lists the prompts and their arguments).",
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The prompt's name"},
                "arguments": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "The prompt's arguments, by name",
                },
            },
            "required": ["name"],
        },
        execute=get_prompt,
        output_schema={
            "type": "object",
            "properties": {"description": {"type": "string"}, "messages": _ARRAY},
            "required": ["messages"],
        },
        annotations=_READ_ONLY,
    )
    return server.add_tool(listing), server.add_tool(getting)
