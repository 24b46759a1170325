"""Identity providers for the authorization server, one module per provider.

``oidc``: any OpenID Connect provider, found by discovery
(``/.well-known/openid-configuration``); ``entra``, ``okta``, ``google``, ``auth0`` and
``keycloak`` build it with each provider's issuer. ``github``: GitHub, OAuth without
OpenID Connect (the user from its REST API), a provider of its own.
"""

from __future__ import annotations

from .auth0 import auth0
from .entra import entra
from .github import GitHubProvider, github
from .google import google
from .keycloak import keycloak
from .oidc import OIDCProvider
from .okta import okta

__all__ = [
    "GitHubProvider",
    "OIDCProvider",
    "auth0",
    "entra",
    "github",
    "google",
    "keycloak",
    "okta",
]
