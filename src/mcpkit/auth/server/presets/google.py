"""Google as the authorization server's identity provider (OpenID Connect).

One issuer for every Google account, ``https://accounts.google.com``. Google gives a
refresh token only when asked for offline access with a consent prompt, which a plain
OIDC request does not do: tools get the user's Google token until it expires (an hour).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .oidc import OIDCProvider

__all__ = ["google"]


def google(
    *,
    client_id: str,
    client_secret: str,
    scopes: Sequence[str] = ("openid", "email", "profile"),
    **options: Any,
) -> OIDCProvider:
    """Google sign-in with an OAuth client of type "Web application"."""
    return OIDCProvider(
        issuer="https://accounts.google.com",
        client_id=client_id,
        client_secret=client_secret,
        scopes=scopes,
        name=options.pop("name", "Google"),
        **options,
    )
