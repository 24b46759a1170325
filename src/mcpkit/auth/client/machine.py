"""Machine-to-machine and enterprise authorization: the front doors.

Each class is an :class:`~.oauth.OAuth` (so ``Client(url=..., auth=...)``
takes it, and discovery, token storage, expiry and DPoP work as for the
authorization code flow) preset with a grant of :mod:`.grants_ext`:

* :class:`ClientCredentials`: a service authenticating as itself, with a client
  secret or a private key (``private_key_jwt``);
* :class:`WorkloadIdentity`: a workload presenting its platform's identity token
  (a JWT bearer assertion);
* :class:`EnterpriseAuth`: a user's enterprise single sign-on turned into an
  MCP access token through the IdP (ID-JAG), without a browser.

``dpop=True`` (or a :class:`~.dpop.DPoPKey` to keep one key across runs) makes
the tokens sender-constrained (RFC 9449); the same works for the authorization
code flow with ``OAuth(hooks=[DPoPSigner()])``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.machine)"):
    import httpx

from ...errors import ConfigurationError
from .assertions import PrivateKeyJWT
from .dpop import DPoPKey, DPoPSigner
from .exchange import DEFAULT_MAX_RESPONSE_SIZE
from .grants_ext import (
    TOKEN_TYPE_ID_TOKEN,
    AssertionSource,
    ClientCredentialsGrant,
    IdentityAssertionGrant,
    JWTBearerGrant,
)
from .hooks import RequestHook
from .oauth import OAuth
from .storage import ClientRegistration, TokenStorage
from .token_endpoint import ClientAuthMethod

__all__ = ["ClientCredentials", "DPoPOption", "EnterpriseAuth", "WorkloadIdentity"]

# False: plain Bearer tokens; True: DPoP with a fresh ES256 key; a key or a signer: that one.
DPoPOption: TypeAlias = bool | DPoPKey | DPoPSigner
PrivateKey: TypeAlias = str | bytes | dict[str, Any]


def _hooks(dpop: DPoPOption, hooks: Sequence[RequestHook]) -> tuple[RequestHook, ...]:
    if dpop is False:
        return tuple(hooks)
    if dpop is True:
        signer = DPoPSigner()
    elif isinstance(dpop, DPoPKey):
        signer = DPoPSigner(dpop)
    elif isinstance(dpop, DPoPSigner):
        signer = dpop
    else:
        raise ConfigurationError(f"dpop must be a bool, a DPoPKey or a DPoPSigner, not {dpop!r}")
    return (signer, *hooks)


def _client_auth(
    client_secret: str | None,
    private_key: PrivateKey | None,
    algorithm: str | None,
    key_id: str | None,
    method: str | None,
    what: str,
) -> tuple[str | None, dict[str, ClientAuthMethod]]:
    """(token_endpoint_auth_method, extra methods) for a secret or a private key."""
    if client_secret is not None and private_key is not None:
        raise ConfigurationError(f"{what} takes client_secret= or private_key=, not both")
    if private_key is None:
        return method, {}
    try:
        signer = PrivateKeyJWT(private_key, algorithm=algorithm or "", key_id=key_id)
    except ValueError as exc:
        raise ConfigurationError(f"{what}: {exc}") from None
    return "private_key_jwt", {"private_key_jwt": signer.authenticate}


class ClientCredentials(OAuth):
    """The OAuth client credentials grant: a service acting as itself (no user).

    ``Client(url=..., auth=ClientCredentials("my-service", client_secret="..."))``
    authenticates with ``client_secret_basic`` or ``client_secret_post`` (the one
    the server supports; ``token_endpoint_auth_method=`` to force one), and
    ``ClientCredentials("my-service", private_key=pem)`` with ``private_key_jwt``
    (RFC 7523 § 2.2: an assertion signed with the key, ``algorithm`` inferred from
    it unless given; ``key_id`` for its ``kid``). The authorization server is
    discovered from the MCP server; the token is requested again when it expires.
    ``scopes`` overrides the specification's scope selection; ``client_issuer``
    limits the credentials to that authorization server.
    """

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key: PrivateKey | None = None,
        algorithm: str | None = None,
        key_id: str | None = None,
        token_endpoint_auth_method: str | None = None,
        scopes: Sequence[str] | str | None = None,
        client_issuer: str | None = None,
        dpop: DPoPOption = False,
        storage: TokenStorage | None = None,
        hooks: Sequence[RequestHook] = (),
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        max_response_size: int = DEFAULT_MAX_RESPONSE_SIZE,
        allow_insecure_http: bool = False,
    ) -> None:
        if client_secret is None and private_key is None:
            raise ConfigurationError("ClientCredentials needs client_secret= or private_key=")
        method, methods = _client_auth(
            client_secret,
            private_key,
            algorithm,
            key_id,
            token_endpoint_auth_method,
            "ClientCredentials",
        )
        super().__init__(
            grant=ClientCredentialsGrant(),
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=method,
            client_issuer=client_issuer,
            client_auth_methods=methods,
            scopes=scopes,
            storage=storage,
            hooks=_hooks(dpop, hooks),
            http_client=http_client,
            timeout=timeout,
            max_response_size=max_response_size,
            allow_insecure_http=allow_insecure_http,
        )


def _assertion_source(assertion: AssertionSource | os.PathLike[str]) -> AssertionSource:
    if isinstance(assertion, os.PathLike):
        path = Path(assertion)
        return lambda: path.read_text(encoding="utf-8").strip()  # rotated on disk: read each time
    return assertion


class WorkloadIdentity(OAuth):
    """Workload identity federation: the platform's identity token as a JWT bearer grant.

    ``assertion`` is the workload's JWT (its audience must be the authorization
    server's issuer), a function returning a current one, or the path of a file
    that holds it (a projected Kubernetes service account token, read anew for
    every token request). The client identifies itself with ``client_id``
    (``none`` authentication) or also authenticates with ``client_secret`` or
    ``private_key``. A refused grant raises
    :class:`~mcpkit.errors.AuthorizationFailed` with the OAuth code and is not
    retried.
    """

    def __init__(
        self,
        assertion: AssertionSource | os.PathLike[str],
        *,
        client_id: str,
        client_secret: str | None = None,
        private_key: PrivateKey | None = None,
        algorithm: str | None = None,
        key_id: str | None = None,
        token_endpoint_auth_method: str | None = None,
        scopes: Sequence[str] | str | None = None,
        client_issuer: str | None = None,
        dpop: DPoPOption = False,
        storage: TokenStorage | None = None,
        hooks: Sequence[RequestHook] = (),
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        max_response_size: int = DEFAULT_MAX_RESPONSE_SIZE,
        allow_insecure_http: bool = False,
    ) -> None:
        method, methods = _client_auth(
            client_secret,
            private_key,
            algorithm,
            key_id,
            token_endpoint_auth_method,
            "WorkloadIdentity",
        )
        super().__init__(
            grant=JWTBearerGrant(_assertion_source(assertion)),
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=method,
            client_issuer=client_issuer,
            client_auth_methods=methods,
            scopes=scopes,
            storage=storage,
            hooks=_hooks(dpop, hooks),
            http_client=http_client,
            timeout=timeout,
            max_response_size=max_response_size,
            allow_insecure_http=allow_insecure_http,
        )


class EnterpriseAuth(OAuth):
    """Enterprise-managed authorization: the user's IdP login, exchanged for MCP access.

    ``id_token`` is the identity assertion the client got when the user signed
    in to it through the enterprise IdP (or a function returning a current one).
    For each token the client exchanges it at ``idp_token_endpoint`` (else the
    one the metadata of ``idp_issuer`` names), as ``idp_client_id`` (with
    ``idp_client_secret`` when it has one), for an ID-JAG addressed to the MCP
    server's authorization server, then presents that in a JWT bearer grant
    there, as ``client_id`` (with ``client_secret`` or ``private_key``). No
    browser is involved.
    """

    def __init__(
        self,
        *,
        client_id: str,
        id_token: AssertionSource,
        idp_client_id: str,
        idp_token_endpoint: str | None = None,
        idp_client_secret: str | None = None,
        idp_issuer: str | None = None,
        idp_token_endpoint_auth_method: str | None = None,
        subject_token_type: str = TOKEN_TYPE_ID_TOKEN,
        client_secret: str | None = None,
        private_key: PrivateKey | None = None,
        algorithm: str | None = None,
        key_id: str | None = None,
        token_endpoint_auth_method: str | None = None,
        scopes: Sequence[str] | str | None = None,
        client_issuer: str | None = None,
        dpop: DPoPOption = False,
        storage: TokenStorage | None = None,
        hooks: Sequence[RequestHook] = (),
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        max_response_size: int = DEFAULT_MAX_RESPONSE_SIZE,
        allow_insecure_http: bool = False,
    ) -> None:
        method, methods = _client_auth(
            client_secret,
            private_key,
            algorithm,
            key_id,
            token_endpoint_auth_method,
            "EnterpriseAuth",
        )
        if idp_token_endpoint is None and idp_issuer is None:
            raise ConfigurationError("EnterpriseAuth needs idp_token_endpoint= or idp_issuer=")
        idp_method = idp_token_endpoint_auth_method or (
            "client_secret_basic" if idp_client_secret is not None else "none"
        )
        idp = ClientRegistration(
            client_id=idp_client_id,
            client_secret=idp_client_secret,
            token_endpoint_auth_method=idp_method,
            issuer=idp_issuer,
        )
        super().__init__(
            grant=IdentityAssertionGrant(
                id_token=id_token,
                idp_token_endpoint=idp_token_endpoint,
                idp_registration=idp,
                subject_token_type=subject_token_type,
            ),
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=method,
            client_issuer=client_issuer,
            client_auth_methods=methods,
            scopes=scopes,
            storage=storage,
            hooks=_hooks(dpop, hooks),
            http_client=http_client,
            timeout=timeout,
            max_response_size=max_response_size,
            allow_insecure_http=allow_insecure_http,
        )
