"""Auth0 as the authorization server's identity provider (OpenID Connect).

The issuer is the tenant's domain with a trailing slash, ``https://{domain}/`` (or a
custom domain); discovery compares it without the slash, the ID token check with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....errors import ConfigurationError
from .oidc import OIDCProvider

__all__ = ["auth0"]


def auth0(
    *,
    domain: str,
    client_id: str,
    client_secret: str,
    scopes: Sequence[str] = ("openid", "email", "profile", "offline_access"),
    **options: Any,
) -> OIDCProvider:
    """Auth0 at ``domain`` (``example.eu.auth0.com`` or your custom domain)."""
    if not domain or "/" in domain:
        raise ConfigurationError("auth0(domain=...) is a host name, such as example.auth0.com")
    return OIDCProvider(
        issuer=f"https://{domain}/",
        client_id=client_id,
        client_secret=client_secret,
        scopes=scopes,
        name=options.pop("name", "Auth0"),
        **options,
    )
