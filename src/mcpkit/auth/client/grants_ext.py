"""Grants without a user at a browser: the MCP authorization extensions.

* Client credentials (RFC 6749 § 4.4; the MCP ``oauth-client-credentials``
  extension): the client authenticates as itself, with a client secret
  (``client_secret_basic`` / ``client_secret_post``) or a signed assertion
  (``private_key_jwt``, RFC 7523 § 2.2).
* JWT bearer (RFC 7523 § 2.1): the client presents a JWT issued by someone the
  authorization server trusts, as ``assertion``. Workload identity federation
  (the MCP ``wif`` extension) hands in a token of the platform the workload runs
  on (a Kubernetes service account, a cloud instance identity, a CI job token).
* Enterprise-managed authorization (the MCP extension of that name, after the
  IETF Identity Assertion JWT Authorization Grant draft): the client first
  exchanges the user's ID token at the enterprise IdP for an ID-JAG (RFC 8693
  token exchange, ``requested_token_type=urn:ietf:params:oauth:token-type:
  id-jag``, ``audience`` = the MCP authorization server's issuer, ``resource`` =
  the MCP server), then presents the ID-JAG in a JWT bearer grant to the MCP
  authorization server. The user is never sent to that server's authorization
  endpoint.

A grant refused by the server (``invalid_grant``, ``invalid_scope``,
``unauthorized_client``, ``invalid_client``...) raises
:class:`~mcpkit.errors.AuthorizationFailed` with the OAuth error code and is
never retried with the same or another grant: a retry cannot change the answer,
and falling back to another grant type would widen what the client was allowed
to do (the WIF extension says so explicitly). The one retry made is the DPoP
nonce retry (RFC 9449 § 8), which changes the request.

Every secret (client secret, assertions, tokens) stays out of reprs, logs and
error messages.
"""

from __future__ import annotations

import base64
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

import httpx

from ...errors import AuthorizationFailed
from .assertions import PrivateKeyJWT
from .dpop import DPoPSigner
from .storage import OAuthTokens

__all__ = [
    "GRANT_CLIENT_CREDENTIALS",
    "GRANT_JWT_BEARER",
    "GRANT_TOKEN_EXCHANGE",
    "TOKEN_TYPE_ID_JAG",
    "TOKEN_TYPE_ID_TOKEN",
    "AssertionSource",
    "ClientAuth",
    "client_credentials",
    "exchange_for_id_jag",
    "jwt_bearer",
    "resolve_assertion",
    "token_request",
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
    if isinstance(source, str):
        return source
    value = source()
    if inspect.isawaitable(value):
        value = await value
    if not isinstance(value, str) or not value:
        raise AuthorizationFailed(
            "the assertion source returned no token", error="invalid_assertion"
        )
    return value


@dataclass(frozen=True, slots=True)
class ClientAuth:
    """How a client authenticates at a token endpoint (RFC 6749 § 2.3, RFC 7523 § 2.2).

    ``method`` is ``none`` (a public client: ``client_id`` in the body),
    ``client_secret_basic``, ``client_secret_post`` or ``private_key_jwt``.
    """

    client_id: str
    method: str = "none"
    client_secret: str | None = field(default=None, repr=False)
    private_key_jwt: PrivateKeyJWT | None = field(default=None, repr=False)

    def apply(self, form: dict[str, str], headers: dict[str, str], audience: str) -> None:
        """Add the credentials to a token request's ``form`` and ``headers``."""
        if self.method == "client_secret_basic":
            # RFC 6749 § 2.3.1: both parts form-urlencoded before base64.
            pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret or '', safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        elif self.method == "client_secret_post":
            form["client_id"] = self.client_id
            form["client_secret"] = self.client_secret or ""
        elif self.method == "private_key_jwt":
            if self.private_key_jwt is None:
                raise ValueError("private_key_jwt authentication needs a private key")
            form.update(self.private_key_jwt.form(self.client_id, audience))
        elif self.method == "none":
            form["client_id"] = self.client_id
        else:
            raise ValueError(f"unknown token endpoint authentication method {self.method!r}")


def _oauth_error(resp: httpx.Response, what: str) -> AuthorizationFailed:
    code: str | None = None
    description = ""
    try:
        data = resp.json()
    except ValueError:
        data = None
    if isinstance(data, Mapping):
        if isinstance(data.get("error"), str):
            code = data["error"]
        if isinstance(data.get("error_description"), str):
            # The server's own words, cut short; they never echo our secrets back
            # in any server we know, and we send none in a way that could be.
            description = ": " + data["error_description"][:200]
    return AuthorizationFailed(
        f"{what} was refused (HTTP {resp.status_code}, {code or 'no OAuth error code'}){description}",
        error=code or f"http_{resp.status_code}",
    )


async def token_request(
    http: httpx.AsyncClient,
    url: str,
    form: Mapping[str, str],
    *,
    auth: ClientAuth | None = None,
    audience: str = "",
    dpop: DPoPSigner | None = None,
    what: str = "the token request",
) -> dict[str, Any]:
    """POST ``form`` to the token endpoint ``url``; the JSON answer, or AuthorizationFailed.

    ``audience`` is the authorization server's issuer (the ``aud`` of a
    ``private_key_jwt`` assertion). With ``dpop``, a proof goes along, and one
    retry is made when the server asks for a nonce (RFC 9449 § 8); the client
    assertion is signed anew for it (its ``jti`` must not repeat).
    """
    for attempt in range(2):
        body = dict(form)
        headers = {"Accept": "application/json"}
        if auth is not None:
            auth.apply(body, headers, audience)
        if dpop is not None:
            headers.update(dpop.headers_for_token_request(url))
        try:
            resp = await http.post(url, data=body, headers=headers, follow_redirects=False)
        except httpx.HTTPError as exc:
            raise AuthorizationFailed(
                f"{what} to {url} failed: {type(exc).__name__}", error="unreachable"
            ) from None
        if resp.status_code == 200:
            if dpop is not None:
                dpop.observe(url, resp.headers)
            try:
                data = resp.json()
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise AuthorizationFailed(
                    f"{what}: the answer is not a JSON object", error="invalid_response"
                )
            return data
        if (
            dpop is not None
            and attempt == 0
            and dpop.needs_nonce_retry(url, resp.status_code, resp.headers, resp.content)
        ):
            continue
        raise _oauth_error(resp, what)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def tokens_from(data: Mapping[str, Any], *, issuer: str | None, what: str) -> OAuthTokens:
    """OAuthTokens from a token response (RFC 6749 § 5.1)."""
    access = data.get("access_token")
    if not isinstance(access, str) or not access:
        raise AuthorizationFailed(
            f"{what}: the answer has no access_token", error="invalid_response"
        )
    expires_in = data.get("expires_in")
    refresh = data.get("refresh_token")
    scope = data.get("scope")
    return OAuthTokens(
        access_token=access,
        token_type=str(data.get("token_type") or "Bearer"),
        expires_at=time.time() + float(expires_in)
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool)
        else None,
        refresh_token=refresh if isinstance(refresh, str) else None,
        scope=scope if isinstance(scope, str) else None,
        issuer=issuer,
    )


def _base_form(grant_type: str, resource: str | None, scope: str | None) -> dict[str, str]:
    form = {"grant_type": grant_type}
    if resource:
        form["resource"] = resource  # RFC 8707 § 2.2; MCP requires it in token requests
    if scope:
        form["scope"] = scope
    return form


async def client_credentials(
    http: httpx.AsyncClient,
    *,
    token_endpoint: str,
    issuer: str,
    auth: ClientAuth,
    resource: str | None,
    scope: str | None = None,
    dpop: DPoPSigner | None = None,
) -> OAuthTokens:
    """The client credentials grant (RFC 6749 § 4.4)."""
    data = await token_request(
        http,
        token_endpoint,
        _base_form(GRANT_CLIENT_CREDENTIALS, resource, scope),
        auth=auth,
        audience=issuer,
        dpop=dpop,
        what="the client credentials grant",
    )
    return tokens_from(data, issuer=issuer, what="the client credentials grant")


async def jwt_bearer(
    http: httpx.AsyncClient,
    *,
    token_endpoint: str,
    issuer: str,
    assertion: str,
    auth: ClientAuth | None,
    resource: str | None,
    scope: str | None = None,
    dpop: DPoPSigner | None = None,
    what: str = "the JWT bearer grant",
) -> OAuthTokens:
    """The JWT bearer authorization grant (RFC 7523 § 2.1)."""
    form = _base_form(GRANT_JWT_BEARER, resource, scope)
    form["assertion"] = assertion
    data = await token_request(
        http, token_endpoint, form, auth=auth, audience=issuer, dpop=dpop, what=what
    )
    return tokens_from(data, issuer=issuer, what=what)


async def exchange_for_id_jag(
    http: httpx.AsyncClient,
    *,
    idp_token_endpoint: str,
    idp_issuer: str,
    subject_token: str,
    subject_token_type: str = TOKEN_TYPE_ID_TOKEN,
    audience: str,
    resource: str,
    scope: str | None = None,
    auth: ClientAuth | None = None,
) -> str:
    """RFC 8693 token exchange at the enterprise IdP: the user's identity assertion for an ID-JAG.

    ``audience`` is the MCP authorization server's issuer and ``resource`` the
    MCP server (Identity Assertion Authorization Grant draft § 4.3). The IdP
    must answer with ``issued_token_type`` = ID-JAG; anything else is refused
    rather than sent on to the authorization server.
    """
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
    what = "the token exchange at the identity provider"
    data = await token_request(
        http, idp_token_endpoint, form, auth=auth, audience=idp_issuer, what=what
    )
    issued = data.get("issued_token_type")
    token = data.get("access_token")
    if issued != TOKEN_TYPE_ID_JAG or not isinstance(token, str) or not token:
        raise AuthorizationFailed(
            f"{what} returned {issued!r}, not an identity assertion grant (ID-JAG)",
            error="invalid_response",
        )
    return token
