"""Grants without a user at a browser: the MCP authorization extensions.

Each class here is a :class:`~.grants.Grant` of the OAuth flow
(:class:`~.oauth.OAuth` discovers the server, identifies the client and calls
``obtain``); the public front doors are in :mod:`.machine`.

* :class:`ClientCredentialsGrant` (RFC 6749 § 4.4; the MCP
  ``oauth-client-credentials`` extension): the client authenticates as itself,
  with a client secret or a signed assertion (``private_key_jwt``, see
  :mod:`.assertions`), and asks for a token.
* :class:`JWTBearerGrant` (RFC 7523 § 2.1): the client presents a JWT issued by
  someone the authorization server trusts, as ``assertion``. Workload identity
  federation (the MCP ``wif`` extension) hands in a token of the platform the
  workload runs on (a Kubernetes service account, a cloud instance identity, a
  CI job token).
* :class:`IdentityAssertionGrant` (the MCP ``enterprise-managed-authorization``
  extension, after the IETF Identity Assertion JWT Authorization Grant draft):
  the client first exchanges the user's ID token at the enterprise IdP for an
  ID-JAG (RFC 8693 token exchange, ``requested_token_type=urn:ietf:params:oauth:
  token-type:id-jag``, ``audience`` = the MCP authorization server's issuer,
  ``resource`` = the MCP server), then presents the ID-JAG in a JWT bearer grant
  to the MCP authorization server. The user is never sent to that server's
  authorization endpoint.

A grant refused by the server (``invalid_grant``, ``invalid_scope``,
``unauthorized_client``, ``invalid_client``...) raises
:class:`~mcpkit.errors.AuthorizationFailed` with the OAuth error code and is
never retried with the same or another grant: a retry cannot change the answer,
and falling back to another grant type would widen what the client was allowed
to do (the WIF extension says so explicitly). The one retry made is the DPoP
nonce retry (RFC 9449 § 8), which changes the request.

Assertions, ID tokens and secrets stay out of reprs, logs and error messages.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.grants_ext)"):
    import httpx

from ...errors import AuthorizationFailed
from .discovery import AuthServerMetadata, discover_authorization_server
from .exchange import DEFAULT_POLICY, ExchangePolicy, exchange
from .grants import GrantContext
from .storage import ClientRegistration, OAuthTokens
from .token_endpoint import CLIENT_AUTH_METHODS, ClientAuthRequest, token_answer

__all__ = [
    "GRANT_CLIENT_CREDENTIALS",
    "GRANT_JWT_BEARER",
    "GRANT_TOKEN_EXCHANGE",
    "TOKEN_TYPE_ID_JAG",
    "TOKEN_TYPE_ID_TOKEN",
    "TOKEN_TYPE_SAML2",
    "AssertionSource",
    "ClientCredentialsGrant",
    "IdentityAssertionGrant",
    "JWTBearerGrant",
    "exchange_for_id_jag",
    "resolve_assertion",
]

GRANT_CLIENT_CREDENTIALS: Final = "client_credentials"
GRANT_JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GRANT_TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"
TOKEN_TYPE_SAML2: Final = "urn:ietf:params:oauth:token-type:saml2"
TOKEN_TYPE_ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"

# An assertion (or ID token) given as is, or a function returning a fresh one on
# each use (workload tokens are short-lived and rotate on disk).
AssertionSource = str | Callable[[], str] | Callable[[], Awaitable[str]]


async def resolve_assertion(source: AssertionSource) -> str:
    """The current value of ``source`` (a string, or a sync or async function)."""
    try:
        value: Any = source if isinstance(source, str) else source()
        if inspect.isawaitable(value):
            value = await value
    except OSError as exc:  # a token file that is missing or unreadable
        raise AuthorizationFailed(
            f"cannot read the assertion: {type(exc).__name__}"
            + (f" ({exc.filename})" if exc.filename else ""),
            error="invalid_assertion",
        ) from None
    if not isinstance(value, str) or not value:
        raise AuthorizationFailed(
            "the assertion source returned no token", error="invalid_assertion"
        )
    return value.strip()


def _form(grant_type: str, ctx: GrantContext) -> dict[str, str]:
    # RFC 8707 § 2.2: the MCP specification requires ``resource`` in every token request.
    form = {"grant_type": grant_type, "resource": ctx.resource}
    if ctx.scope:
        form["scope"] = ctx.scope
    return form


class ClientCredentialsGrant:
    """``grant_type=client_credentials``: a token for the client itself (RFC 6749 § 4.4).

    How the client authenticates is the registration's
    ``token_endpoint_auth_method`` (``client_secret_basic``,
    ``client_secret_post`` or ``private_key_jwt``).
    """

    @property
    def grant_types(self) -> tuple[str, ...]:
        return (GRANT_CLIENT_CREDENTIALS,)

    @property
    def redirect_uris(self) -> tuple[str, ...]:
        return ()

    async def obtain(self, ctx: GrantContext) -> OAuthTokens:
        return await ctx.token_endpoint.request(_form(GRANT_CLIENT_CREDENTIALS, ctx))

    def __repr__(self) -> str:
        return "ClientCredentialsGrant()"


class JWTBearerGrant:
    """``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` (RFC 7523 § 2.1).

    ``assertion`` is the JWT, or a function returning a current one (read anew
    for every token request: a workload token file is rotated under us).
    """

    def __init__(self, assertion: AssertionSource) -> None:
        self._assertion = assertion

    @property
    def grant_types(self) -> tuple[str, ...]:
        return (GRANT_JWT_BEARER,)

    @property
    def redirect_uris(self) -> tuple[str, ...]:
        return ()

    async def obtain(self, ctx: GrantContext) -> OAuthTokens:
        form = _form(GRANT_JWT_BEARER, ctx)
        form["assertion"] = await resolve_assertion(self._assertion)
        return await ctx.token_endpoint.request(form)

    def __repr__(self) -> str:
        return "JWTBearerGrant(assertion=...)"


async def _post_form(
    http: httpx.AsyncClient,
    url: str,
    form: Mapping[str, str],
    headers: Mapping[str, str],
    what: str,
    policy: ExchangePolicy,
) -> dict[str, Any]:
    """POST a form to a token endpoint that is not the MCP authorization server's."""
    request = http.build_request("POST", url, data=dict(form), headers=dict(headers))
    try:
        resp = await exchange(http, request, what=what, policy=policy)
    except httpx.HTTPError as exc:
        raise AuthorizationFailed(
            f"{what} at {url} failed: {type(exc).__name__}", error="token_request_failed"
        ) from None
    return token_answer(resp, f"{what} at {url} was refused")


async def exchange_for_id_jag(
    http: httpx.AsyncClient,
    *,
    idp_token_endpoint: str,
    idp_registration: ClientRegistration,
    subject_token: str,
    subject_token_type: str = TOKEN_TYPE_ID_TOKEN,
    audience: str,
    resource: str,
    scope: str | None = None,
    policy: ExchangePolicy = DEFAULT_POLICY,
) -> str:
    """RFC 8693 token exchange at the enterprise IdP: the user's identity assertion for an ID-JAG.

    ``audience`` is the MCP authorization server's issuer and ``resource`` the
    MCP server (Identity Assertion Authorization Grant draft § 4.3). The client
    authenticates to the IdP as ``idp_registration`` says (its
    ``token_endpoint_auth_method``; ``none`` sends ``client_id`` alone). An
    answer whose ``issued_token_type`` is not an ID-JAG is refused rather than
    forwarded to the authorization server. The IdP's endpoint must be https (or
    loopback) like any other: the request carries the user's identity assertion.
    """
    policy.check_url(idp_token_endpoint, "the IdP token endpoint")
    form = {
        "grant_type": GRANT_TOKEN_EXCHANGE,
        "requested_token_type": TOKEN_TYPE_ID_JAG,
        "audience": audience,
        "resource": resource,
        "subject_token": subject_token,
        "subject_token_type": subject_token_type,
    }
    if scope:
        form["scope"] = scope
    method = CLIENT_AUTH_METHODS.get(idp_registration.token_endpoint_auth_method)
    if method is None:
        raise AuthorizationFailed(
            f"unknown IdP client authentication {idp_registration.token_endpoint_auth_method!r}",
            error="invalid_client",
        )
    req = ClientAuthRequest(
        registration=idp_registration,
        server=AuthServerMetadata(issuer=idp_registration.issuer or idp_token_endpoint),
        token_endpoint=idp_token_endpoint,
        form=form,
        headers={"accept": "application/json"},
    )
    await method(req)
    what = "the token exchange for an ID-JAG"
    data = await _post_form(http, idp_token_endpoint, req.form, req.headers, what, policy)
    issued = data.get("issued_token_type")
    token = data.get("access_token")
    if issued != TOKEN_TYPE_ID_JAG or not isinstance(token, str) or not token:
        raise AuthorizationFailed(
            f"{what} returned {issued!r}, not an identity assertion grant (ID-JAG)",
            error="invalid_response",
        )
    return token


class IdentityAssertionGrant:
    """Enterprise-managed authorization: ID token -> ID-JAG at the IdP -> token at the AS.

    ``id_token`` is the user's identity assertion from single sign-on at the
    enterprise IdP (an OpenID Connect ID token, or a SAML assertion with
    ``subject_token_type=TOKEN_TYPE_SAML2``), or a function returning a current
    one. ``idp_registration`` says as whom the exchange is made, and its
    ``issuer`` which IdP; ``idp_token_endpoint`` where, else it is read from the
    IdP's metadata (OpenID Connect discovery or RFC 8414) on first use. A new
    ID-JAG is requested for each token: an ID-JAG is short-lived and bound to one
    audience and resource.
    """

    def __init__(
        self,
        *,
        id_token: AssertionSource,
        idp_registration: ClientRegistration,
        idp_token_endpoint: str | None = None,
        subject_token_type: str = TOKEN_TYPE_ID_TOKEN,
    ) -> None:
        if idp_token_endpoint is None and idp_registration.issuer is None:
            raise ValueError("the IdP needs a token endpoint or an issuer to discover it from")
        self._id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_registration = idp_registration
        self.subject_token_type = subject_token_type

    @property
    def grant_types(self) -> tuple[str, ...]:
        return (GRANT_JWT_BEARER,)

    @property
    def redirect_uris(self) -> tuple[str, ...]:
        return ()

    async def _idp_token_endpoint(self, ctx: GrantContext) -> str:
        if self.idp_token_endpoint is None:
            assert self.idp_registration.issuer is not None
            idp = await discover_authorization_server(
                ctx.http, self.idp_registration.issuer, policy=ctx.policy
            )
            if not idp.token_endpoint:
                raise AuthorizationFailed(
                    f"the identity provider {idp.issuer} has no token endpoint",
                    error="discovery_failed",
                )
            self.idp_token_endpoint = idp.token_endpoint
        return self.idp_token_endpoint

    async def obtain(self, ctx: GrantContext) -> OAuthTokens:
        id_jag = await exchange_for_id_jag(
            ctx.http,
            idp_token_endpoint=await self._idp_token_endpoint(ctx),
            idp_registration=self.idp_registration,
            subject_token=await resolve_assertion(self._id_token),
            subject_token_type=self.subject_token_type,
            audience=ctx.server.issuer,
            resource=ctx.resource,
            scope=ctx.scope,
            policy=ctx.policy,
        )
        form = _form(GRANT_JWT_BEARER, ctx)
        form["assertion"] = id_jag
        return await ctx.token_endpoint.request(form)

    def __repr__(self) -> str:
        idp = self.idp_token_endpoint or self.idp_registration.issuer
        return f"IdentityAssertionGrant(idp={idp!r})"
