"""Authorization for MCP over HTTP: a protected server and an OAuth client.

The specification's authorization (``basic/authorization`` of revisions 2025-03-26
and later) applies to HTTP transports only; stdio servers take their credentials
from the environment. What both sides share needs no extra: :class:`AuthInfo`
(what a verified token says, handed to handlers as ``ctx.auth``), the
``WWW-Authenticate`` challenge format and the verifier contract. The protected
resource, the token verifiers and the OAuth client flows are loaded on first use;
the ones that need JOSE and crypto want the ``mcpkit[auth]`` extra.

Module map: ``resource_server`` (:class:`ProtectedResource`: metadata, 401/403,
the ASGI layer; ``resource_config`` checks its options), ``static``, ``introspection``, ``jwt`` (token verifiers),
``verifier`` (the contract), ``client/`` (OAuth flows and token storage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .challenge import parse_www_authenticate, www_authenticate
from .info import AUTH_SCOPE_KEY, RESOURCE_METADATA_SCOPE_KEY, AuthInfo
from .verifier import TokenVerifier, VerifyFunction

# Loaded on first use: public name -> module of this package.
_EXPORTS: dict[str, str] = {
    "ProtectedResource": ".resource_server",
    "StaticTokenVerifier": ".static",
    "IntrospectionVerifier": ".introspection",
    "JWTVerifier": ".jwt",
}

__all__ = [
    "AUTH_SCOPE_KEY",
    "RESOURCE_METADATA_SCOPE_KEY",
    "AuthInfo",
    "IntrospectionVerifier",
    "JWTVerifier",
    "ProtectedResource",
    "StaticTokenVerifier",
    "TokenVerifier",
    "VerifyFunction",
    "parse_www_authenticate",
    "www_authenticate",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:  # each lazy name gets its import line here when its module lands
    from .introspection import IntrospectionVerifier
    from .jwt import JWTVerifier
    from .resource_server import ProtectedResource
    from .static import StaticTokenVerifier
