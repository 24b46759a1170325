"""The authorization code flow end to end: a real Client, a real authorization server that
checks PKCE, redirect URI, resource and client authentication, a real protected server."""

from __future__ import annotations

import logging

import pytest

from mcpkit.auth.client import MemoryTokenStorage
from tests.auth.client.servers import s256
from tests.auth.client.world import world


async def test_a_401_leads_to_discovery_registration_pkce_and_a_retried_call() -> None:
    async with world() as w:
        async with w.client(w.oauth()) as client:
            result = await client.call_tool("echo", {"text": "hi"})
        assert result["content"][0]["text"] == "hi"
        a = w.auth_server
        assert a.refusals == []
        assert [r["grant_type"] for r in a.token_requests] == ["authorization_code"]
        (authorize,) = a.authorizations
        (token,) = a.token_requests
        # PKCE S256: the AS recomputed the challenge from the verifier (it refuses otherwise).
        assert authorize["code_challenge_method"] == "S256"
        assert s256(token["code_verifier"]) == authorize["code_challenge"]
        # RFC 8707: the resource, exactly as the metadata published it, in both requests.
        assert authorize["resource"] == token["resource"] == w.url
        assert len(authorize["state"]) >= 32
        # DCR as a native public client with refresh tokens.
        (registration,) = a.registrations
        assert registration["application_type"] == "native"
        assert "refresh_token" in registration["grant_types"]
        assert registration["token_endpoint_auth_method"] == "none"
        assert token["client_id"] == authorize["client_id"]
        # The MCP server saw only tokens it accepted after the first 401.
        assert set(w.resource.seen_tokens) <= set(w.table.access)


async def test_tokens_are_kept_in_the_storage_and_reused_by_the_next_client() -> None:
    storage = MemoryTokenStorage()
    async with world() as w:
        async with w.client(w.oauth(storage=storage)) as client:
            await client.list_tools()
        async with w.client(w.oauth(storage=storage)) as client:
            await client.list_tools()
        assert len(w.auth_server.authorizations) == 1
        assert len(w.auth_server.registrations) == 1
        tokens = await storage.load_tokens(w.url)
        assert tokens is not None and tokens.issuer == w.auth_server.issuer


async def test_no_token_secret_or_code_reaches_logs_or_reprs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    storage = MemoryTokenStorage()
    async with world(as_options={"dcr_method": "client_secret_post"}) as w:
        auth = w.oauth(storage=storage)
        async with w.client(auth) as client:
            await client.list_tools()
        tokens = await storage.load_tokens(w.url)
        registration = await storage.load_registration(w.url)
        assert tokens is not None and tokens.refresh_token and registration is not None
        assert registration.client_secret
        secrets = [
            tokens.access_token,
            tokens.refresh_token,
            registration.client_secret,
            w.auth_server.token_requests[0]["code"],
            w.auth_server.token_requests[0]["code_verifier"],
        ]
        shown = "\n".join(
            [caplog.text, repr(tokens), repr(registration), repr(auth), repr(storage), str(auth)]
        )
        assert "registered with" in caplog.text  # the flow did log, just not the secrets
        for secret in secrets:
            assert secret not in shown


async def test_the_authorization_server_refusing_the_code_is_an_authorization_failure() -> None:
    from mcpkit.errors import AuthorizationFailed

    async with world(as_options={"dcr_method": "client_secret_basic"}) as w:
        # Registered as a basic client, but told to authenticate with the post method:
        # the AS refuses the token request, and the error carries its code, no secret.
        auth = w.oauth(token_endpoint_auth_method=None)
        auth.client_auth_methods["client_secret_basic"] = auth.client_auth_methods[
            "client_secret_post"
        ]
        with pytest.raises(AuthorizationFailed) as caught:
            async with w.client(auth) as client:
                await client.list_tools()
        assert caught.value.error == "invalid_client"
        secret = next(iter(w.auth_server.clients.values()))[0]
        assert secret and secret not in str(caught.value)
