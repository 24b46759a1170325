"""The request hook: one place to decorate every request the OAuth flow touches.

A :class:`RequestHook` sees each request to the protected MCP server
(``purpose="resource"``, after the ``Authorization`` header is set) and each
request to the token endpoint (``purpose="token"``, after client
authentication), just before it is sent. It may add or replace headers (a DPoP
proof, RFC 9449 § 4; ``Authorization: DPoP <token>`` instead of ``Bearer``,
§ 7.1). After the answer arrives, :meth:`RequestHook.retry` may ask for the
same request to be sent once more, decorated again (a server's ``DPoP-Nonce``
challenge, RFC 9449 § 8 and § 9). ``OAuth(hooks=[...])`` runs them in order.

Hooks see tokens: they must not log them.
"""

from __future__ import annotations

from typing import Literal, Protocol, TypeAlias, runtime_checkable

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.hooks)"):
    import httpx

from .storage import OAuthTokens

__all__ = ["RequestHook", "RequestPurpose"]

RequestPurpose: TypeAlias = Literal["resource", "token"]


@runtime_checkable
class RequestHook(Protocol):
    async def before(
        self, request: httpx.Request, *, purpose: RequestPurpose, tokens: OAuthTokens | None
    ) -> None:
        """Change ``request`` in place before it is sent (``tokens``: those it carries;
        None for a token request)."""
        ...

    async def retry(
        self, request: httpx.Request, response: httpx.Response, *, purpose: RequestPurpose
    ) -> bool:
        """True to send ``request`` once more (``before`` runs again first)."""
        ...
