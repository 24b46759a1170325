"""How this client becomes known to an authorization server.

In the order basic/authorization (2025-11-25) § client registration approaches
asks for:

1. pre-registered credentials (``OAuth(client_id=..., client_secret=...)``);
2. a Client ID Metadata Document: the ``client_id`` is the HTTPS URL of a JSON
   document describing the client, used when the server advertises
   ``client_id_metadata_document_supported`` (draft-ietf-oauth-client-id-metadata-document);
3. Dynamic Client Registration (RFC 7591) at the server's ``registration_endpoint``.

A registration belongs to one issuer: :func:`usable` refuses one made with
another authorization server, so a protected resource that moves to a new
server gets a new registration, never the old credentials (SEP-2352).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.registration)"):
    import httpx

from ...errors import AuthorizationFailed
from .discovery import AuthServerMetadata
from .exchange import DEFAULT_POLICY, ExchangePolicy, exchange
from .storage import ClientRegistration

__all__ = ["client_metadata", "dynamic_registration", "metadata_document_registration", "usable"]

log = logging.getLogger("mcpkit.auth.client")


def usable(registration: ClientRegistration | None, issuer: str) -> bool:
    """A registration made with ``issuer`` (one without an issuer is pre-registered for any)."""
    return registration is not None and registration.issuer in (None, issuer)


def client_metadata(
    *,
    client_name: str,
    redirect_uris: Sequence[str],
    grant_types: Sequence[str],
    token_endpoint_auth_method: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """RFC 7591 § 2 client metadata (also the body of a Client ID Metadata Document)."""
    metadata: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types),
        "response_types": ["code"] if "authorization_code" in grant_types else [],
        "token_endpoint_auth_method": token_endpoint_auth_method,
        # SEP-837 / OpenID Connect registration: a loopback redirect makes a native app.
        "application_type": "native",
    }
    metadata.update(extra or {})
    return metadata


def metadata_document_registration(url: str, server: AuthServerMetadata) -> ClientRegistration:
    """The registration a Client ID Metadata Document gives: its URL is the ``client_id``."""
    return ClientRegistration(
        client_id=url, token_endpoint_auth_method="none", issuer=server.issuer
    )


async def dynamic_registration(
    http: httpx.AsyncClient,
    server: AuthServerMetadata,
    metadata: Mapping[str, Any],
    *,
    policy: ExchangePolicy = DEFAULT_POLICY,
) -> ClientRegistration:
    """Register with RFC 7591 § 3.1; the answer's metadata wins over what we asked for."""
    endpoint = server.registration_endpoint
    if not endpoint:
        raise AuthorizationFailed(
            f"authorization server {server.issuer} supports neither dynamic client "
            "registration nor client ID metadata documents; give OAuth(client_id=...) "
            "from a registration made beforehand",
            error="registration_unavailable",
        )
    request = http.build_request(
        "POST", endpoint, json=dict(metadata), headers={"accept": "application/json"}
    )
    try:
        resp = await exchange(http, request, what="the registration endpoint", policy=policy)
    except httpx.HTTPError as exc:
        raise AuthorizationFailed(
            f"cannot reach the registration endpoint {endpoint}: {type(exc).__name__}",
            error="registration_failed",
        ) from exc
    try:
        data = resp.json()
    except ValueError:
        data = None
    if (
        resp.status_code not in (200, 201)
        or not isinstance(data, dict)
        or not data.get("client_id")
    ):
        error = data.get("error") if isinstance(data, dict) else None
        raise AuthorizationFailed(
            f"client registration at {endpoint} failed: "
            + (str(error) if error else f"HTTP {resp.status_code}"),
            error=str(error) if error else "registration_failed",
        )
    secret = data.get("client_secret")
    method = data.get("token_endpoint_auth_method") or (
        metadata.get("token_endpoint_auth_method") if not secret else None
    )
    if not method:
        method = "client_secret_basic" if secret else "none"
        if secret and "client_secret_basic" not in server.token_endpoint_auth_methods:
            if "client_secret_post" in server.token_endpoint_auth_methods:
                method = "client_secret_post"
    redirect_uris = data.get("redirect_uris") or metadata.get("redirect_uris") or ()
    log.info("registered with %s", server.issuer)
    return ClientRegistration(
        client_id=str(data["client_id"]),
        client_secret=secret if isinstance(secret, str) else None,
        token_endpoint_auth_method=str(method),
        issuer=server.issuer,
        redirect_uris=tuple(str(u) for u in redirect_uris),
        metadata={
            k: v for k, v in data.items() if k not in ("client_secret", "registration_access_token")
        },
    )
