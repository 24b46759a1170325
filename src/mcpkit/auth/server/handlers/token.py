"""The authorization server's token endpoint: authorization code and refresh token grants.

Client authentication (RFC 6749 § 2.3) by the method the client registered: ``none``
(public: the ``client_id`` in the form, PKCE is the proof), ``client_secret_basic`` or
``client_secret_post`` (secrets compared in constant time), or ``private_key_jwt`` for a
client metadata document's client (:mod:`..client_auth`). The code is taken once
(OAuth 2.1 § 4.1.3: single use), must belong to this client and ``redirect_uri``, and the
``code_verifier`` must hash to its challenge (RFC 7636 § 4.6). A refresh token is taken
once too and replaced by a new one (OAuth 2.1 § 4.3.1, rotation for public clients);
its scopes may shrink, never grow (RFC 6749 § 6).
"""

from __future__ import annotations

import base64
import hmac
import re
import secrets
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote_plus

from ...client.pkce import s256
from ..client_auth import ASSERTION_TYPE, asserted_client, document_client, verify_assertion
from ..http import BadRequest, OAuthError, Receive, Scope, Send, form, header, send_json
from ..storage import RefreshGrant, RegisteredClient

if TYPE_CHECKING:
    from ..context import ServerContext

__all__ = ["GRANT_CLAIM", "authenticate_client", "handle"]

GRANT_CLAIM: Final = "mcpkit_grant"
"""The access token claim naming the grant (a private claim name, RFC 7519 § 4.3)."""

_VERIFIER: Final = re.compile(r"[A-Za-z0-9\-._~]{43,128}")


def _invalid_client(description: str = "client authentication failed") -> OAuthError:
    return OAuthError("invalid_client", description, status=401)


async def authenticate_client(
    proxy: ServerContext, scope: Scope, fields: dict[str, str]
) -> RegisteredClient:
    """The registered client this request authenticates as (``invalid_client`` otherwise)."""
    basic = header(scope, b"authorization")
    client_id = fields.get("client_id")
    secret: str | None = None
    method = "none"
    assertion = fields.get("client_assertion")
    if assertion is not None or "client_assertion_type" in fields:
        # RFC 7523 § 2.2; RFC 6749 § 2.3: one authentication method per request.
        if basic is not None or "client_secret" in fields:
            raise _invalid_client("more than one client authentication method")
        if assertion is None or fields.get("client_assertion_type") != ASSERTION_TYPE:
            raise _invalid_client(f"client_assertion_type must be {ASSERTION_TYPE}")
        method = "private_key_jwt"
    elif basic is not None:
        kind, _, value = basic.partition(" ")
        if kind.lower() != "basic":
            raise _invalid_client("unsupported authorization scheme")
        try:
            pair = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise _invalid_client("malformed Basic credentials") from None
        raw_id, sep, raw_secret = pair.partition(":")
        if not sep or (client_id is not None and client_id != unquote_plus(raw_id)):
            raise _invalid_client("malformed Basic credentials")
        client_id, secret, method = (
            unquote_plus(raw_id),
            unquote_plus(raw_secret),
            "client_secret_basic",
        )
    elif "client_secret" in fields:
        secret, method = fields["client_secret"], "client_secret_post"
    if not client_id and assertion is not None:
        client_id = asserted_client(assertion)  # RFC 7521 § 4.2: the assertion names it
    if not client_id:
        raise _invalid_client("client_id is required")
    address = str(scope["client"][0]) if scope.get("client") else "unknown"
    client = await proxy.storage.load_client(client_id)
    if client is None:
        # A metadata document's record expires (its cache); the client stays valid.
        client = await document_client(proxy, client_id, address)
    if client is None:
        raise _invalid_client("unknown client")
    expected = client.token_endpoint_auth_method
    if method != expected:
        raise _invalid_client(f"this client authenticates with {expected}")
    if method == "private_key_jwt":
        assert assertion is not None
        return await verify_assertion(proxy, client, assertion, address)
    if expected != "none" and not hmac.compare_digest(
        (secret or "").encode(), (client.client_secret or "").encode()
    ):
        raise _invalid_client()
    return client


def _invalid_grant(description: str) -> OAuthError:
    return OAuthError("invalid_grant", description)


async def handle(proxy: ServerContext, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] != "POST":
        raise OAuthError("invalid_request", "the token endpoint takes a POST", status=405)
    fields = await form(scope, receive)
    grant_type = fields.get("grant_type")
    if grant_type not in ("authorization_code", "refresh_token"):
        if grant_type is None:
            raise BadRequest("grant_type is required")
        raise OAuthError("unsupported_grant_type", "authorization_code or refresh_token only")
    client = await authenticate_client(proxy, scope, fields)
    if grant_type not in client.grant_types:
        raise OAuthError("unauthorized_client", f"this client may not use {grant_type}")
    if grant_type == "authorization_code":
        grant = await _redeem_code(proxy, client, fields)
    else:
        grant = await _redeem_refresh(proxy, client, fields)
    await send_json(send, 200, await _issue(proxy, client, grant))


async def _redeem_code(
    proxy: ServerContext, client: RegisteredClient, fields: dict[str, str]
) -> RefreshGrant:
    code, verifier = fields.get("code"), fields.get("code_verifier")
    if code is None:
        raise BadRequest("code is required")
    if verifier is None:
        raise BadRequest("code_verifier is required (PKCE)")
    record = await proxy.storage.take_code(code)  # taken before any check: single use
    if record is None:
        raise _invalid_grant("the code is unknown, used or expired")
    if record.used:
        # OAuth 2.1 § 4.1.3: a code used twice was stolen or replayed; what it bought
        # (the refresh tokens, the provider's tokens) is revoked.
        await proxy.storage.revoke_grant(record.grant_id)
        raise _invalid_grant("the code is unknown, used or expired")
    await proxy.storage.save_code(code, replace(record, used=True, claims={}))
    if record.client_id != client.client_id:
        raise _invalid_grant("the code was issued to another client")
    if fields.get("redirect_uri") != record.redirect_uri:
        raise _invalid_grant("redirect_uri does not match the authorization request")
    if not _VERIFIER.fullmatch(verifier) or not hmac.compare_digest(
        s256(verifier), record.code_challenge
    ):
        raise _invalid_grant("the code_verifier does not match the code_challenge")
    resource = fields.get("resource")
    if resource is not None and resource != record.resource:
        raise OAuthError("invalid_target", "resource must name this server's MCP endpoint")
    return RefreshGrant(
        client_id=client.client_id,
        scopes=record.scopes,
        resource=record.resource,
        subject=record.subject,
        grant_id=record.grant_id,
        expires_at=time.time() + proxy.refresh_token_ttl,
        claims=record.claims,
    )


async def _redeem_refresh(
    proxy: ServerContext, client: RegisteredClient, fields: dict[str, str]
) -> RefreshGrant:
    token = fields.get("refresh_token")
    if token is None:
        raise BadRequest("refresh_token is required")
    record = await proxy.storage.take_refresh_token(token)
    if record is None:
        raise _invalid_grant("the refresh token is unknown, used or expired")
    if record.client_id != client.client_id:
        await proxy.storage.save_refresh_token(token, record)  # not this client's to spend
        raise _invalid_grant("the refresh token was issued to another client")
    if record.used:
        # OAuth 2.1 § 4.3.1: a rotated refresh token used again means two parties hold
        # the grant; revoking it logs both out, the thief included.
        await proxy.storage.revoke_grant(record.grant_id)
        raise _invalid_grant("the refresh token is unknown, used or expired")
    # The tombstone outlives the rotation by a day at most: replays later than that
    # cannot be told from unknown tokens, and the store does not grow for 30 days.
    tombstone_until = min(record.expires_at, time.time() + 86400.0)
    await proxy.storage.save_refresh_token(
        token, replace(record, used=True, claims={}, expires_at=tombstone_until)
    )
    scopes = record.scopes
    asked = fields.get("scope")
    if asked is not None:
        wanted = tuple(dict.fromkeys(asked.split()))
        if not set(wanted) <= set(record.scopes):
            raise OAuthError("invalid_scope", "a refresh cannot widen the grant")
        scopes = wanted
    resource = fields.get("resource")
    if resource is not None and resource != record.resource:
        raise OAuthError("invalid_target", "resource must name this server's MCP endpoint")
    if await proxy.storage.load_upstream_tokens(record.grant_id) is None:
        raise _invalid_grant("the grant was revoked")
    return RefreshGrant(
        client_id=record.client_id,
        scopes=scopes,
        resource=record.resource,
        subject=record.subject,
        grant_id=record.grant_id,
        expires_at=record.expires_at,  # rotation keeps the grant's lifetime
        claims=record.claims,
    )


async def _issue(
    proxy: ServerContext, client: RegisteredClient, grant: RefreshGrant
) -> dict[str, Any]:
    access, ttl = proxy.signer.issue(
        subject=grant.subject,
        client_id=client.client_id,
        audience=grant.resource,
        scopes=grant.scopes,
        # The grant's handle, so the server can find the provider's tokens for it
        # (OAuthProxy.upstream_token); an opaque random id, useless without the store.
        extra={**grant.claims, GRANT_CLAIM: grant.grant_id},
    )
    answer: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": ttl}
    if grant.scopes:
        answer["scope"] = " ".join(grant.scopes)
    if "refresh_token" in client.grant_types:
        refresh = secrets.token_urlsafe(32)
        await proxy.storage.save_refresh_token(refresh, grant)
        answer["refresh_token"] = refresh
    return answer
