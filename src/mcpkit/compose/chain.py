"""The mounted server's middleware, run inside the parent's for requests to its components.

A mount of a server with middleware adds one middleware to the parent
(``server.add_middleware``): a request for one of the mounted components
(``tools/call``, ``prompts/get``, ``resources/read``, ``resources/subscribe`` and
``unsubscribe``, ``completion/complete``) runs through the child's chain, built
once at mount time, and then on through the rest of the parent's. The child's
middleware sees the request as if sent to the child: ``params`` carry its own
tool or prompt name and its own URI. Everything else (listings, the parent's own
components) passes straight on. A child without middleware adds nothing, so
mounting costs local tools nothing per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..server.middleware import CallNext, MiddlewareChains, MiddlewareContext
from ..server.server import MCPServer
from .naming import unprefixed_name, unprefixed_uri

__all__ = ["child_middleware"]

Rename = Callable[[dict[str, Any]], dict[str, Any] | None]
# The params a rename changes (the parent's name of the component).
_NAMED = frozenset({"name", "uri", "ref"})


def child_middleware(
    parent: MCPServer, child: MCPServer, namespace: str, tool_names: set[str]
) -> Any:
    """The parent's middleware running ``child``'s chain for its mounted components.

    ``tool_names`` is the live set of the parent's names of the child's tools
    (:class:`~.mount.Mount` keeps it). None when ``child`` has no middleware. A
    child with component sources (a proxy) also has the names under its namespace
    that the parent does not serve itself (its sources may hold them), and
    ``logging/setLevel`` (a proxy passes the level up).
    """
    if not child.middleware:
        return None
    sourced = bool(child.component_sources)

    def tool(params: dict[str, Any]) -> dict[str, Any] | None:
        name = params.get("name")
        if not isinstance(name, str):
            return None
        if name not in tool_names and (not sourced or name in parent.tools):
            return None
        own = unprefixed_name(namespace, name)
        return None if not own else {**params, "name": own}

    def prompt(params: dict[str, Any]) -> dict[str, Any] | None:
        name = params.get("name")
        if not isinstance(name, str):
            return None
        own = unprefixed_name(namespace, name)
        if own is None:
            return None
        if child.prompts.find(own, params.get("version")):
            return {**params, "name": own}
        if sourced and not parent.prompts.serves(name, params.get("version")):
            return {**params, "name": own}
        return None

    def resource(params: dict[str, Any]) -> dict[str, Any] | None:
        uri = params.get("uri")
        own = unprefixed_uri(namespace, uri) if isinstance(uri, str) else None
        return None if own is None else {**params, "uri": own}

    def completion(params: dict[str, Any]) -> dict[str, Any] | None:
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            own = unprefixed_name(namespace, ref["name"])
            key = "name"
        elif ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
            own = unprefixed_uri(namespace, ref["uri"])
            key = "uri"
        else:
            return None
        return None if own is None else {**params, "ref": {**ref, key: own}}

    renames: dict[str, Rename] = {
        "tools/call": tool,
        "prompts/get": prompt,
        "resources/read": resource,
        "resources/subscribe": resource,
        "resources/unsubscribe": resource,
        "completion/complete": completion,
    }
    if sourced:
        renames["logging/setLevel"] = lambda params: params
    # The child's chain of each renamed method (only the middleware that watch it).
    chains = MiddlewareChains(child.middleware, renames).requests
    for method in set(renames) - set(chains):
        del renames[method]

    async def mounted_chain(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        rename = renames.get(ctx.method)
        own = rename(ctx.params) if rename is not None else None
        if own is None:
            return await call_next(ctx)

        async def rest(params: dict[str, Any]) -> dict[str, Any]:
            if params is not own:
                # The child's middleware changed the request: serve its params, under the
                # parent's names where it left the child's names as they were.
                parents = ctx.params
                kept = {k: parents[k] for k in _NAMED & parents.keys() if params.get(k) == own[k]}
                ctx.params = {**params, **kept}
            return await call_next(ctx)  # the parent's request, with the parent's names

        seen = MiddlewareContext(ctx.session, ctx.method, own, ctx.request_id, ctx.auth_info, rest)
        return await chains[ctx.method](seen)

    if not renames:
        return None
    # Only the methods the child's middleware watch pass through this link.
    mounted_chain.watches = frozenset(renames)  # type: ignore[attr-defined]
    mounted_chain.__qualname__ = f"mounted_chain[{namespace}]"
    return mounted_chain
