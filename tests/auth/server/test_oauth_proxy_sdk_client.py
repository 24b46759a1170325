"""The official Python SDK's OAuth client (``mcp.client.auth.OAuthClientProvider``) against
mcpkit's authorization server, with oidc-provider (npm) as the upstream identity provider.

An independent implementation of the client side: discovery from the ``401``, RFC 8414
metadata, dynamic registration (``client_secret_post``), PKCE, ``resource`` and ``iss``,
with :class:`FormBrowser` doing the browser's part.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp.shared.auth import AuthorizationCodeResult

from mcpkit import Context, MCPServer
from mcpkit.auth.server import OAuthProxy, OIDCProvider
from tests.auth.server.browser import FormBrowser
from tests.auth.server.upstream import Upstream
from tests.client.http_servers import free_socket, serve
from tests.interop.fixtures.auth_peers import REDIRECT_URI, sdk_oauth_client


class SDKBrowser:
    """The SDK's ``redirect_handler``/``callback_handler`` pair over a :class:`FormBrowser`."""

    def __init__(self, browser: FormBrowser) -> None:
        self.browser = browser
        self.answer: dict[str, str] = {}

    async def open(self, url: str) -> None:
        back = await self.browser.authorize(url)
        self.answer = {k: v[0] for k, v in parse_qs(urlsplit(back).query).items()}

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=self.answer["code"], state=self.answer.get("state"), iss=self.answer.get("iss")
        )


@pytest.fixture
async def mcp_url(upstream: tuple[Upstream, int]) -> AsyncIterator[str]:
    up, port = upstream
    provider = OIDCProvider(
        issuer=up.issuer, client_id=up.client_id, client_secret=up.client_secret
    )
    proxy = OAuthProxy(upstream=provider, base_url=f"http://127.0.0.1:{port}")
    server = MCPServer(name="proxied", version="1", auth=proxy.protected_resource())

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who is calling."""
        auth = ctx.auth
        return f"{auth.subject} <{auth.claims.get('email')}>" if auth else "nobody"

    async with serve(server.http_app(), free_socket(port)) as url:
        yield url
    await provider.aclose()


async def test_the_official_sdk_client_signs_in_through_the_proxy(mcp_url: str) -> None:
    browser = FormBrowser(REDIRECT_URI, login="grace")
    sdk = SDKBrowser(browser)
    try:
        async with sdk_oauth_client(mcp_url, sdk) as session:  # type: ignore[arg-type]
            result = await session.call_tool("whoami", {})
    finally:
        await browser.aclose()
    assert result.content[0].text == "grace <grace@example.com>"  # type: ignore[union-attr]
    assert "sdk-oauth-client" in browser.pages[0].text  # the consent page named it
    assert sdk.answer["iss"] == mcp_url.removesuffix("/mcp")
