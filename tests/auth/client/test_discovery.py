"""Discovery with every fallback the specification orders, against real servers."""

from __future__ import annotations

import pytest

from mcpkit.auth.client.discovery import (
    authorization_server_urls,
    resource_matches,
    resource_metadata_urls,
)
from mcpkit.errors import AuthorizationFailed
from tests.auth.client.world import world


def test_the_well_known_urls_come_in_the_specifications_order() -> None:
    assert resource_metadata_urls("https://h/a/mcp", "https://h/custom") == [
        "https://h/custom",
        "https://h/.well-known/oauth-protected-resource/a/mcp",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert authorization_server_urls("https://as/tenant1") == [
        "https://as/.well-known/oauth-authorization-server/tenant1",
        "https://as/.well-known/openid-configuration/tenant1",
        "https://as/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_urls("https://as") == [
        "https://as/.well-known/oauth-authorization-server",
        "https://as/.well-known/openid-configuration",
    ]


def test_a_resource_covers_its_own_url_and_the_paths_below_it_only() -> None:
    assert resource_matches("https://h/mcp", "https://h/mcp")
    assert resource_matches("https://h", "https://h/mcp")
    assert resource_matches("https://H:443/api", "https://h/api/mcp")
    assert not resource_matches("https://h/ap", "https://h/api/mcp")
    assert not resource_matches("https://evil.example.com/mcp", "https://h/mcp")
    assert not resource_matches("http://h/mcp", "https://h/mcp")


@pytest.mark.parametrize(
    ("prm_at", "header_url", "metadata_at", "prefix"),
    [
        ("path", True, "oauth", ""),  # the header's URL; RFC 8414 at the root
        ("path", False, "oidc-root", ""),  # path-inserted PRM; OIDC after RFC 8414 fails
        ("root", False, "oauth", "/tenant1"),  # root PRM; RFC 8414 path-inserted
        ("custom", True, "oidc-inserted", "/tenant1"),  # only the header finds the PRM
        ("path", True, "oidc-appended", "/tenant1"),  # the last OIDC fallback
    ],
)
async def test_metadata_is_found_where_the_servers_publish_it(
    prm_at: str, header_url: bool, metadata_at: str, prefix: str
) -> None:
    async with world(
        prm_at=prm_at,
        header_url=header_url,
        as_options={"metadata_at": metadata_at, "prefix": prefix},
    ) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert w.auth_server.refusals == []
        (authorize,) = w.auth_server.authorizations
        expected = w.url.removesuffix("/mcp") if prm_at == "root" else w.url
        assert authorize["resource"] == expected  # exactly as the metadata published it
        gets = [p for m, p in w.auth_server.requests if m == "GET" and "well-known" in p]
        assert gets[-1] == w.auth_server.metadata_path()
        if prm_at == "path" and header_url:
            assert w.resource.prm_requests == [w.resource.prm_path()]


async def test_root_metadata_is_not_fetched_when_the_path_inserted_one_exists() -> None:
    async with world(prm_at="path", header_url=False) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert w.resource.prm_requests == ["/.well-known/oauth-protected-resource/mcp"]


async def test_metadata_for_another_resource_is_refused_before_any_authorization() -> None:
    async with world(resource_override="https://evil.example.com/mcp") as w:
        with pytest.raises(AuthorizationFailed) as caught:
            async with w.client(w.oauth()) as client:
                await client.list_tools()
        assert caught.value.error == "resource_mismatch"
        assert w.auth_server.requests == []  # not even its metadata


async def test_metadata_naming_another_issuer_is_refused() -> None:
    async with world(as_options={"metadata_issuer": "https://attacker.example.com"}) as w:
        with pytest.raises(AuthorizationFailed) as caught:
            async with w.client(w.oauth()) as client:
                await client.list_tools()
        assert caught.value.error == "issuer_mismatch"
        assert [m for m, _ in w.auth_server.requests] == ["GET"]  # metadata only
        assert w.auth_server.registrations == w.auth_server.authorizations == []


async def test_the_issuer_is_compared_without_normalisation() -> None:
    async with world(as_options={"metadata_issuer": None}) as w:
        w.auth_server.metadata_issuer = w.auth_server.issuer + "/"
        with pytest.raises(AuthorizationFailed, match="issuer"):
            async with w.client(w.oauth()) as client:
                await client.list_tools()


async def test_a_2025_03_26_server_uses_the_metadata_at_its_origin() -> None:
    async with world(legacy=True) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert ("GET", "/.well-known/oauth-authorization-server") in w.auth_server.requests
        assert w.auth_server.authorizations[0]["resource"] == w.url
        assert w.auth_server.refusals == []


async def test_a_2025_03_26_server_without_metadata_gets_the_default_endpoints() -> None:
    async with world(legacy=True, as_options={"metadata_at": None}) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        paths = [p for _, p in w.auth_server.requests]
        assert paths[-3:] == ["/register", "/authorize", "/token"]
        assert w.auth_server.refusals == []
