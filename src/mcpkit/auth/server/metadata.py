"""The authorization server's metadata document (RFC 8414) and its well-known paths.

Published at ``/.well-known/oauth-authorization-server`` (with the issuer's path
inserted when it has one, RFC 8414 § 3.1) and at ``/.well-known/openid-configuration``
for clients that try OpenID discovery first (MCP authorization § authorization server
metadata discovery). What it promises is what the endpoints enforce: the code flow
only, PKCE with ``S256`` only (MCP authorization § authorization code protection: a
client refuses a server that does not list it), ``iss`` in every authorization
response (RFC 9207), dynamic registration (RFC 7591) and revocation (RFC 7009).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

__all__ = ["TOKEN_AUTH_METHODS", "metadata_document", "metadata_paths"]

TOKEN_AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


def metadata_document(
    *, issuer: str, scopes_supported: Sequence[str], signing_alg: str
) -> dict[str, Any]:
    base = issuer.rstrip("/")
    document: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
        "revocation_endpoint": f"{base}/revoke",
        "jwks_uri": f"{base}/jwks",
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": list(TOKEN_AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(TOKEN_AUTH_METHODS),
        "authorization_response_iss_parameter_supported": True,
        # RFC 9068: the access tokens are JWTs signed with this algorithm.
        "access_token_signing_alg_values_supported": [signing_alg],
    }
    if scopes_supported:
        document["scopes_supported"] = list(scopes_supported)
    return document


def metadata_paths(issuer: str) -> frozenset[str]:
    """The paths serving the document: RFC 8414 § 3.1 and the OIDC forms."""
    path = urlsplit(issuer).path.strip("/")
    if not path:
        return frozenset(
            {"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}
        )
    return frozenset(
        {
            f"/.well-known/oauth-authorization-server/{path}",
            f"/.well-known/openid-configuration/{path}",
            f"/{path}/.well-known/openid-configuration",
        }
    )
