"""Client metadata documents for confidential clients: ``private_key_jwt`` at ``/token``.

The document and the client's JWKS are served over real HTTPS (a local uvicorn with a
certificate made for the run), the upstream is oidc-provider, the MCP client is
mcpkit's own, authenticating with assertions it signs (RFC 7523 § 2.2).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

from mcpkit import Context, MCPServer
from mcpkit.auth.client import OAuth
from mcpkit.auth.client.assertions import PrivateKeyJWT
from mcpkit.auth.server import OAuthProxy, OIDCProvider
from mcpkit.auth.server.client_documents import ClientDocuments
from mcpkit.auth.server.redis_storage import RedisAuthServerStorage
from mcpkit.client import Client
from tests.auth.server.browser import FormBrowser
from tests.auth.server.tls_documents import DocumentServer, document_server
from tests.auth.server.upstream import Upstream
from tests.client.http_servers import free_socket, serve
from tests.redis_server import RedisServer

REDIRECT = "http://127.0.0.1:33418/callback"


def new_key() -> dict[str, Any]:
    return ECKey.generate_key("P-256", auto_kid=True).as_dict(private=True)


def public(key: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in key.items() if k != "d"}


@dataclass
class Stack:
    base: str
    mcp_url: str
    docs: DocumentServer
    client_id: str  # the document's URL
    key: dict[str, Any]  # the client's private key
    http: httpx.AsyncClient


@pytest.fixture
async def stack(upstream: tuple[Upstream, int], tmp_path: Path) -> AsyncIterator[Stack]:
    up, port = upstream
    base = f"http://127.0.0.1:{port}"
    provider = OIDCProvider(issuer=up.issuer, client_id=up.client_id,
                            client_secret=up.client_secret)  # fmt: skip
    async with document_server(tmp_path) as docs:
        key = new_key()
        client_id = f"{docs.base}/client.json"
        docs.documents["/client.json"] = {
            "client_id": client_id, "client_name": "Keyed Agent", "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": f"{docs.base}/jwks.json"}  # fmt: skip
        docs.documents["/jwks.json"] = {"keys": [public(key)]}
        fetcher = docs.http_client()
        documents = ClientDocuments(http_client=fetcher, allow_private_addresses=True)
        proxy = OAuthProxy(upstream=provider, base_url=base, client_documents=documents)
        server = MCPServer(name="keyed", version="1")

        @server.tool
        def whoami(ctx: Context) -> str:
            """Who is calling, with which client."""
            auth = ctx.auth
            return "nobody" if auth is None else f"{auth.subject} via {auth.client_id}"

        app = server.http_app(auth=proxy.protected_resource())
        try:
            async with serve(app, free_socket(port)) as url, httpx.AsyncClient() as http:
                yield Stack(base, url, docs, client_id, key, http)
        finally:
            await fetcher.aclose()
            await provider.aclose()


async def test_a_confidential_documented_client_signs_in_with_private_key_jwt(
    stack: Stack,
) -> None:
    signer = PrivateKeyJWT(private_key=stack.key)
    browser = FormBrowser(REDIRECT, login="kim")
    auth = OAuth(authorizer=browser, client_id=stack.client_id,
                 token_endpoint_auth_method="private_key_jwt",
                 client_auth_methods={"private_key_jwt": signer.authenticate})  # fmt: skip
    try:
        async with Client(url=stack.mcp_url, auth=auth, timeout=10.0) as client:
            result = await client.call_tool("whoami", {})
    finally:
        await browser.aclose()
    assert result["content"][0]["text"] == f"kim via {stack.client_id}"
    assert "Keyed Agent" in browser.pages[0].text  # the consent page names the document's client
    assert stack.docs.fetches[:2] == ["/client.json", "/jwks.json"]


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def tokens(stack: Stack, signer: PrivateKeyJWT) -> tuple[httpx.Response, str]:
    """A sign-in up to the code, exchanged with ``signer``'s assertion; (answer, assertion)."""
    verifier, challenge = pkce()
    url = f"{stack.base}/authorize?" + urlencode({
        "response_type": "code", "client_id": stack.client_id, "redirect_uri": REDIRECT,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s"})  # fmt: skip
    browser = FormBrowser(REDIRECT, login="lou")
    try:
        back = parse_qs(urlsplit(await browser.authorize(url)).query)
    finally:
        await browser.aclose()
    form = signer.form(stack.client_id, stack.base)
    answer = await stack.http.post(f"{stack.base}/token", data={
        "grant_type": "authorization_code", "code": back["code"][0], "redirect_uri": REDIRECT,
        "code_verifier": verifier, **form})  # fmt: skip
    return answer, form["client_assertion"]


async def test_assertions_must_be_signed_by_the_clients_key_for_this_server_once(
    stack: Stack,
) -> None:
    signer = PrivateKeyJWT(private_key=stack.key)
    first, used = await tokens(stack, signer)
    assert first.status_code == 200, first.text
    refresh = {"grant_type": "refresh_token", "refresh_token": first.json()["refresh_token"]}

    async def refreshed(**form: str) -> httpx.Response:
        return await stack.http.post(f"{stack.base}/token", data={**refresh, **form})

    def assertion(signer: PrivateKeyJWT, audience: str = stack.base) -> dict[str, str]:
        return signer.form(stack.client_id, audience)

    replayed = await refreshed(client_id=stack.client_id, client_assertion=used,
                               client_assertion_type=assertion(signer)["client_assertion_type"])  # fmt: skip
    stranger = await refreshed(**assertion(PrivateKeyJWT(private_key=new_key())))
    elsewhere = await refreshed(**assertion(signer, "https://other-server.example"))
    bare = await refreshed(client_id=stack.client_id)
    for refused, why in ((replayed, "used before"), (stranger, "signature"),
                         (elsewhere, "audience"), (bare, "private_key_jwt")):  # fmt: skip
        assert refused.status_code == 401, refused.text
        assert refused.json()["error"] == "invalid_client"
        assert why in refused.json()["error_description"]
    # The refusals spent nothing: the refresh token still works with a good assertion,
    # which may also name the token endpoint as its audience (RFC 7523 § 3), and names
    # the client by itself (RFC 7521 § 4.2: client_id is then optional).
    form = assertion(signer, f"{stack.base}/token")
    del form["client_id"]
    good = await refreshed(**form)
    assert good.status_code == 200, good.text
    # The explicit type of draft-ietf-oauth-rfc7523bis is accepted; an access token's is not.
    refresh["refresh_token"] = good.json()["refresh_token"]
    as_token = await refreshed(**typed(stack, "at+jwt"))
    assert as_token.status_code == 401
    typed_answer = await refreshed(**typed(stack, "client-authentication+jwt"))
    assert typed_answer.status_code == 200, typed_answer.text


def typed(stack: Stack, typ: str) -> dict[str, str]:
    now = int(time.time())
    claims = {"iss": stack.client_id, "sub": stack.client_id, "aud": stack.base,
              "iat": now, "exp": now + 60, "jti": secrets.token_urlsafe(16)}  # fmt: skip
    token = jwt.encode({"alg": "ES256", "typ": typ}, claims, ECKey.import_key(stack.key))
    return {"client_id": stack.client_id, "client_assertion": token,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}  # fmt: skip


async def test_a_document_with_its_keys_inline_works_and_a_shared_secret_is_refused(
    stack: Stack,
) -> None:
    doc = stack.docs.documents["/client.json"]
    del doc["jwks_uri"]
    doc["jwks"] = {"keys": [public(stack.key)]}
    answer, _ = await tokens(stack, PrivateKeyJWT(private_key=stack.key))
    assert answer.status_code == 200, answer.text
    assert "/jwks.json" not in stack.docs.fetches

    secret_doc = {**doc, "client_id": f"{stack.docs.base}/secret.json",
                  "token_endpoint_auth_method": "client_secret_basic"}  # fmt: skip
    del secret_doc["jwks"]
    stack.docs.documents["/secret.json"] = secret_doc
    page = await stack.http.get(f"{stack.base}/authorize?" + urlencode({
        "response_type": "code", "client_id": secret_doc["client_id"], "redirect_uri": REDIRECT,
        "code_challenge": pkce()[1], "code_challenge_method": "S256"}))  # fmt: skip
    assert page.status_code == 400 and "location" not in page.headers
    assert "cannot use a shared secret" in page.text


async def test_the_metadata_announces_private_key_jwt_with_its_algorithms(stack: Stack) -> None:
    meta = (await stack.http.get(f"{stack.base}/.well-known/oauth-authorization-server")).json()
    assert "private_key_jwt" in meta["token_endpoint_auth_methods_supported"]
    assert "ES256" in meta["token_endpoint_auth_signing_alg_values_supported"]
    assert "HS256" not in meta["token_endpoint_auth_signing_alg_values_supported"]


async def test_an_assertion_spent_on_one_node_is_refused_on_another(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    # Client authentication comes before the grant: an assertion with a bogus refresh
    # token authenticates (its jti spent), then the grant is refused.
    key = new_key()
    prefix = f"jti-{secrets.token_hex(4)}:"
    async with document_server(tmp_path) as docs, contextlib.AsyncExitStack() as stack:
        client_id = f"{docs.base}/client.json"
        docs.documents["/client.json"] = {
            "client_id": client_id, "client_name": "Keyed Agent", "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "private_key_jwt", "jwks": {"keys": [public(key)]}}  # fmt: skip
        nodes = []
        for _ in range(2):
            fetcher = docs.http_client()
            stack.push_async_callback(fetcher.aclose)
            store = RedisAuthServerStorage(redis_server.url, prefix=prefix)
            stack.push_async_callback(store.aclose)
            upstream = OIDCProvider(issuer="http://127.0.0.1:9", client_id="c", client_secret="s")
            stack.push_async_callback(upstream.aclose)
            documents = ClientDocuments(http_client=fetcher, allow_private_addresses=True)
            proxy = OAuthProxy(upstream=upstream, base_url="http://127.0.0.1:8000",
                               storage=store, client_documents=documents)  # fmt: skip
            nodes.append(await stack.enter_async_context(serve(proxy.app(), path="")))
        form = {"grant_type": "refresh_token", "refresh_token": "not-a-token",
                **PrivateKeyJWT(private_key=key).form(client_id, "http://127.0.0.1:8000")}  # fmt: skip
        async with httpx.AsyncClient() as http:
            on_a = await http.post(f"{nodes[0]}/token", data=form)
            on_b = await http.post(f"{nodes[1]}/token", data=form)
    assert on_a.status_code == 400 and on_a.json()["error"] == "invalid_grant"
    assert on_b.status_code == 401 and on_b.json()["error"] == "invalid_client"
    assert "used before" in on_b.json()["error_description"]
