"""Typed hooks: a middleware class whose subclasses override the hooks they need.

.. code-block:: python

    class Audit(Hooks):
        async def on_call_tool(self, context, call_next):
            if context.params.name == "delete" and context.auth is None:
                raise Forbidden("sign in to delete")
            result = await call_next(context)        # a ToolResult
            log.info("%s -> error=%s", context.params.name, result.is_error)
            return result

        async def on_list_tools(self, context, call_next):
            tools = await call_next(context)         # the tool definitions (dicts)
            return [t for t in tools if not t["name"].startswith("admin_")]

    server = MCPServer(name="demo", middleware=[Audit(), timing])

A ``Hooks`` instance is a middleware of the server's one chain (the list order
is the nesting order, with plain ``mw(ctx, call_next)`` functions around or
inside it), on every transport and both protocol eras. It *watches* only the
methods whose hooks its class overrides (``watches``, see
:mod:`mcpkit.server.middleware`): a class that overrides ``on_call_tool`` only
adds no step to ``tools/list`` or any other method.

Each hook gets a :class:`HookContext` (``params`` typed as in
:mod:`.hook_types`, and the request's session, auth and revision) and a
``call_next(context)`` returning the typed result. A hook may return that
result, change it (a changed field is written back into the result; one left
as it was costs no copy), return one of its own without calling ``call_next``
(a short-circuit), change ``context.params`` before ``call_next`` (the handler
serves the changed request), or raise an :class:`~mcpkit.errors.MCPError`.
``on_request`` sees every request with its raw params and result dict, around
the typed hook of the method.

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
    KINDS,
    CallToolParams,
    GetPromptParams,
    InitializeParams,
    InitializeResult,
    Kind,
    ListParams,
    NotificationKind,
    PromptResult,
    ReadResourceParams,
)

if TYPE_CHECKING:
    from ..auth.info import AuthInfo
    from ..server.content import ToolResult
    from ..server.middleware import Middleware
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = ["HookContext", "HookNext", "Hooks"]

P = TypeVar("P")
R = TypeVar("R")


class HookContext(Generic[P]):
    """What a hook knows: ``params`` (typed; assign to change the request) and the request.

    ``request`` is the chain's :class:`~mcpkit.MiddlewareContext`; the common parts
    of it read directly: ``method``, ``session``, ``session_id``, ``auth``,
    ``transport``, ``client_info``, ``revision``, ``era``, ``server``,
    ``lifespan_state``.
    """

    __slots__ = ("_call_next", "_kind", "_params", "_raw", "_sent", "request")

    def __init__(self, request: MiddlewareContext, call_next: CallNext, kind: Kind) -> None:
        self.request = request
        self._call_next = call_next
        self._kind = kind
        # Read from the request's params on first use: a hook that passes the request on
        # unread costs no typed copy of them.
        self._params: Any = None
        # The typed result of the last call_next, and the dict it was read from.
        self._sent: Any = None
        self._raw: dict[str, Any] | None = None

    @property
    def params(self) -> P:
        params = self._params
        if params is None:
            params = self._params = self._kind.params(self.request.params)
        return params  # type: ignore[no-any-return]

    @params.setter
    def params(self, value: P) -> None:
        self._params = value

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

    async def proceed(self) -> Any:
        """Serve the request as ``params`` now say; the typed result (``call_next(context)``
        is this method)."""
        ctx = self.request
        kind = self._kind
        typed = self._params
        if typed is not None:  # read, perhaps changed: serve what they say now
            raw = ctx.params
            params = kind.request(typed, raw)
            if params is not raw:
                ctx.params = params  # the handler serves the changed request (server.middleware)
        self._raw = result = await self._call_next(ctx)
        self._sent = typed = kind.result(result)
        return typed

    async def run_hook(self, hook: Callable[..., Awaitable[Any]]) -> dict[str, Any]:
        """Run ``hook(self, call_next)``; the result dict its typed result goes on as
        (the very dict :meth:`proceed` read it from when it is as it was)."""
        result = await hook(self, _proceed)
        kind = self._kind
        raw = self._raw
        if raw is not None and result is self._sent and kind.same(result, raw):
            return raw  # as call_next returned it: no copy
        return kind.out(result, raw, self.request)


#: ``await call_next(context)``: the rest of the chain and the handler; the typed result.
HookNext = Callable[[HookContext[P]], Awaitable[R]]

#: What every hook gets as ``call_next``.
_proceed = HookContext.proceed


def _typed_link(hook: Callable[..., Awaitable[Any]], kind: Kind) -> Middleware:
    """The chain's link for one typed hook (a bound method of the Hooks): a plain
    function returning the coroutine that runs it, no coroutine of its own."""

    def link(ctx: MiddlewareContext, call_next: CallNext) -> Awaitable[dict[str, Any]]:
        return HookContext(ctx, call_next, kind).run_hook(hook)

    link.__qualname__ = f"{getattr(hook, '__qualname__', kind.hook)}[link]"
    return link


async def _inner(link: Middleware, call_next: CallNext, ctx: MiddlewareContext) -> dict[str, Any]:
    return await link(ctx, call_next)


def _around(request_hook: Middleware, inner: Middleware | None) -> Middleware:
    """``on_request``'s link, with the method's typed hook (``inner``) inside it."""
    if inner is None:
        return request_hook

    async def link(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        return await request_hook(ctx, functools.partial(_inner, inner, call_next))

    return link


def _notification_link(hook: Callable[..., Awaitable[Any]]) -> Middleware:
    kind = NotificationKind("on_notification", ANY_NOTIFICATION)

    async def link(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        await hook(HookContext(ctx, call_next, kind), _proceed)
        return {}

    return link


_REQUEST = Kind("on_request", ANY_REQUEST)


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
        for name, kind in KINDS.items():
            if getattr(cls, name) is not getattr(Hooks, name):
                links[kind.method] = _typed_link(getattr(self, name), kind)
        if cls.on_request is not Hooks.on_request:
            whole = _typed_link(self.on_request, _REQUEST)
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
        """Every request: raw ``params`` and result dict, around the method's typed hook."""
        return await call_next(context)

    async def on_call_tool(
        self, context: HookContext[CallToolParams], call_next: HookNext[CallToolParams, ToolResult]
    ) -> ToolResult:
        """``tools/call``; the result is a :class:`~mcpkit.ToolResult` (its content dicts)."""
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
        call_next: HookNext[GetPromptParams, PromptResult],
    ) -> PromptResult:
        """``prompts/get``; the result is a :class:`~.hook_types.PromptResult`."""
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
        self, context: HookContext[dict[str, Any]], call_next: HookNext[dict[str, Any], None]
    ) -> None:
        """Each notification from the client, after the server acted on it."""
        await call_next(context)
