"""The authorization server as a raw ASGI app, in front of the MCP app it protects.

Routes the authorization server's paths (RFC 8414 metadata, the JWKS, ``/authorize``,
``/consent``, ``/auth/callback``, ``/token``, ``/register``, ``/revoke``) to their
handlers and every other path to the wrapped app (the MCP app behind its
:class:`~mcpkit.auth.ProtectedResource`). Raw ASGI like the resource-server layer: this
package sits below the transports. An :class:`~.http.OAuthError` becomes its RFC 6749
§ 5.2 answer; anything else is logged and answered ``500 server_error`` without detail.
The JSON endpoints answer CORS preflights (browser-based MCP clients).

An issuer with a path (``https://example.com/tenant1``) serves its endpoints under that
path (``/tenant1/authorize``...) and its metadata where RFC 8414 § 3.1 puts it, the
path after the well-known name (``/.well-known/oauth-authorization-server/tenant1``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from ..asgi import WrappingApp, route_path
from .handlers import authorize, callback, register, revoke, token
from .http import OAuthError, Receive, Scope, Send, send_json, send_oauth_error

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from .context import ServerContext

    Handler = Callable[[ServerContext, Scope, Receive, Send], Awaitable[None]]

__all__ = ["AuthServerApp"]

log = logging.getLogger("mcpkit.auth.server")

_CORS: Final = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
    (b"access-control-allow-headers", b"authorization, content-type, mcp-protocol-version"),
]


class AuthServerApp(WrappingApp):
    """ASGI: the authorization server's endpoints, then ``app`` (404 without one)."""

    def __init__(self, proxy: ServerContext, app: Any = None) -> None:
        self.proxy = proxy
        self.app = app
        self._handlers: dict[str, Handler] = {
            "/authorize": authorize.handle_authorize,
            "/consent": authorize.handle_consent,
            callback.CALLBACK_PATH: callback.handle,
            "/token": token.handle,
            "/register": register.handle,
            "/revoke": revoke.handle,
        }
        self._cors_endpoints = frozenset({"/token", "/register", "/revoke", "/jwks"})
        # The issuer's path: the endpoints live under it (RFC 8414 § 2, the metadata's URLs).
        self._prefix = urlsplit(proxy.issuer).path.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.pass_through(scope, receive, send)
            return
        path = route_path(scope)
        proxy = self.proxy
        endpoint = self._endpoint(path)
        handler = self._handlers.get(endpoint) if endpoint is not None else None
        is_metadata = path in proxy.metadata_paths
        cors = is_metadata or endpoint in self._cors_endpoints
        if handler is None and not cors:
            if self.app is None:
                await send_json(send, 404, {"error": "not_found"})
                return
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and cors:
            await send_json(send, 204, {}, headers=[*_CORS, (b"access-control-max-age", b"86400")])
            return
        try:
            if is_metadata:
                await send_json(
                    send, 200, proxy.metadata(), headers=_CORS, cache=b"public, max-age=300"
                )
            elif endpoint == "/jwks":
                await send_json(
                    send, 200, proxy.signer.jwks(), headers=_CORS, cache=b"public, max-age=300"
                )
            elif handler is not None:
                await handler(proxy, scope, receive, _with_cors(send) if cors else send)
        except OAuthError as exc:
            await send_oauth_error(_with_cors(send), exc)
        except Exception:
            log.exception("the authorization server failed on %s", path)
            await send_json(
                send, 500, {"error": "server_error", "error_description": "internal error"}
            )

    def _endpoint(self, path: str) -> str | None:
        """``path`` as an endpoint below the issuer (``/authorize``), or None: not below it."""
        prefix = self._prefix
        if not prefix:
            return path
        if path.startswith(prefix) and path[len(prefix) : len(prefix) + 1] == "/":
            return path[len(prefix) :]
        return None


def _with_cors(send: Send) -> Send:
    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = dict(message, headers=[*message.get("headers", []), *_CORS])
        await send(message)

    return sending
