"""Typed hooks: a middleware class whose subclasses override the hooks they need.

.. code-block:: python

    class Audit(Hooks):
        async def on_call_tool(self, context, call_next):
            if context.params["name"] == "delete" and context.auth is None:
                raise Forbidden("sign in to delete")
            result = await call_next(context)        # a CallToolResult
            log.info("%s -> error=%s", context.params["name"], result.get("isError", False))
            return result

        async def on_list_tools(self, context, call_next):
            tools = await call_next(context)         # the page's tool definitions
            return [t for t in tools if not t["name"].startswith("admin_")]

    server = MCPServer(name="demo", middleware=[Audit(), timing])

A ``Hooks`` instance is a middleware of the server's one chain (the list order
is the nesting order, with plain ``mw(ctx, call_next)`` functions around or
inside it), on every transport and both protocol eras. It *watches* only the
methods whose hooks its class overrides (``watches``, see
:mod:`mcpkit.server.middleware`): a class that overrides ``on_call_tool`` only
adds no step to ``tools/list`` or any other method.

Each hook gets a :class:`HookContext` (``params``, typed as in
:mod:`.hook_types`, and the request's session, auth and revision) and a
``call_next(context)`` returning the typed result. A hook may pass that result
on, change it, return its own without calling ``call_next`` (a
short-circuit), assign new ``context.params`` before ``call_next`` (the handler
serves the changed request), or raise an :class:`~mcpkit.errors.MCPError`.
``on_request`` sees every request, around the typed hook of the method. The
params and results are the request's and the result's own dicts, typed: a hook
that passes them on adds no coroutine and no copy to the request (the
listings' hooks, which see a list, add one of each).

``on_initialize`` runs on the handshake era only: the 2026-07-28 revision has no
``initialize`` (every request carries the client's info and capabilities, read
as ``context.client_info`` in any hook), and its ``server/discover`` is a probe a
client may skip, not a handshake. ``on_notification`` sees each notification the
client sends after the server acted on it (the lifecycle and cancellation do not
wait); its ``call_next`` does nothing more, so leaving it out suppresses nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..server.middleware import ANY_NOTIFICATION, ANY_REQUEST, CallNext, MiddlewareContext
from .hook_types import (
    LISTED,
    WHOLE,
    CallToolParams,
    CallToolResult,
    GetPromptParams,
    GetPromptResult,
    InitializeParams,
    InitializeResult,
    ListParams,
    ReadResourceParams,
)

if TYPE_CHECKING:
    from ..auth.info import AuthInfo
    from ..server.middleware import Middleware
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = ["HookContext", "HookNext", "Hooks"]

P = TypeVar("P")
R = TypeVar("R")


class HookContext(Generic[P]):
    """What a hook knows: ``params`` (typed; assign new ones to change the request)
    and the request.

    ``request`` is the chain's :class:`~mcpkit.MiddlewareContext`; the common parts
    of it read directly: ``method``, ``session``, ``session_id``, ``auth``,
    ``transport``, ``client_info``, ``revision``, ``era``, ``server``,
    ``lifespan_state``.
    """

    __slots__ = ("_call_next", "_raw", "params", "request")

    def __init__(self, request: MiddlewareContext, call_next: CallNext) -> None:
        self.request = request
        self.params: P = request.params  # type: ignore[assignment]
        self._call_next = call_next
        self._raw: dict[str, Any] | None = None  # a listing's result, around its list

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def session(self) -> ServerSession:
        return self.request.session

    @property
    def session_id(self) -> str | None:
        return self.request.session_id

    @property
    def auth(self) -> AuthInfo | None:
        """Who is calling (HTTP with auth); None on stdio and unauthenticated."""
        return self.request.auth

    @property
    def transport(self) -> str | None:
        return self.request.transport

    @property
    def client_info(self) -> dict[str, Any] | None:
        return self.request.client_info

    @property
    def revision(self) -> str:
        return self.request.revision

    @property
    def era(self) -> str:
        return self.request.era

    @property
    def server(self) -> MCPServer:
        return self.request.server

    @property
    def lifespan_state(self) -> Any:
        return self.request.lifespan_state

    def __repr__(self) -> str:
        return f"<HookContext {self.method} {self.params!r}>"

    def proceed(self) -> Awaitable[dict[str, Any]]:
        """Serve the request as ``params`` now say (``call_next(context)`` is this
        method): the rest of the chain's coroutine, none of its own."""
        ctx = self.request
        params: Any = self.params
        if params is not ctx.params:
            if type(params) is not dict:
                raise TypeError(f"context.params must be a dict, not {type(params).__name__}")
            ctx.params = params  # the handler serves the changed request (server.middleware)
        return self._call_next(ctx)

    async def listed(self, key: str) -> list[dict[str, Any]]:
        """A listing's ``call_next``: the list under ``key`` of the result."""
        self._raw = raw = await self.proceed()
        items = raw.get(key)
        return items if isinstance(items, list) else []

    def put_listed(self, key: str, items: Any, hook: str) -> dict[str, Any]:
        """The result dict for the list a listing's hook returned (its other fields
        kept; the very dict :meth:`listed` read when the list is the one it gave)."""
        raw = self._raw
        if raw is not None and items is raw.get(key):
            return raw
        if isinstance(items, str | bytes | dict) or not isinstance(items, list | tuple):
            raise TypeError(f"{hook} returned {type(items).__name__}, not a list")
        return {**(raw or {}), key: list(items)}


#: ``await call_next(context)``: the rest of the chain and the handler; the typed result.
HookNext = Callable[[HookContext[P]], Awaitable[R]]

#: What the hooks of whole results get as ``call_next``.
_proceed = HookContext.proceed


def _whole_link(hook: Callable[..., Awaitable[Any]]) -> Middleware:
    """The chain's link for a hook of a whole result (a bound method of the Hooks): a
    plain function returning the hook's coroutine, so the hook is the only step added."""

    def link(ctx: MiddlewareContext, call_next: CallNext) -> Awaitable[dict[str, Any]]:
        return hook(HookContext(ctx, call_next), _proceed)

    return link


def _listed_link(hook: Callable[..., Awaitable[Any]], name: str, key: str) -> Middleware:
    """The chain's link for a listing's hook: the list in, the result dict out."""
    call_next_listed = functools.partial(HookContext.listed, key=key)

    async def link(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        context: HookContext[Any] = HookContext(ctx, call_next)
        return context.put_listed(key, await hook(context, call_next_listed), name)

    return link


async def _inner(link: Middleware, call_next: CallNext, ctx: MiddlewareContext) -> dict[str, Any]:
    return await link(ctx, call_next)


def _around(request_hook: Middleware, inner: Middleware | None) -> Middleware:
    """``on_request``'s link, with the method's typed hook (``inner``) inside it."""
    if inner is None:
        return request_hook

    def link(ctx: MiddlewareContext, call_next: CallNext) -> Awaitable[dict[str, Any]]:
        return request_hook(ctx, functools.partial(_inner, inner, call_next))

    return link


def _notification_link(hook: Callable[..., Awaitable[Any]]) -> Middleware:
    async def link(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        await hook(HookContext(ctx, call_next), _proceed)
        return {}

    return link


class Hooks:
    """Typed hooks on the middleware chain: subclass it and override the hooks you need.

    Every hook defaults to ``return await call_next(context)``; one not
    overridden is not linked into the chain at all. Pass an instance where
    middleware goes (``MCPServer(middleware=[...])``, ``server.add_middleware``).
    """

    @functools.cached_property
    def watches(self) -> dict[str, Middleware]:
        """The methods this class's hooks watch, each mapped to its link in the chain."""
        cls = type(self)
        links: dict[str, Middleware] = {}
        for name, method in WHOLE.items():
            if getattr(cls, name) is not getattr(Hooks, name):
                links[method] = _whole_link(getattr(self, name))
        for name, (method, key) in LISTED.items():
            if getattr(cls, name) is not getattr(Hooks, name):
                links[method] = _listed_link(getattr(self, name), name, key)
        if cls.on_request is not Hooks.on_request:
            whole = _whole_link(self.on_request)
            links = {m: _around(whole, link) for m, link in links.items()}
            links[ANY_REQUEST] = whole
        if cls.on_notification is not Hooks.on_notification:
            links[ANY_NOTIFICATION] = _notification_link(self.on_notification)
        return links

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        """Serve ``ctx`` as the server's chain does (for a caller that links it whole)."""
        links = self.watches
        link = links.get(ctx.method)
        if link is None:
            star = ANY_NOTIFICATION if ctx.method.startswith("notifications/") else ANY_REQUEST
            link = links.get(star)
        if link is None:
            return await call_next(ctx)
        return await link(ctx, call_next)

    # -- the hooks: each one's default passes the request on --------------------------------

    async def on_request(
        self,
        context: HookContext[dict[str, Any]],
        call_next: HookNext[dict[str, Any], dict[str, Any]],
    ) -> dict[str, Any]:
        """Every request (its params and result dicts), around the method's typed hook."""
        return await call_next(context)

    async def on_call_tool(
        self,
        context: HookContext[CallToolParams],
        call_next: HookNext[CallToolParams, CallToolResult],
    ) -> CallToolResult:
        """``tools/call``; ``ToolResult(...).to_dict()`` builds a result of your own."""
        return await call_next(context)

    async def on_read_resource(
        self,
        context: HookContext[ReadResourceParams],
        call_next: HookNext[ReadResourceParams, list[dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """``resources/read``; the result is the list of contents."""
        return await call_next(context)

    async def on_get_prompt(
        self,
        context: HookContext[GetPromptParams],
        call_next: HookNext[GetPromptParams, GetPromptResult],
    ) -> GetPromptResult:
        """``prompts/get``; the result has ``messages`` and perhaps a ``description``."""
        return await call_next(context)

    async def on_list_tools(
        self,
        context: HookContext[ListParams],
        call_next: HookNext[ListParams, list[dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """``tools/list`` (each page); the result is the list of tool definitions."""
        return await call_next(context)

    async def on_list_resources(
        self,
        context: HookContext[ListParams],
        call_next: HookNext[ListParams, list[dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """``resources/list`` (each page); the result is the list of resources."""
        return await call_next(context)

    async def on_list_resource_templates(
        self,
        context: HookContext[ListParams],
        call_next: HookNext[ListParams, list[dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """``resources/templates/list`` (each page); the result is the list of templates."""
        return await call_next(context)

    async def on_list_prompts(
        self,
        context: HookContext[ListParams],
        call_next: HookNext[ListParams, list[dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """``prompts/list`` (each page); the result is the list of prompts."""
        return await call_next(context)

    async def on_initialize(
        self,
        context: HookContext[InitializeParams],
        call_next: HookNext[InitializeParams, InitializeResult],
    ) -> InitializeResult:
        """``initialize`` (the handshake era only; see the module doc)."""
        return await call_next(context)

    async def on_notification(
        self, context: HookContext[dict[str, Any]], call_next: HookNext[dict[str, Any], Any]
    ) -> None:
        """Each notification from the client, after the server acted on it."""
        await call_next(context)
