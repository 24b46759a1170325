"""The authorization server end to end: a real OpenID provider upstream, real sockets.

``oidc-provider`` (npm) is the company's identity provider, mcpkit's ``OAuthProxy`` the
MCP authorization server in front of an MCP server, and the MCP client is mcpkit's own
OAuth client, with :class:`FormBrowser` doing the browser's part (mcpkit's consent page,
the provider's login and consent pages). Then the refusals: a tampered upstream state, a
reused code, a wrong redirect URI, a missing or wrong PKCE verifier, a denied consent, a
rotated or revoked refresh token.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth.client import OAuth
from mcpkit.auth.server import OAuthProxy, OIDCProvider
from mcpkit.auth.server.client_documents import ClientDocuments
from mcpkit.client import Client
from tests.auth.server.browser import FormBrowser
from tests.auth.server.documents import DOC_URL, DocumentHost
from tests.auth.server.upstream import Upstream
from tests.client.http_servers import free_socket, serve

CLIENT_REDIRECT = "http://127.0.0.1:33418/callback"


@dataclass
class Stack:
    base: str  # the authorization server's (and MCP server's) base URL
    mcp_url: str
    proxy: OAuthProxy
    http: httpx.AsyncClient


def mcp_server(proxy: OAuthProxy) -> MCPServer:
    server = MCPServer(name="proxied", version="1")

    @server.tool
    async def upstream_email(ctx: Context) -> str:
        """Ask the identity provider, with the user's own provider token, who this is."""
        token = await proxy.upstream_token(ctx.auth)
        meta = await proxy.upstream.metadata()  # type: ignore[attr-defined]
        async with httpx.AsyncClient() as http:
            resp = await http.get(
                meta["userinfo_endpoint"], headers={"authorization": f"Bearer {token}"}
            )
        resp.raise_for_status()
        return f"{resp.json()['email']} {token[:12]}"

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who is calling."""
        auth = ctx.auth
        if auth is None:
            return "nobody"
        return f"{auth.subject} <{auth.claims.get('email')}> via {auth.client_id}"

    return server


@pytest.fixture
async def stack(upstream: tuple[Upstream, int]) -> AsyncIterator[Stack]:
    up, port = upstream
    base = f"http://127.0.0.1:{port}"
    provider = OIDCProvider(
        issuer=up.issuer, client_id=up.client_id, client_secret=up.client_secret
    )
    documents = ClientDocuments(http_client=DocumentHost().client(), allow_private_addresses=True)
    proxy = OAuthProxy(upstream=provider, base_url=base, scopes_supported=["mcp:tools"],
                       client_documents=documents)  # fmt: skip
    app = mcp_server(proxy).http_app(auth=proxy.protected_resource())
    async with serve(app, free_socket(port)) as mcp_url, httpx.AsyncClient(timeout=10) as http:
        yield Stack(base, mcp_url, proxy, http)
    await provider.aclose()


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def register(stack: Stack, **extra: Any) -> str:
    body = {"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "client_name": "Test Agent",
            **extra}  # fmt: skip
    resp = await stack.http.post(f"{stack.base}/register", json=body)
    assert resp.status_code == 201, resp.text
    client_id: str = resp.json()["client_id"]
    return client_id


def authorize_url(stack: Stack, client_id: str, challenge: str | None, **extra: str) -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": CLIENT_REDIRECT,
              "state": "client-state", "scope": "mcp:tools", "resource": stack.mcp_url,
              **extra}  # fmt: skip
    if challenge is not None:
        params.update(code_challenge=challenge, code_challenge_method="S256")
    return f"{stack.base}/authorize?{urlencode(params)}"


def answer(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def code_for(stack: Stack, client_id: str, challenge: str) -> str:
    browser = FormBrowser(CLIENT_REDIRECT)
    try:
        back = answer(await browser.authorize(authorize_url(stack, client_id, challenge)))
    finally:
        await browser.aclose()
    assert back["state"] == "client-state" and back["iss"] == stack.base
    return back["code"]


async def token(stack: Stack, **form: str) -> httpx.Response:
    return await stack.http.post(f"{stack.base}/token", data=form)


async def test_mcp_client_signs_in_upstream_and_the_tool_sees_the_user(stack: Stack) -> None:
    browser = FormBrowser(login="alice")
    auth = OAuth(authorizer=browser, client_name="Test Agent", scopes=["mcp:tools"])
    try:
        async with Client(url=stack.mcp_url, auth=auth, timeout=10.0) as client:
            result = await client.call_tool("whoami", {})
    finally:
        await browser.aclose()
    text = result["content"][0]["text"]
    assert text.startswith("alice <alice@example.com> via ")
    consent = browser.pages[0]
    assert consent.url.startswith(f"{stack.base}/authorize?")
    assert "Test Agent" in consent.text and "mcp:tools" in consent.text
    assert "frame-ancestors 'none'" in consent.headers["content-security-policy"]
    for external in ("src=", "href=", "url(", "@import"):  # no external assets
        assert external not in consent.text
    # The provider's own pages came next: mcpkit sent the browser upstream after consent.
    assert any(p.url.startswith(stack.proxy.upstream.issuer) for p in browser.pages[1:])  # type: ignore[attr-defined]


async def test_token_is_short_lived_audience_bound_and_not_the_upstream_token(
    stack: Stack,
) -> None:
    client_id = await register(stack)
    verifier, challenge = pkce()
    code = await code_for(stack, client_id, challenge)
    resp = await token(stack, grant_type="authorization_code", code=code, client_id=client_id,
                       redirect_uri=CLIENT_REDIRECT, code_verifier=verifier)  # fmt: skip
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["expires_in"] == 900 and body["scope"] == "mcp:tools"
    assert resp.headers["cache-control"] == "no-store"
    info = await stack.proxy.protected_resource().verify(body["access_token"])
    assert info.subject == "alice" and info.resource == stack.mcp_url
    assert info.issuer == stack.base and info.client_id == client_id
    # An MCP request with it is served.
    listed = await stack.http.post(
        stack.mcp_url,
        headers={"authorization": f"Bearer {body['access_token']}",
                 "accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
    )  # fmt: skip
    assert listed.status_code == 200, listed.text


async def test_a_code_is_single_use_and_its_replay_ends_the_grant(stack: Stack) -> None:
    client_id = await register(stack)
    verifier, challenge = pkce()
    code = await code_for(stack, client_id, challenge)
    form = dict(grant_type="authorization_code", code=code, client_id=client_id,
                redirect_uri=CLIENT_REDIRECT, code_verifier=verifier)  # fmt: skip
    first = await token(stack, **form)
    assert first.status_code == 200
    again = await token(stack, **form)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    # OAuth 2.1 § 4.1.3: the replay revokes what the code bought.
    refresh = await token(stack, grant_type="refresh_token", client_id=client_id,
                          refresh_token=first.json()["refresh_token"])  # fmt: skip
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant"


async def test_a_missing_or_wrong_pkce_verifier_is_refused(stack: Stack) -> None:
    client_id = await register(stack)
    verifier, challenge = pkce()
    code = await code_for(stack, client_id, challenge)
    form = dict(grant_type="authorization_code", code=code, client_id=client_id,
                redirect_uri=CLIENT_REDIRECT)  # fmt: skip
    missing = await token(stack, **form)
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    wrong = await token(stack, **form, code_verifier=pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    # The failed attempt used the code up: the right verifier comes too late.
    late = await token(stack, **form, code_verifier=verifier)
    assert late.json()["error"] == "invalid_grant"


async def test_a_wrong_redirect_uri_is_refused_without_redirecting(stack: Stack) -> None:
    client_id = await register(stack)
    _, challenge = pkce()
    url = authorize_url(stack, client_id, challenge, redirect_uri="http://evil.example/cb")
    resp = await stack.http.get(url)
    assert resp.status_code == 400 and "location" not in resp.headers
    assert "redirect URI" in resp.text
    # At the token endpoint, the code is bound to the redirect URI it was issued for.
    verifier, challenge = pkce()
    code = await code_for(stack, client_id, challenge)
    resp = await token(stack, grant_type="authorization_code", code=code, client_id=client_id,
                       redirect_uri="http://127.0.0.1:33418/other", code_verifier=verifier)  # fmt: skip
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


async def test_authorization_without_pkce_goes_back_with_an_error_and_iss(stack: Stack) -> None:
    client_id = await register(stack)
    resp = await stack.http.get(authorize_url(stack, client_id, None))
    assert resp.status_code == 302
    back = answer(resp.headers["location"])
    assert resp.headers["location"].startswith(CLIENT_REDIRECT)
    assert back == {"error": "invalid_request", "state": "client-state", "iss": stack.base,
                    "error_description": "PKCE is required: send code_challenge (S256)"}  # fmt: skip


async def test_a_tampered_upstream_state_is_refused(stack: Stack) -> None:
    client_id = await register(stack)
    _, challenge = pkce()
    browser = FormBrowser(stack.proxy.callback_url)  # stop at mcpkit's callback
    try:
        callback = await browser.authorize(authorize_url(stack, client_id, challenge))
    finally:
        await browser.aclose()
    params = answer(callback)
    tampered = callback.replace(params["state"], params["state"][:-2] + "xx")
    refused = await stack.http.get(tampered)
    assert refused.status_code == 400 and "location" not in refused.headers
    # The genuine callback still completes (the forged one consumed nothing)...
    done = await stack.http.get(callback)
    assert done.status_code == 302 and "code" in answer(done.headers["location"])
    # ...once.
    replay = await stack.http.get(callback)
    assert replay.status_code == 400


async def test_denied_consent_goes_back_as_access_denied(stack: Stack) -> None:
    client_id = await register(stack)
    _, challenge = pkce()
    browser = FormBrowser(CLIENT_REDIRECT, consent="deny")
    try:
        back = answer(await browser.authorize(authorize_url(stack, client_id, challenge)))
    finally:
        await browser.aclose()
    assert back["error"] == "access_denied" and back["state"] == "client-state"
    assert back["iss"] == stack.base and "code" not in back


async def test_refresh_tokens_rotate_and_revocation_ends_the_grant(stack: Stack) -> None:
    client_id = await register(stack)
    verifier, challenge = pkce()
    code = await code_for(stack, client_id, challenge)
    first = (await token(stack, grant_type="authorization_code", code=code, client_id=client_id,
                         redirect_uri=CLIENT_REDIRECT, code_verifier=verifier)).json()  # fmt: skip
    second = await token(stack, grant_type="refresh_token", client_id=client_id,
                         refresh_token=first["refresh_token"])  # fmt: skip
    assert second.status_code == 200, second.text
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    third = await token(stack, grant_type="refresh_token", client_id=client_id,
                        refresh_token=rotated["refresh_token"])  # fmt: skip
    assert third.status_code == 200
    revoked = await stack.http.post(f"{stack.base}/revoke", data={
        "client_id": client_id, "token": third.json()["refresh_token"]})  # fmt: skip
    assert revoked.status_code == 200
    after = await token(stack, grant_type="refresh_token", client_id=client_id,
                        refresh_token=third.json()["refresh_token"])  # fmt: skip
    assert after.json()["error"] == "invalid_grant"


async def test_a_replayed_refresh_token_ends_the_grant(stack: Stack) -> None:
    client_id = await register(stack)
    verifier, challenge = pkce()
    code = await code_for(stack, client_id, challenge)
    first = (await token(stack, grant_type="authorization_code", code=code, client_id=client_id,
                         redirect_uri=CLIENT_REDIRECT, code_verifier=verifier)).json()  # fmt: skip
    rotated = (await token(stack, grant_type="refresh_token", client_id=client_id,
                           refresh_token=first["refresh_token"])).json()  # fmt: skip
    replay = await token(stack, grant_type="refresh_token", client_id=client_id,
                         refresh_token=first["refresh_token"])  # fmt: skip
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    # OAuth 2.1 § 4.3.1: two parties held the grant; the newest token dies with it.
    newest = await token(stack, grant_type="refresh_token", client_id=client_id,
                         refresh_token=rotated["refresh_token"])  # fmt: skip
    assert newest.status_code == 400 and newest.json()["error"] == "invalid_grant"


async def test_tools_use_the_users_provider_token_refreshed_when_it_expires(
    stack: Stack,
) -> None:
    browser = FormBrowser(login="carol")
    auth = OAuth(authorizer=browser, scopes=["mcp:tools"])
    try:
        async with Client(url=stack.mcp_url, auth=auth, timeout=10.0) as client:
            first = (await client.call_tool("upstream_email", {}))["content"][0]["text"]
            assert first.startswith("carol@example.com ")
            # The provider's token runs out: the next use refreshes it at the provider.
            token = (await auth.storage.load_tokens(stack.mcp_url)).access_token  # type: ignore[union-attr]
            info = await stack.proxy.protected_resource().verify(token)
            grant = info.claims["mcpkit_grant"]
            kept = await stack.proxy.storage.load_upstream_tokens(grant)
            assert kept is not None and kept.refresh_token is not None
            await stack.proxy.storage.save_upstream_tokens(replace(kept, access_expires_at=0.0))
            second = (await client.call_tool("upstream_email", {}))["content"][0]["text"]
    finally:
        await browser.aclose()
    assert second.startswith("carol@example.com ") and second != first
    renewed = await stack.proxy.storage.load_upstream_tokens(grant)
    assert renewed is not None and renewed.access_token != kept.access_token
    # The MCP client never saw a provider token: its access token is mcpkit's own JWT.
    assert info.issuer == stack.base and kept.access_token not in token


def consent_pages(browser: FormBrowser) -> int:
    return sum('name=flow value="' in page.text for page in browser.pages)


async def test_consent_is_remembered_per_user_and_client_until_revoked(stack: Stack) -> None:
    client_id = await register(stack)
    other_client = await register(stack)
    browser = FormBrowser(CLIENT_REDIRECT, login="dave")
    try:
        for _ in range(2):
            back = answer(await browser.authorize(authorize_url(stack, client_id, pkce()[1])))
            assert "code" in back
        assert consent_pages(browser) == 1  # the second time went straight to the provider
        # Another client, or more scopes than approved, asks again.
        await browser.authorize(authorize_url(stack, other_client, pkce()[1]))
        assert consent_pages(browser) == 2
        await stack.proxy.revoke_consent("dave", client_id)
        await browser.authorize(authorize_url(stack, client_id, pkce()[1]))
        assert consent_pages(browser) == 3
    finally:
        await browser.aclose()


async def test_remembered_consent_does_not_carry_over_to_another_user(stack: Stack) -> None:
    client_id = await register(stack)
    browser = FormBrowser(CLIENT_REDIRECT, login="erin")
    try:
        await browser.authorize(authorize_url(stack, client_id, pkce()[1]))
        # Same browser, but erin signs out at the provider and frank signs in. (Cookies
        # ignore ports: both servers' cookies are 127.0.0.1's; mcpkit's keep their names.)
        jar = browser.http.cookies.jar
        for cookie in list(jar):
            if not cookie.name.startswith("mcpkit_"):
                jar.clear(cookie.domain, cookie.path, cookie.name)
        browser.login = "frank"
        back = answer(await browser.authorize(authorize_url(stack, client_id, pkce()[1])))
    finally:
        await browser.aclose()
    assert back["error"] == "access_denied" and "code" not in back
    assert consent_pages(browser) == 1


async def test_a_sign_in_cancelled_at_the_provider_goes_back_as_access_denied(
    stack: Stack,
) -> None:
    client_id = await register(stack)
    browser = FormBrowser(CLIENT_REDIRECT, cancel_upstream=True)
    try:
        back = answer(await browser.authorize(authorize_url(stack, client_id, pkce()[1])))
    finally:
        await browser.aclose()
    # The provider's own error is not echoed; the client hears access_denied, with its
    # state and this server's iss.
    assert back["error"] == "access_denied" and back["state"] == "client-state"
    assert back["iss"] == stack.base and "code" not in back


async def test_a_client_named_by_its_metadata_document_signs_in(stack: Stack) -> None:
    browser = FormBrowser(login="ivan")  # its redirect URI is the one the document lists
    auth = OAuth(authorizer=browser, client_metadata_url=DOC_URL, scopes=["mcp:tools"])
    try:
        async with Client(url=stack.mcp_url, auth=auth, timeout=10.0) as client:
            result = await client.call_tool("whoami", {})
    finally:
        await browser.aclose()
    assert result["content"][0]["text"] == f"ivan <ivan@example.com> via {DOC_URL}"
    assert "Documented Agent" in browser.pages[0].text  # the name from the document


async def test_a_confidential_client_authenticates_with_the_method_it_registered(
    stack: Stack,
) -> None:
    resp = await stack.http.post(f"{stack.base}/register", json={
        "redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "client_secret_basic",
        "grant_types": ["authorization_code", "refresh_token"]})  # fmt: skip
    client_id, secret = resp.json()["client_id"], resp.json()["client_secret"]
    verifier, challenge = pkce()
    code = await code_for(stack, client_id, challenge)
    form = dict(grant_type="authorization_code", code=code, redirect_uri=CLIENT_REDIRECT,
                code_verifier=verifier)  # fmt: skip
    url = f"{stack.base}/token"
    wrong = await stack.http.post(url, data=form, auth=(client_id, secret + "x"))
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert wrong.headers["www-authenticate"].startswith("Basic")
    posted = await stack.http.post(url, data={**form, "client_id": client_id,
                                              "client_secret": secret})  # fmt: skip
    assert posted.status_code == 401  # registered for Basic, not the form
    right = await stack.http.post(url, data=form, auth=(client_id, secret))
    assert right.status_code == 200, right.text


async def test_the_mcp_client_refreshes_a_short_lived_token_with_rotation(
    upstream: tuple[Upstream, int],
) -> None:
    up, port = upstream
    provider = OIDCProvider(issuer=up.issuer, client_id=up.client_id,
                            client_secret=up.client_secret)  # fmt: skip
    # 20 s tokens: inside the client's 30 s refresh margin, so every call refreshes first.
    proxy = OAuthProxy(upstream=provider, base_url=f"http://127.0.0.1:{port}",
                       access_token_ttl=20)  # fmt: skip
    app = mcp_server(proxy).http_app(auth=proxy.protected_resource())
    browser = FormBrowser(login="judy")
    auth = OAuth(authorizer=browser)
    try:
        async with serve(app, free_socket(port)) as url:
            async with Client(url=url, auth=auth, timeout=10.0) as client:
                await client.call_tool("whoami", {})
                first = await auth.storage.load_tokens(url)
                result = await client.call_tool("whoami", {})
                second = await auth.storage.load_tokens(url)
    finally:
        await browser.aclose()
        await provider.aclose()
    assert result["content"][0]["text"].startswith("judy <judy@example.com>")
    assert first is not None and second is not None
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token  # rotated
    assert consent_pages(browser) == 1  # refreshed, never authorized again
