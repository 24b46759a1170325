"""``from_openapi`` and ``from_fastapi``: a server whose components call an HTTP API.

Each operation the route maps keep becomes a tool (``create_tool`` with the
operation's merged input schema), a resource or a resource template
(``server.resources.add``), all registered through the public registries: the
result is an ordinary ``MCPServer`` that can be given more tools, mounted or
served. Nothing is fetched at start-up: the document is given, its references
are local, and the HTTP client is used only when a component is called.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import re
from collections.abc import AsyncIterator, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..._extras import require_extra

with require_extra("openapi", feature="OpenAPI import (mcpkit.compose.openapi.build)"):
    import httpx

from ...errors import ConfigurationError, MCPError, ResourceNotFound
from ...server.context import Context
from ...server.tools import ToolAnnotations, create_tool
from ...server.uri_template import UriTemplate
from .call import HTTPSettings, OperationCall, build_call
from .parse import Document, Parameter, load_document
from .routes import RouteMap, ToolNamer, route_of
from .schema import SchemaConverter

if TYPE_CHECKING:
    from ...server.server import MCPServer

__all__ = ["add_operations", "from_fastapi", "from_openapi"]

log = logging.getLogger("mcpkit.compose.openapi")

_VAR_RE: Final = re.compile(r"\{([^{}]+)\}")

# MCP tool annotations each method implies (2025-11-25 server/tools § ToolAnnotations;
# RFC 9110 § 9.2.1 safe and § 9.2.2 idempotent methods).
_ANNOTATIONS: Final[dict[str, ToolAnnotations]] = {
    "get": ToolAnnotations(read_only_hint=True, open_world_hint=True),
    "head": ToolAnnotations(read_only_hint=True, open_world_hint=True),
    "options": ToolAnnotations(read_only_hint=True, open_world_hint=True),
    "put": ToolAnnotations(idempotent_hint=True, destructive_hint=True, open_world_hint=True),
    "delete": ToolAnnotations(idempotent_hint=True, destructive_hint=True, open_world_hint=True),
}
_OTHER: Final = ToolAnnotations(open_world_hint=True)


def from_openapi(
    spec: Mapping[str, Any] | str | bytes | Path,
    *,
    client: httpx.AsyncClient,
    name: str | None = None,
    version: str | None = None,
    route_maps: Collection[RouteMap] = (),
    names: Mapping[str, str] | None = None,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    forward_bearer_token: bool = False,
    max_error_body: int = 2000,
    uri_prefix: str = "api://",
    output_schemas: bool = True,
    server: MCPServer | None = None,
) -> MCPServer:
    """A server serving the operations of the OpenAPI document ``spec`` through ``client``.

    ``spec`` is a parsed document, its JSON or YAML text, or a :class:`~pathlib.Path`.
    Requests go to ``base_url``, else to ``client``'s base URL, else to the
    document's first server when its URL is absolute. ``route_maps`` (first match wins; no match: a tool)
    choose what each operation becomes; ``names`` renames operations by
    ``operationId``. ``headers`` go with every request (static credentials);
    ``forward_bearer_token`` sends the MCP caller's own bearer token instead (see
    docs/composition.md for why that is off by default). ``timeout`` bounds each
    call in all, in seconds (the client's own timeouts bound each phase). An error
    response becomes a tool error with its status and the first
    ``max_error_body`` characters of its body. Resources are named
    ``uri_prefix`` + the path. ``output_schemas=False`` leaves the response schemas
    out (clients check structured results against them, and an API that strays
    from its document then fails there). ``server`` adds the components to an existing
    server instead of a new one.
    """
    from ...server.server import MCPServer

    if not isinstance(client, httpx.AsyncClient):
        raise ConfigurationError(
            f"client must be an httpx.AsyncClient, not {type(client).__name__}"
        )
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
        raise ConfigurationError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if type(max_error_body) is not int or max_error_body < 0:
        raise ConfigurationError(f"max_error_body must be an int >= 0, not {max_error_body!r}")
    document = load_document(spec)
    if base_url is None and not str(client.base_url):
        url = document.server_url
        base_url = url if url and "://" in url else None
    settings = HTTPSettings(
        client=client,
        base_url=base_url,
        headers=dict(headers or {}),
        timeout=timeout,
        forward_bearer_token=forward_bearer_token,
        max_error_body=max_error_body,
    )
    if server is None:
        server = MCPServer(
            name=name or document.title,
            version=version or document.api_version,
            description=_text(document.raw.get("info") or {}),
        )
    add_operations(
        server,
        document,
        settings,
        route_maps=tuple(route_maps),
        names=names,
        uri_prefix=uri_prefix,
        output_schemas=output_schemas,
    )
    return server


def add_operations(
    server: MCPServer,
    document: Document,
    settings: HTTPSettings,
    *,
    route_maps: tuple[RouteMap, ...],
    names: Mapping[str, str] | None,
    uri_prefix: str,
    output_schemas: bool = True,
) -> None:
    """Register each operation of ``document`` on ``server`` as its route map says."""
    converter = SchemaConverter(document)
    namer = ToolNamer(names)
    for op in document.operations():
        kind = route_of(op, route_maps)
        if kind == "exclude":
            continue
        call = build_call(op, converter, settings, output=output_schemas)
        component = namer.name(op)
        description = _text({"summary": op.summary, "description": op.description})
        if op.deprecated:
            description = f"Deprecated. {description}".strip()
        if kind != "tool":
            uri, variables, optional = _uri(uri_prefix, call)
            if uri in server.resources.static or server.resources.template_for(uri):
                # Two operations, one URI (say GET and a bodiless POST of one path, both
                # mapped to resources): the later one stays a tool rather than replace it.
                log.warning("%s: %s is taken; served as a tool", call.describe(), uri)
                kind = "tool"
        if kind == "tool":
            server.tools.add(
                create_tool(
                    id=component,
                    description=description or call.describe(),
                    execute=_executor(call),
                    input_schema=call.input_schema,
                    output_schema=call.output_schema,
                    annotations=_ANNOTATIONS.get(op.method, _OTHER),
                    meta={"mcpkit/openapi": {"method": op.method.upper(), "path": op.path}},
                )
            )
            continue
        server.resources.add(
            uri,
            _reader(uri, call, variables, optional),
            name=component,
            description=description or call.describe(),
            mime_type="application/json" if call.output_schema is not None else None,
        )


def _text(fields: Mapping[str, Any]) -> str:
    parts = [str(fields[k]).strip() for k in ("summary", "description") if fields.get(k)]
    return "\n\n".join(p for p in parts if p)


def _uri(prefix: str, call: OperationCall) -> tuple[str, dict[str, str], set[str]]:
    """The resource URI (template) of ``call``'s operation; each template variable's
    argument; the optional ones (query parameters, RFC 6570 § 3.2.8 ``{?a,b}``)."""
    variables: dict[str, str] = {}
    path_args = {
        p.name: arg
        for arg, p in call.targets.items()
        if isinstance(p, Parameter) and p.location == "path"
    }

    def ident(name: str, arg: str) -> str:
        # Template variables are identifiers here (RFC 6570 § 2.3 allows less than
        # OpenAPI names do); the reader maps each back to its argument.
        base = re.sub(r"\W", "_", name)
        base = base if base.isidentifier() and base != "ctx" else "p_" + base
        out, n = base, 1
        while out in variables:
            n += 1
            out = f"{base}_{n}"
        variables[out] = arg
        return out

    def var(match: re.Match[str]) -> str:
        return "{" + ident(match.group(1), path_args[match.group(1)]) + "}"

    uri = prefix + _VAR_RE.sub(var, call.op.path.lstrip("/"))
    optional: set[str] = set()
    if variables:  # a template: optional scalar query parameters may join it
        properties = call.input_schema["properties"]
        defs = call.input_schema.get("$defs", {})
        query = [
            ident(p.name, arg)
            for arg, p in call.targets.items()
            if isinstance(p, Parameter)
            and p.location == "query"
            and not p.required
            and _is_scalar(properties[arg], defs)
        ]
        if query:
            uri += "{?" + ",".join(query) + "}"
            optional.update(query)
    return uri, variables, optional


def _is_scalar(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    """A string, number, integer or boolean (a URI variable carries one such value)."""
    kinds: set[Any] = set()
    for branch in schema.get("anyOf") or schema.get("oneOf") or [schema]:
        ref = branch.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            branch = defs.get(ref[len("#/$defs/") :], {})
        kind = branch.get("type")
        kinds.update(kind if isinstance(kind, list) else [kind])
    kinds.discard("null")
    return bool(kinds) and kinds <= {"string", "number", "integer", "boolean"}


def _executor(call: OperationCall) -> Any:
    # The whole input in one parameter (create_tool's input form), named so that no
    # operation's argument is likely to take its place. Annotated Any: a plain parameter,
    # so registration builds no pydantic model per operation (start-up time).
    async def execute(mcpkit_openapi_arguments: Any, ctx: Context) -> dict[str, Any]:
        return await call.run(mcpkit_openapi_arguments, ctx)

    # The annotations as objects, not the strings of this module's __future__ import:
    # registration reads them, and evaluating the strings costs a compile() each, per
    # operation (a third of start-up on GitHub's 1,200 operations).
    execute.__annotations__ = dict(_EXECUTE_ANNOTATIONS)
    return execute


_EXECUTE_ANNOTATIONS: Final[dict[str, Any]] = {
    "mcpkit_openapi_arguments": Any,
    "ctx": Context,
    "return": dict[str, Any],
}


def _reader(uri: str, call: OperationCall, variables: Mapping[str, str], optional: set[str]) -> Any:
    """A resource function taking the template's variables (and the context)."""
    template = UriTemplate(uri)

    async def read(ctx: Context, **values: str | None) -> str | bytes:
        arguments = {variables[k]: v for k, v in values.items() if v is not None}
        try:
            response = await call.send(arguments, ctx)
        except httpx.HTTPError as exc:
            raise MCPError(f"{call.describe()} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code == 404 and variables:
            raise ResourceNotFound(template.expand(values))
        if response.status_code >= 400:
            raise MCPError(call.error_text(response), data={"status": response.status_code})
        if _textual(response.headers.get("content-type", "")):
            return response.text
        return response.content  # a blob (2025-11-25 server/resources § Binary Content)

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context),
        *(
            inspect.Parameter(v, keyword, annotation=str | None, default=None)
            if v in optional
            else inspect.Parameter(v, keyword, annotation=str)
            for v in variables
        ),
    ]
    read.__signature__ = inspect.Signature(params, return_annotation=str | bytes)  # type: ignore[attr-defined]
    read.__annotations__ = {
        "ctx": Context,
        **{v: str | None if v in optional else str for v in variables},
        "return": str | bytes,
    }
    read.__name__ = call.op.operation_id or "read"
    return read


def _textual(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return (
        not media
        or media.startswith("text/")
        or media.endswith(("json", "xml", "yaml", "javascript"))
        or media == "application/x-www-form-urlencoded"
    )


def from_fastapi(
    app: Any,
    *,
    name: str | None = None,
    version: str | None = None,
    base_url: str = "http://fastapi",
    **options: Any,
) -> MCPServer:
    """A server serving ``app``'s operations, called in process (``httpx.ASGITransport``:
    no socket). The app's lifespan runs inside the server's, each time the server
    starts. The client holds no connection (an ASGI transport has none to pool), so
    it lives as long as the server object. Other options are :func:`from_openapi`'s."""
    if not callable(getattr(app, "openapi", None)):
        raise ConfigurationError(
            f"from_fastapi needs a FastAPI application (with .openapi()), not {type(app).__name__}"
        )
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)
    server = from_openapi(
        app.openapi(),
        client=client,
        name=name or getattr(app, "title", None),
        version=version or getattr(app, "version", None),
        **options,
    )

    @contextlib.asynccontextmanager
    async def app_lifespan(_: MCPServer) -> AsyncIterator[None]:
        router = getattr(app, "router", None)
        context = getattr(router, "lifespan_context", None)
        if context is None:
            yield
            return
        async with context(app):
            yield

    server.add_lifespan(app_lifespan, label="fastapi app")
    return server
