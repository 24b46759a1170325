"""The authorization server's dynamic client registration endpoint (RFC 7591).

Every field is bounded (body size, redirect URI count and length, client name length);
redirect URIs are checked by :mod:`..redirects`; only the code flow and refresh are
registrable, with the token endpoint auth methods the metadata lists. A confidential
client (``client_secret_*``) gets a generated secret; a public one (``none``) relies on
PKCE, as MCP clients usually are.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING, Any

import orjson

from ..http import OAuthError, Receive, Scope, Send, header, read_body, send_json
from ..metadata import TOKEN_AUTH_METHODS
from ..redirects import MAX_REDIRECT_URIS, redirect_uri_problem
from ..storage import RegisteredClient

if TYPE_CHECKING:
    from ..context import ServerContext

__all__ = ["handle"]

_MAX_NAME = 200
_GRANTS = frozenset({"authorization_code", "refresh_token"})
# Human-readable and URL fields kept from the request (RFC 7591 § 2), each bounded.
_KEPT = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "software_id", "software_version")


def _metadata_error(description: str) -> OAuthError:
    return OAuthError("invalid_client_metadata", description)


def _client_from(data: Any, now: float, expires_at: float | None) -> RegisteredClient:
    if not isinstance(data, dict):
        raise _metadata_error("the registration request must be a JSON object")
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise OAuthError("invalid_redirect_uri", "redirect_uris must be a non-empty list")
    if len(uris) > MAX_REDIRECT_URIS:
        raise OAuthError("invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect URIs")
    for uri in uris:
        if (problem := redirect_uri_problem(uri)) is not None:
            raise OAuthError("invalid_redirect_uri", problem)
    method = data.get("token_endpoint_auth_method", "client_secret_basic")
    if method == "private_key_jwt":
        raise _metadata_error(
            "private_key_jwt is for clients named by a client metadata document here"
        )
    if method not in TOKEN_AUTH_METHODS:
        raise _metadata_error(f"token_endpoint_auth_method must be one of {TOKEN_AUTH_METHODS}")
    grants = data.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not grants or not set(grants) <= _GRANTS:
        raise _metadata_error("grant_types may only hold authorization_code and refresh_token")
    responses = data.get("response_types", ["code"])
    if responses != ["code"]:
        raise _metadata_error("response_types must be ['code']")
    name = data.get("client_name")
    if name is not None and (not isinstance(name, str) or len(name) > _MAX_NAME):
        raise _metadata_error(f"client_name must be a string of at most {_MAX_NAME} characters")
    scope = data.get("scope")
    if scope is not None and (not isinstance(scope, str) or len(scope) > 1000):
        raise _metadata_error("scope must be a space-separated string")
    kept: dict[str, Any] = {}
    for key in _KEPT:
        value = data.get(key)
        if isinstance(value, str) and len(value) <= 2000:
            kept[key] = value
    return RegisteredClient(
        client_id=secrets.token_urlsafe(24),
        client_secret=None if method == "none" else secrets.token_urlsafe(32),
        redirect_uris=tuple(uris),
        token_endpoint_auth_method=method,
        grant_types=tuple(dict.fromkeys(grants)),
        client_name=name,
        scope=scope,
        issued_at=now,
        expires_at=expires_at,
        metadata=kept,
    )


async def handle(proxy: ServerContext, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] != "POST":
        raise OAuthError("invalid_request", "registration takes a POST", status=405)
    client = scope.get("client")
    address = str(client[0]) if client else "unknown"
    wait = await proxy.registration_limiter.allow(address)
    if wait is not None:
        raise OAuthError(
            "temporarily_unavailable",
            "too many registrations from this address; retry later",
            status=429,
            headers=[(b"retry-after", str(int(wait)).encode())],
        )
    kind = (header(scope, b"content-type") or "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise _metadata_error("the registration request must be application/json")
    body = await read_body(receive)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise _metadata_error("the registration request is not valid JSON") from None
    now = time.time()
    client = _client_from(data, now, proxy.client_lifetime(now))
    await proxy.storage.save_client(client)
    answer: dict[str, Any] = {
        "client_id": client.client_id,
        "client_id_issued_at": int(now),
        "redirect_uris": list(client.redirect_uris),
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "grant_types": list(client.grant_types),
        "response_types": ["code"],
        **client.metadata,
    }
    if client.client_name is not None:
        answer["client_name"] = client.client_name
    if client.scope is not None:
        answer["scope"] = client.scope
    if client.client_secret is not None:
        answer["client_secret"] = client.client_secret
        # RFC 7591 § 3.2.1: 0 means the secret does not expire.
        answer["client_secret_expires_at"] = (
            0 if client.expires_at is None else int(client.expires_at)
        )
    await send_json(send, 201, answer)
