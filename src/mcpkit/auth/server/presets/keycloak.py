"""Keycloak as the authorization server's identity provider (OpenID Connect).

Each realm is an issuer: ``{base_url}/realms/{realm}`` (Keycloak 17 and later; older
releases served under ``/auth``, so give ``base_url`` with that path then).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from ....errors import ConfigurationError
from .oidc import OIDCProvider

__all__ = ["keycloak"]


def keycloak(
    *,
    base_url: str,
    realm: str,
    client_id: str,
    client_secret: str,
    scopes: Sequence[str] = ("openid", "email", "profile"),
    **options: Any,
) -> OIDCProvider:
    """Keycloak's ``realm`` at ``base_url`` (``https://sso.example.com``)."""
    if not realm:
        raise ConfigurationError("keycloak(realm=...) is required")
    return OIDCProvider(
        issuer=f"{base_url.rstrip('/')}/realms/{quote(realm, safe='')}",
        client_id=client_id,
        client_secret=client_secret,
        scopes=scopes,
        name=options.pop("name", "Keycloak"),
        **options,
    )
