"""Pre-registration, Client ID Metadata Documents, DCR, token endpoint authentication
methods checked by the authorization server, and re-registration when it changes."""

from __future__ import annotations

import base64

import pytest

from mcpkit.auth.client import MemoryTokenStorage
from mcpkit.errors import AuthorizationFailed
from tests.auth.client.servers import AuthServer
from tests.auth.client.world import world
from tests.client.http_servers import free_socket, serve

CIMD = "https://app.example.com/oauth/client.json"


@pytest.mark.parametrize("method", ["none", "client_secret_basic", "client_secret_post"])
async def test_the_method_the_server_supports_is_used_and_accepted(method: str) -> None:
    async with world(as_options={"auth_methods": (method,)}) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert w.auth_server.refusals == []
        (registration,) = w.auth_server.registrations
        assert registration["token_endpoint_auth_method"] == method
        (token,) = w.auth_server.token_requests
        assert token["_authorization"].startswith("Basic ") == (method == "client_secret_basic")
        assert ("client_secret" in token) == (method == "client_secret_post")


async def test_pre_registered_credentials_are_used_without_registration() -> None:
    async with world(as_options={"auth_methods": ("client_secret_basic",), "dcr": False}) as w:
        w.auth_server.clients["app:1"] = ("s3cr:et", "client_secret_basic")
        auth = w.oauth(client_id="app:1", client_secret="s3cr:et")
        async with w.client(auth) as client:
            await client.list_tools()
        assert w.auth_server.registrations == [] and w.auth_server.refusals == []
        header = w.auth_server.token_requests[0]["_authorization"]
        # RFC 6749 § 2.3.1: form-encoded before base64, so the ':' inside survive.
        assert base64.b64decode(header[6:]) == b"app%3A1:s3cr%3Aet"


async def test_a_metadata_document_url_is_the_client_id_when_the_server_supports_it() -> None:
    async with world(as_options={"cimd": True}) as w:
        async with w.client(w.oauth(client_metadata_url=CIMD)) as client:
            await client.list_tools()
        assert w.auth_server.registrations == []
        assert w.auth_server.authorizations[0]["client_id"] == CIMD
        assert w.auth_server.token_requests[0]["client_id"] == CIMD


async def test_dynamic_registration_is_the_fallback_without_metadata_document_support() -> None:
    async with world(as_options={"cimd": False}) as w:
        async with w.client(w.oauth(client_metadata_url=CIMD)) as client:
            await client.list_tools()
        assert len(w.auth_server.registrations) == 1
        assert w.auth_server.authorizations[0]["client_id"] != CIMD


async def test_no_way_to_register_is_an_authorization_failure() -> None:
    async with world(as_options={"dcr": False}) as w:
        with pytest.raises(AuthorizationFailed) as caught:
            async with w.client(w.oauth()) as client:
                await client.list_tools()
        assert caught.value.error == "registration_unavailable"


async def test_a_new_authorization_server_gets_a_new_registration_and_no_old_credentials() -> None:
    storage = MemoryTokenStorage()
    async with world() as w:
        async with w.client(w.oauth(storage=storage)) as client:
            await client.list_tools()
        old_client = w.auth_server.authorizations[0]["client_id"]
        sock = free_socket()
        second = AuthServer(base=f"http://127.0.0.1:{sock.getsockname()[1]}", table=w.table)
        async with serve(second, sock, path=""):
            w.resource.issuers = lambda: [second.issuer]  # the resource moved
            async with w.client(w.oauth(storage=storage)) as client:
                await client.list_tools()
            assert len(second.registrations) == 1
            assert second.refusals == []
            seen = [a["client_id"] for a in second.authorizations]
            seen += [t.get("client_id", "") for t in second.token_requests]
            assert old_client not in seen
        registration = await storage.load_registration(w.url)
        assert registration is not None and registration.issuer == second.issuer
