"""Okta as the authorization server's identity provider (OpenID Connect).

The issuer is the Okta domain for the org authorization server
(``https://{domain}``), or ``https://{domain}/oauth2/{server}`` for a custom one
(``default`` is the one every Okta org has).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....errors import ConfigurationError
from .oidc import OIDCProvider

__all__ = ["okta"]


def okta(
    *,
    domain: str,
    client_id: str,
    client_secret: str,
    authorization_server: str | None = None,
    scopes: Sequence[str] = ("openid", "email", "profile", "offline_access"),
    **options: Any,
) -> OIDCProvider:
    """Okta at ``domain`` (``example.okta.com``); ``authorization_server="default"`` for
    the default custom authorization server."""
    if not domain or "/" in domain:
        raise ConfigurationError("okta(domain=...) is a host name, such as example.okta.com")
    issuer = f"https://{domain}"
    if authorization_server:
        issuer += f"/oauth2/{authorization_server}"
    return OIDCProvider(
        issuer=issuer,
        client_id=client_id,
        client_secret=client_secret,
        scopes=scopes,
        name=options.pop("name", "Okta"),
        **options,
    )
