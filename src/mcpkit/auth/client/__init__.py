"""The OAuth client side of MCP authorization: ``Client(url, auth=OAuth(...))``.

:class:`OAuth` is an ``httpx.Auth``: the HTTP transports run every request
through it. It discovers the authorization server from the server's ``401``
(:mod:`.discovery`), registers the client (:mod:`.registration`), obtains a
token with its grant (:mod:`.grants`), refreshes it, and steps up on ``403
insufficient_scope``. Tokens and registrations live in a :class:`TokenStorage`
(:class:`MemoryTokenStorage`, :class:`FileTokenStorage`).

Seams, for the grants and proofs the authorization extensions add (client
credentials, enterprise-managed authorization, DPoP, workload identity); each is
a constructor argument of :class:`OAuth`, so an extension is a new module here
and never an edit of the flow:

``grant=`` (:class:`~.grants.Grant`)
    How a token is obtained once the server is discovered and the client
    registered: ``grant_types`` and ``redirect_uris`` (for registration) and
    ``async obtain(ctx: GrantContext) -> OAuthTokens``. ``ctx`` carries the
    ``resource`` and ``scope`` to send, the authorization server's metadata, the
    registration and ``ctx.token_endpoint.request(form)``, which authenticates the
    client and runs the hooks. :class:`AuthorizationCodeGrant` (with an
    :class:`Authorizer`) is the default; a client credentials, JWT bearer or token
    exchange grant is another class with the same three members. Refresh is done
    by the flow for every grant (``grant_type=refresh_token``).

``client_auth_methods=`` (:data:`~.token_endpoint.CLIENT_AUTH_METHODS`)
    Token endpoint client authentication, by ``token_endpoint_auth_method`` name:
    ``none``, ``client_secret_basic`` and ``client_secret_post`` are built in;
    ``{"private_key_jwt": fn}`` adds RFC 7523 § 2.2, where
    ``async fn(req: ClientAuthRequest)`` edits ``req.form``/``req.headers`` and
    reads ``req.registration``, ``req.server`` and ``req.token_endpoint`` (the
    assertion's audience). Pre-registered clients choose it with
    ``OAuth(client_id=..., token_endpoint_auth_method="private_key_jwt")``.

``hooks=`` (:class:`~.hooks.RequestHook`)
    ``before(request, purpose=, tokens=)`` on every request to the MCP server
    (``"resource"``, after ``Authorization`` is set: a DPoP proof, or
    ``Authorization: DPoP``) and every token request (``"token"``);
    ``retry(request, response, purpose=)`` returning True sends it once more,
    decorated again (``DPoP-Nonce``, RFC 9449 § 8-9). A grant's own requests to
    other servers (an IdP's token exchange) are its own business.

Security: tokens, secrets, codes and PKCE verifiers never appear in logs,
reprs or exception messages (``OAuthTokens`` and ``ClientRegistration`` hide
them from ``repr``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from .storage import ClientRegistration, MemoryTokenStorage, OAuthTokens, TokenStorage

# Loaded on first use (they need httpx): public name -> module of this package.
_EXPORTS: dict[str, str] = {
    "OAuth": ".oauth",
    "Grant": ".grants",
    "GrantContext": ".grants",
    "AuthorizationCodeGrant": ".grants",
    "Authorizer": ".authorizers",
    "HeadlessAuthorizer": ".authorizers",
    "LoopbackAuthorizer": ".loopback",
    "RequestHook": ".hooks",
    "TokenEndpoint": ".token_endpoint",
    "ClientAuthRequest": ".token_endpoint",
    "FileTokenStorage": ".file_storage",
    # The authorization extensions (machine-to-machine, enterprise, DPoP).
    "ClientCredentials": ".machine",
    "WorkloadIdentity": ".machine",
    "EnterpriseAuth": ".machine",
    "ClientCredentialsGrant": ".grants_ext",
    "JWTBearerGrant": ".grants_ext",
    "IdentityAssertionGrant": ".grants_ext",
    "PrivateKeyJWT": ".assertions",
    "DPoPKey": ".dpop",
    "DPoPSigner": ".dpop",
}

__all__ = [
    "AuthorizationCodeGrant",
    "Authorizer",
    "ClientAuthRequest",
    "ClientCredentials",
    "ClientCredentialsGrant",
    "ClientRegistration",
    "DPoPKey",
    "DPoPSigner",
    "EnterpriseAuth",
    "FileTokenStorage",
    "Grant",
    "GrantContext",
    "HeadlessAuthorizer",
    "IdentityAssertionGrant",
    "JWTBearerGrant",
    "LoopbackAuthorizer",
    "MemoryTokenStorage",
    "OAuth",
    "OAuthTokens",
    "PrivateKeyJWT",
    "RequestHook",
    "TokenEndpoint",
    "TokenStorage",
    "WorkloadIdentity",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from .assertions import PrivateKeyJWT
    from .authorizers import Authorizer, HeadlessAuthorizer
    from .dpop import DPoPKey, DPoPSigner
    from .file_storage import FileTokenStorage
    from .grants import AuthorizationCodeGrant, Grant, GrantContext
    from .grants_ext import ClientCredentialsGrant, IdentityAssertionGrant, JWTBearerGrant
    from .hooks import RequestHook
    from .loopback import LoopbackAuthorizer
    from .machine import ClientCredentials, EnterpriseAuth, WorkloadIdentity
    from .oauth import OAuth
    from .token_endpoint import ClientAuthRequest, TokenEndpoint
