"""The identity provider presets: each builds the generic OIDC provider with the issuer the
provider publishes, and refuses settings that could never work."""

from __future__ import annotations

import pytest

from mcpkit.auth.server.presets import auth0, entra, google, keycloak, okta
from mcpkit.errors import ConfigurationError

SECRET = {"client_id": "id", "client_secret": "secret"}


def test_each_preset_names_its_issuer_and_provider() -> None:
    cases = [
        (entra(tenant="contoso.onmicrosoft.com", **SECRET),
         "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0", "Microsoft"),
        (okta(domain="example.okta.com", **SECRET), "https://example.okta.com", "Okta"),
        (okta(domain="example.okta.com", authorization_server="default", **SECRET),
         "https://example.okta.com/oauth2/default", "Okta"),
        (google(**SECRET), "https://accounts.google.com", "Google"),
        # Auth0's issuer ends with a slash; discovery is fetched without a double one.
        (auth0(domain="example.eu.auth0.com", **SECRET), "https://example.eu.auth0.com",
         "Auth0"),
        (keycloak(base_url="https://sso.example.com/", realm="staff", **SECRET),
         "https://sso.example.com/realms/staff", "Keycloak"),
    ]  # fmt: skip
    for provider, issuer, name in cases:
        assert (provider.issuer, provider.name) == (issuer, name)
        assert provider.scopes[0] == "openid"


def test_offline_access_is_asked_where_the_provider_needs_it_for_refresh() -> None:
    assert "offline_access" in entra(tenant="t1", **SECRET).scopes
    assert "offline_access" not in google(**SECRET).scopes


@pytest.mark.parametrize("tenant", ["common", "organizations", "consumers", "", "a/b"])
def test_entra_needs_a_tenant_not_a_multi_tenant_alias(tenant: str) -> None:
    with pytest.raises(ConfigurationError, match="tenant"):
        entra(tenant=tenant, **SECRET)


def test_domains_are_host_names() -> None:
    with pytest.raises(ConfigurationError):
        okta(domain="https://example.okta.com", **SECRET)
    with pytest.raises(ConfigurationError):
        auth0(domain="example.auth0.com/", **SECRET)
    with pytest.raises(ConfigurationError):
        keycloak(base_url="https://sso.example.com", realm="", **SECRET)
