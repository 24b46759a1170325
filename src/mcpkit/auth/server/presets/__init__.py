"""Identity providers for the authorization server, one module per provider.

``oidc``: any OpenID Connect provider, found by discovery
(``/.well-known/openid-configuration``). Presets for Entra ID, Okta, Google, GitHub,
Auth0 and Keycloak build on it (GitHub, which is OAuth only, on its own) as they land.
"""

from __future__ import annotations

from .oidc import OIDCProvider

__all__ = ["OIDCProvider"]
