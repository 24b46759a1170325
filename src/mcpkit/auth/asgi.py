"""Raw ASGI pieces shared by the auth package's wrapping apps (resource server, OAuth proxy).

Both :class:`~mcpkit.auth.resource_server.ProtectedApp` and the authorization server's
app sit in front of an MCP app (or of nothing, when they serve only their own paths).
They share the same three needs, here once: the wrapped app's attributes reachable
through the wrapper (:class:`WrappingApp`), a lifespan answered when nothing is wrapped
(:func:`bare_lifespan`), and the request path relative to the mount (:func:`route_path`).
Raw ASGI because this layer sits below :mod:`mcpkit.transports`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WrappingApp", "bare_lifespan", "route_path"]

Scope = Any  # ASGI scope / receive / send, typed loosely like the rest of this layer
Receive = Any
Send = Any


def route_path(scope: Scope) -> str:
    """The path relative to where the app is mounted (``root_path``), or the full path
    when a framework keeps it in ``path`` without the mount."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


async def bare_lifespan(receive: Receive, send: Send) -> None:
    """Answer the ASGI lifespan protocol for an app with nothing to start or stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class WrappingApp:
    """Base of an ASGI app in front of ``app`` (or of None: its own paths only).

    The wrapped app's attributes stay reachable through the wrapper (``sse_path``,
    ``session()``...), so code written for the bare app keeps working; what is not
    HTTP (the lifespan, a websocket) goes to the wrapped app (:meth:`pass_through`).
    """

    __slots__ = ()

    app: Any

    def __getattr__(self, name: str) -> Any:
        app = object.__getattribute__(self, "app")
        if app is None:
            raise AttributeError(name)
        return getattr(app, name)

    async def pass_through(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A non-HTTP scope: the wrapped app's; without one, a bare lifespan (else nothing)."""
        if self.app is not None:
            await self.app(scope, receive, send)
        elif scope["type"] == "lifespan":
            await bare_lifespan(receive, send)
