"""Identity providers for the authorization server, one module per provider.

``oidc``: any OpenID Connect provider, found by discovery
(``/.well-known/openid-configuration``); ``entra``, ``okta``, ``google``, ``auth0`` and
``keycloak`` build it with each provider's issuer. GitHub (OAuth without OpenID Connect)
needs a provider of its own and is not here yet.
"""

from __future__ import annotations

from .auth0 import auth0
from .entra import entra
from .google import google
from .keycloak import keycloak
from .oidc import OIDCProvider
from .okta import okta

__all__ = ["OIDCProvider", "auth0", "entra", "google", "keycloak", "okta"]
