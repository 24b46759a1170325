"""Microsoft Entra ID (Azure AD) as the authorization server's identity provider.

Entra's v2.0 endpoints speak OpenID Connect; the issuer is per tenant,
``https://login.microsoftonline.com/{tenant}/v2.0``. The multi-tenant aliases
(``common``, ``organizations``, ``consumers``) publish an issuer template with
``{tenantid}`` in it, which no ID token matches as a string, so a tenant id (a GUID) or
a verified domain is required here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....errors import ConfigurationError
from .oidc import OIDCProvider

__all__ = ["entra"]

_ALIASES = frozenset({"common", "organizations", "consumers"})


def entra(
    *,
    tenant: str,
    client_id: str,
    client_secret: str,
    scopes: Sequence[str] = ("openid", "email", "profile", "offline_access"),
    **options: Any,
) -> OIDCProvider:
    """Entra ID for ``tenant`` (its id or a verified domain); ``offline_access`` asks for
    a refresh token, so tools can keep using the user's Microsoft token."""
    if not tenant or tenant.lower() in _ALIASES or "/" in tenant:
        raise ConfigurationError(
            "entra(tenant=...) needs your tenant id or domain: the multi-tenant aliases "
            "publish no single issuer an ID token could be checked against"
        )
    return OIDCProvider(
        issuer=f"https://login.microsoftonline.com/{tenant}/v2.0",
        client_id=client_id,
        client_secret=client_secret,
        scopes=scopes,
        name=options.pop("name", "Microsoft"),
        **options,
    )
