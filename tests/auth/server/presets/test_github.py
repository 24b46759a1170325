"""The GitHub provider end to end: mcpkit's client, the OAuth proxy, a GitHub stand-in.

:class:`FakeGitHub` serves GitHub's authorize, token and REST endpoints on a real socket,
as GitHub documents them (form or JSON by ``Accept``, errors as HTTP 200); the proxy
serves an MCP server whose tools read ``ctx.auth`` and call GitHub with the user's own
token (``await ctx.auth.upstream_token()``), refreshed when a GitHub App's token expires.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth.client import OAuth
from mcpkit.auth.server import GitHubProvider, OAuthProxy, UpstreamError
from mcpkit.auth.server.presets import github
from mcpkit.client import Client
from mcpkit.errors import ConfigurationError
from tests.auth.server.browser import FormBrowser
from tests.auth.server.presets.github_server import API, FakeGitHub, User
from tests.client.http_servers import free_socket, serve, unused_port

CLIENT_REDIRECT = "http://127.0.0.1:33418/callback"


@dataclass
class Stack:
    github: FakeGitHub
    github_url: str
    proxy: OAuthProxy
    mcp_url: str


def mcp_server(proxy: OAuthProxy, github_url: str) -> MCPServer:
    server = MCPServer(name="gh", version="1", auth=proxy.protected_resource())

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who signed in, as the access token says."""
        auth = ctx.auth
        assert auth is not None
        claims = auth.claims
        return f"{auth.subject} {claims.get('preferred_username')} <{claims.get('email')}>"

    @server.tool
    async def github_login(ctx: Context) -> str:
        """Ask GitHub, with the user's GitHub token, who this is."""
        assert ctx.auth is not None
        token = await ctx.auth.upstream_token()
        async with httpx.AsyncClient() as http:
            resp = await http.get(f"{github_url}{API}/user", headers={
                "authorization": f"Bearer {token}", "user-agent": "test"})  # fmt: skip
        resp.raise_for_status()
        return f"{resp.json()['login']} {token}"

    return server


async def start(expiring: bool = False, secret: str = "gh-secret") -> AsyncIterator[Stack]:
    port = unused_port()
    fake = FakeGitHub("Iv1.test", "gh-secret", f"http://127.0.0.1:{port}/auth/callback",
                      expiring=expiring)  # fmt: skip
    fake.add(User(id=583231, login="octocat", name="The Octocat", emails=[
        {"email": "octo@old.example", "primary": False, "verified": True},
        {"email": "octocat@example.com", "primary": True, "verified": True}]))  # fmt: skip
    fake.add(User(id=42, login="hubot", public_email="hubot@example.com"))
    async with serve(fake, path="") as github_url:
        provider = github(client_id="Iv1.test", client_secret=secret, base_url=github_url,
                          api_url=github_url + API)  # fmt: skip
        proxy = OAuthProxy(upstream=provider, base_url=f"http://127.0.0.1:{port}")
        app = mcp_server(proxy, github_url).http_app()
        async with serve(app, free_socket(port)) as mcp_url:
            yield Stack(fake, github_url, proxy, mcp_url)
        await provider.aclose()


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    async for s in start():
        yield s


@pytest.fixture
async def expiring() -> AsyncIterator[Stack]:
    async for s in start(expiring=True):
        yield s


async def call(stack: Stack, login: str, tool: str) -> str:
    browser = FormBrowser(login=login)
    try:
        async with Client(url=stack.mcp_url, auth=OAuth(authorizer=browser), timeout=10.0) as c:
            result = await c.call_tool(tool, {})
    finally:
        await browser.aclose()
    return str(result["content"][0]["text"])


async def test_the_user_is_github_s_numeric_id_even_after_a_rename(stack: Stack) -> None:
    # The profile shows no email: the verified primary one comes from /user/emails.
    assert await call(stack, "octocat", "whoami") == "583231 octocat <octocat@example.com>"
    assert await call(stack, "hubot", "whoami") == "42 hubot <hubot@example.com>"
    stack.github.rename("octocat", "monalisa")
    assert await call(stack, "monalisa", "whoami") == "583231 monalisa <octocat@example.com>"
    # Every token request asked for JSON (GitHub answers form-encoded otherwise).
    assert stack.github.token_requests
    assert all(h["accept"] == "application/json" for h in stack.github.token_requests)


async def test_a_tool_calls_github_with_the_users_own_token(stack: Stack) -> None:
    login, token = (await call(stack, "hubot", "github_login")).split()
    assert login == "hubot" and token.startswith("gho_")
    # GitHub's token stayed on the server: the MCP client held only mcpkit's JWT.
    assert stack.github.tokens[token][0] == "hubot"


async def test_an_expiring_github_token_is_refreshed_and_its_refresh_token_rotated(
    expiring: Stack,
) -> None:
    browser = FormBrowser(login="octocat")
    auth = OAuth(authorizer=browser)
    try:
        async with Client(url=expiring.mcp_url, auth=auth, timeout=10.0) as client:
            first = (await client.call_tool("github_login", {}))["content"][0]["text"]
            ours = await auth.storage.load_tokens(expiring.mcp_url)
            assert ours is not None
            info = await expiring.proxy.protected_resource().verify(ours.access_token)
            kept = await expiring.proxy.storage.load_upstream_tokens(info.claims["mcpkit_grant"])
            assert kept is not None and kept.refresh_token is not None
            assert kept.scope == "read:user user:email"  # GitHub's commas, as RFC 6749 spaces
            await expiring.proxy.storage.save_upstream_tokens(replace(kept, access_expires_at=0))
            second = (await client.call_tool("github_login", {}))["content"][0]["text"]
    finally:
        await browser.aclose()
    assert first.split()[0] == second.split()[0] == "octocat"
    assert first.split()[1].startswith("ghu_") and second != first
    renewed = await expiring.proxy.storage.load_upstream_tokens(kept.grant_id)
    assert renewed is not None and renewed.refresh_token != kept.refresh_token
    assert kept.refresh_token not in expiring.github.refresh_tokens  # spent at GitHub


async def authorize(stack: Stack, login: str, *, cancel: bool = False) -> dict[str, str]:
    async with httpx.AsyncClient() as http:
        reg = await http.post(stack.mcp_url.removesuffix("/mcp") + "/register", json={
            "redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none"})  # fmt: skip
    params = {"response_type": "code", "client_id": reg.json()["client_id"],
              "redirect_uri": CLIENT_REDIRECT, "state": "s1",
              "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
              "code_challenge_method": "S256"}  # fmt: skip
    base = stack.mcp_url.removesuffix("/mcp")
    browser = FormBrowser(CLIENT_REDIRECT, login=login, cancel_upstream=cancel)
    try:
        back = await browser.authorize(f"{base}/authorize?{urlencode(params)}")
    finally:
        await browser.aclose()
    return {k: v[0] for k, v in parse_qs(urlsplit(back).query).items()}


async def test_a_grant_github_refuses_with_http_200_goes_back_as_access_denied() -> None:
    async for stack in start(secret="not-the-secret"):
        back = await authorize(stack, "octocat")
        assert back["error"] == "access_denied" and back["state"] == "s1" and "code" not in back
        assert stack.github.token_requests  # GitHub was asked, and said no


async def test_cancelling_at_github_goes_back_as_access_denied(stack: Stack) -> None:
    back = await authorize(stack, "octocat", cancel=True)
    assert back["error"] == "access_denied" and "code" not in back
    assert not stack.github.token_requests


async def test_the_stand_in_answers_form_encoded_without_accept_json(stack: Stack) -> None:
    # What the provider's Accept header avoids: GitHub's default token answer.
    async with httpx.AsyncClient() as http:
        resp = await http.post(f"{stack.github_url}/login/oauth/access_token",
                               data={"client_id": "Iv1.test", "client_secret": "gh-secret",
                                     "code": "nope"})  # fmt: skip
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/x-www-form-urlencoded")
    assert parse_qs(resp.text)["error"] == ["bad_verification_code"]


def test_the_preset_refuses_settings_that_cannot_work() -> None:
    provider = github(client_id="id", client_secret="secret")
    assert isinstance(provider, GitHubProvider) and provider.name == "GitHub"
    assert (provider.base_url, provider.api_url) == ("https://github.com",
                                                     "https://api.github.com")  # fmt: skip
    with pytest.raises(ConfigurationError):
        github(client_id="id", client_secret="")
    with pytest.raises(ConfigurationError):
        github(client_id="id", client_secret="s", base_url="http://ghe.example.com")


async def test_a_refresh_github_refuses_with_http_200_is_an_upstream_error(
    expiring: Stack,
) -> None:
    browser = FormBrowser(login="hubot")
    auth = OAuth(authorizer=browser)
    try:
        async with Client(url=expiring.mcp_url, auth=auth, timeout=10.0) as client:
            await client.call_tool("github_login", {})
    finally:
        await browser.aclose()
    ours = await auth.storage.load_tokens(expiring.mcp_url)
    assert ours is not None
    # What a tool's ctx.auth is: the AuthInfo the proxy's verifier made of mcpkit's token.
    info = await expiring.proxy.protected_resource().verify(ours.access_token)
    kept = await expiring.proxy.storage.load_upstream_tokens(info.claims["mcpkit_grant"])
    assert kept is not None
    await expiring.proxy.storage.save_upstream_tokens(replace(kept, access_expires_at=0))
    expiring.github.refresh_tokens.clear()  # revoked at GitHub: it answers bad_refresh_token
    with pytest.raises(UpstreamError, match="bad_refresh_token"):
        await info.upstream_token()
