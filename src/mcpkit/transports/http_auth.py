"""The HTTP transports' side of authorization: per-request scopes and session owners.

The bearer token itself is checked before a transport sees the request, by
:class:`mcpkit.auth.ProtectedResource`'s ASGI layer (or any ASGI middleware that
puts an :class:`~mcpkit.auth.AuthInfo` in ``scope["mcpkit.auth"]``). What needs the
parsed JSON-RPC body or the session table is here:

* :func:`refuse_insufficient_scope`: the scopes ``server.required_scopes(method,
  params)`` names for each request of the body; a token without them gets ``403``
  with ``WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`` (MCP
  authorization § scope challenge handling) before anything runs;
* :func:`foreign_principal`: a session belongs to the principal that created it;
  another one naming its id is answered as if the session did not exist (404), so
  nothing about it leaks (MCP security best practices § session hijacking).

Both are called only when the request carries auth info, so an unprotected server
pays one ``is None`` test per request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..auth.info import RESOURCE_METADATA_SCOPE_KEY
from ..auth.resource_server import send_insufficient_scope
from ..server.scopes import granted_scopes
from ..server.stateless.input_required import principal_of
from .asgi import Scope, Send

if TYPE_CHECKING:
    from ..server.server import MCPServer

__all__ = ["foreign_principal", "needed_scopes", "refuse_insufficient_scope"]

_NONE: frozenset[str] = frozenset()


def needed_scopes(server: MCPServer, msg: Any) -> tuple[frozenset[str], Any]:
    """The scopes the requests of ``msg`` (one message or a batch) need, and the id to
    answer a refusal with (the request's, or None for a batch)."""
    if type(msg) is dict:
        method = msg.get("method")
        if type(method) is not str:
            return _NONE, None
        params = msg.get("params")
        return server.required_scopes(method, params if type(params) is dict else None), msg.get(
            "id"
        )
    if type(msg) is list:
        needed: set[str] = set()
        for item in msg:
            if type(item) is dict and type(item.get("method")) is str:
                params = item.get("params")
                needed.update(
                    server.required_scopes(item["method"], params if type(params) is dict else None)
                )
        return frozenset(needed), None
    return _NONE, None


async def refuse_insufficient_scope(
    server: MCPServer, msg: Any, auth_info: Any, scope: Scope, send: Send
) -> bool:
    """Answer 403 when the token lacks a scope the message needs; True when it did."""
    needed, request_id = needed_scopes(server, msg)
    if not needed:
        return False
    granted = granted_scopes(auth_info)
    if needed.issubset(granted):
        return False
    await send_insufficient_scope(
        send, scope.get(RESOURCE_METADATA_SCOPE_KEY), needed, granted, request_id
    )
    return True


def foreign_principal(owner: str | None, auth_info: Any) -> bool:
    """Whether a session created by ``owner`` (its principal; None: unauthenticated)
    must be refused to a request carrying ``auth_info``."""
    if owner is None and auth_info is None:
        return False
    return owner != principal_of(auth_info)
