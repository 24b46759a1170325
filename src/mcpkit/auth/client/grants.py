"""Grants: how a token is obtained once the authorization server is known.

The OAuth flow (:class:`~.oauth.OAuth`) discovers the authorization server,
makes sure the client is registered, then asks its :class:`Grant` for tokens
with a :class:`GrantContext`: the server's metadata, the registration, the
``resource`` (RFC 8707) and ``scope`` to ask for, and a
:class:`~.token_endpoint.TokenEndpoint` that already authenticates the client
and runs the request hooks. Refreshing is the flow's job, not the grant's.

This module holds the authorization code grant with PKCE (OAuth 2.1 § 4.1), the
one a user-facing client uses. Other grants (client credentials, JWT bearer,
token exchange) implement the same protocol in modules of their own.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.grants)"):
    import httpx

from ...errors import AuthorizationFailed
from .authorizers import Authorizer
from .discovery import AuthServerMetadata, ResourceMetadata
from .exchange import DEFAULT_POLICY, ExchangePolicy
from .pkce import PKCE, new_state
from .storage import ClientRegistration, OAuthTokens
from .token_endpoint import TokenEndpoint

__all__ = ["AuthorizationCodeGrant", "Grant", "GrantContext"]

log = logging.getLogger("mcpkit.auth.client")


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantContext:
    """Everything a grant needs, for one attempt at obtaining tokens."""

    http: httpx.AsyncClient  # for requests of the grant's own (not the token endpoint's)
    server_url: str  # the MCP endpoint
    resource: str  # the RFC 8707 value: the resource metadata's ``resource``, exactly
    resource_metadata: ResourceMetadata | None  # None for a 2025-03-26 server
    server: AuthServerMetadata
    registration: ClientRegistration
    scope: str | None  # space separated; None: leave the parameter out
    token_endpoint: TokenEndpoint
    # The bounds of the flow's own exchanges; a grant's requests to other servers use
    # them too (through .exchange.exchange).
    policy: ExchangePolicy = DEFAULT_POLICY


@runtime_checkable
class Grant(Protocol):
    """Obtains tokens for a registered client."""

    @property
    def grant_types(self) -> tuple[str, ...]:
        """The ``grant_types`` to register (RFC 7591 § 2), ``refresh_token`` included if used."""
        ...

    @property
    def redirect_uris(self) -> tuple[str, ...]:
        """The ``redirect_uris`` to register; empty for a grant without a redirect."""
        ...

    async def obtain(self, ctx: GrantContext) -> OAuthTokens: ...


class AuthorizationCodeGrant:
    """The authorization code grant with PKCE ``S256`` (OAuth 2.1 § 4.1, RFC 7636).

    The ``authorizer`` sends the user to the authorization URL and returns the URL
    the server redirected back to (see :mod:`.authorizers`). The response is checked
    before its code is used: ``state`` must be ours, and RFC 9207's ``iss`` must
    equal the issuer when present, and be present when the server advertises
    ``authorization_response_iss_parameter_supported`` (a mix-up attack otherwise
    sends the code to the wrong server).
    """

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    @property
    def grant_types(self) -> tuple[str, ...]:
        return ("authorization_code", "refresh_token")

    @property
    def redirect_uris(self) -> tuple[str, ...]:
        return (self.authorizer.redirect_uri,)

    def authorization_url(self, ctx: GrantContext, pkce: PKCE, state: str) -> str:
        endpoint = ctx.server.authorization_endpoint
        if not endpoint:
            raise AuthorizationFailed(
                f"authorization server {ctx.server.issuer} has no authorization endpoint",
                error="discovery_failed",
            )
        params = {
            "response_type": "code",
            "client_id": ctx.registration.client_id,
            "redirect_uri": self.authorizer.redirect_uri,
            "code_challenge": pkce.challenge,
            "code_challenge_method": pkce.method,
            "state": state,
            "resource": ctx.resource,
        }
        if ctx.scope:
            params["scope"] = ctx.scope
        parts = urlsplit(endpoint)
        query = (parts.query + "&" if parts.query else "") + urlencode(params)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))

    async def obtain(self, ctx: GrantContext) -> OAuthTokens:
        pkce = PKCE.new()
        state = new_state()
        redirected = await self.authorizer.authorize(self.authorization_url(ctx, pkce, state))
        code = check_authorization_response(redirected, state=state, server=ctx.server)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.authorizer.redirect_uri,
            "code_verifier": pkce.verifier,
            "resource": ctx.resource,
        }
        return await ctx.token_endpoint.request(form)


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise AuthorizationFailed(
            f"the authorization response repeats {name!r}", error="invalid_response"
        )
    return values[0]


def check_authorization_response(url: str, *, state: str, server: AuthServerMetadata) -> str:
    """The code of an authorization response, after its checks; refuses it otherwise."""
    query = parse_qs(urlsplit(url).query, keep_blank_values=True)
    got_state = _one(query, "state")
    if got_state is None or not hmac.compare_digest(got_state.encode(), state.encode()):
        raise AuthorizationFailed(
            "the authorization response does not carry this request's state; refused",
            error="state_mismatch",
        )
    iss = _one(query, "iss")
    if iss is not None and iss != server.issuer:
        # RFC 9207 § 2.4: compared as strings, no normalisation; a present iss is
        # checked whether or not the metadata advertises it.
        raise AuthorizationFailed(
            f"the authorization response comes from issuer {iss!r}, not {server.issuer!r}; "
            "refused (RFC 9207)",
            error="issuer_mismatch",
        )
    if iss is None and server.iss_parameter_supported:
        raise AuthorizationFailed(
            f"authorization server {server.issuer} promises an iss parameter in its "
            "responses and this one has none; refused (RFC 9207 § 2.4)",
            error="issuer_missing",
        )
    error = _one(query, "error")
    if error is not None:
        description = _one(query, "error_description")
        raise AuthorizationFailed(
            f"the authorization server refused: {error}"
            + (f" ({description[:200]})" if description else ""),
            error=error,
        )
    code = _one(query, "code")
    if not code:
        raise AuthorizationFailed(
            "the authorization response has no code", error="invalid_response"
        )
    return code


def union_scopes(*scopes: str | Sequence[str] | None) -> str | None:
    """Scopes in first-seen order, space separated; None when there are none."""
    seen: dict[str, None] = {}
    for item in scopes:
        if item is None:
            continue
        for scope in item.split() if isinstance(item, str) else item:
            seen.setdefault(scope, None)
    return " ".join(seen) or None
