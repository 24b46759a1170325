"""Key functions: who or what a request counts against (rate limits, cache entries).

A key function takes the request's :class:`~mcpkit.server.middleware.MiddlewareContext`
and returns a string, or None when the request has no such key (then the
middleware using it leaves the request alone):

- :func:`by_principal`: who the request's verified token speaks for
  (:attr:`mcpkit.auth.AuthInfo.principal`), on every transport and both eras;
- :func:`by_session`: the handshake-era session (``Mcp-Session-Id`` on HTTP, the
  connection on stdio and in memory); None on 2026-07-28, which has no session;
- :func:`by_client_address`: the HTTP peer's IP address, as the ASGI server saw it,
  when the app is wrapped in :class:`ClientAddress` (the MCP request itself does not
  carry it); None on stdio and in memory;
- :func:`by_tool`: the tool of a ``tools/call`` (one budget per tool, shared by all
  callers); None for other methods;
- :func:`combined`: several keys at once (``combined(by_principal, by_tool)``: one
  budget per user and tool), None when any part is None.

Keys may hold anything a user sent (a principal's subject, a tool name): stores
digest them before they become part of a Redis key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Final

from ..server.middleware import MiddlewareContext

__all__ = [
    "ClientAddress",
    "KeyFunction",
    "by_client_address",
    "by_principal",
    "by_session",
    "by_tool",
    "combined",
    "digest",
]

#: ``key(ctx) -> str | None``: what a request counts against; None: it is not counted.
KeyFunction = Callable[[MiddlewareContext], "str | None"]

_address: ContextVar[str | None] = ContextVar("mcpkit_client_address", default=None)

#: ASGI ``receive``/``send`` and an app, as :class:`ClientAddress` needs them.
_ASGIApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


def digest(key: str) -> str:
    """A short fixed-length name for ``key`` (128 bits of SHA-256, hex): what a shared
    store's key holds instead of the user-supplied text."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def by_principal(ctx: MiddlewareContext) -> str | None:
    auth = ctx.auth
    return None if auth is None else "p:" + auth.principal


def by_session(ctx: MiddlewareContext) -> str | None:
    if ctx.era == "stateless":
        return None
    sid = ctx.session_id
    # stdio and in memory: one session per connection, alive in this process only.
    return "s:" + sid if sid is not None else f"c:{id(ctx.session)}"


def by_client_address(ctx: MiddlewareContext) -> str | None:
    address = _address.get()
    return None if address is None else "a:" + address


def by_tool(ctx: MiddlewareContext) -> str | None:
    if ctx.method != "tools/call":
        return None
    name = ctx.params.get("name")
    return "t:" + name if isinstance(name, str) else None


def combined(*keys: KeyFunction) -> KeyFunction:
    """One key of all of ``keys``' (None when any of them is None)."""

    def key(ctx: MiddlewareContext) -> str | None:
        parts = []
        for part in keys:
            value = part(ctx)
            if value is None:
                return None
            parts.append(value)
        return "|".join(parts)

    return key


class ClientAddress:
    """ASGI middleware that makes the peer's address known to :func:`by_client_address`.

    ``app = ClientAddress(server.http_app())``. The address is the ASGI scope's
    ``client`` (what the ASGI server saw: a proxy's, behind one). With
    ``trusted_proxies`` (the addresses of your own proxies), the rightmost
    ``X-Forwarded-For`` entry that is not one of them is used instead, as a proxy
    that appends the peer it saw writes it (a client can forge the entries to the
    left, never the one your proxy appended).
    """

    __slots__ = ("app", "trusted_proxies")

    FORWARDED: Final = b"x-forwarded-for"

    def __init__(self, app: _ASGIApp, *, trusted_proxies: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.trusted_proxies = frozenset(trusted_proxies)

    def address_of(self, scope: dict[str, Any]) -> str | None:
        client = scope.get("client")
        peer: str | None = str(client[0]) if client else None
        if peer is None or peer not in self.trusted_proxies:
            return peer
        for name, value in scope.get("headers", ()):
            if name == self.FORWARDED:
                text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                hops = [h.strip() for h in text.split(",") if h.strip()]
                for hop in reversed(hops):
                    if hop not in self.trusted_proxies:
                        return hop
        return peer

    async def __call__(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        token = _address.set(self.address_of(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            _address.reset(token)
