"""An authorization server whose issuer has a path (``http://host/tenant1``): its metadata at
``/.well-known/oauth-authorization-server/tenant1`` (RFC 8414 § 3.1), its endpoints under
``/tenant1``, the protected resource metadata naming it, and both mcpkit's OAuth client and
the official SDK's finding it from the ``401`` alone. The identity provider is the GitHub
stand-in (no Node.js needed), whose callback is under the prefix too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth.client import OAuth
from mcpkit.auth.server import OAuthProxy
from mcpkit.auth.server.presets import github
from mcpkit.client import Client
from tests.auth.server.browser import FormBrowser
from tests.auth.server.presets.github_server import API, FakeGitHub, User
from tests.auth.server.test_oauth_proxy_sdk_client import SDKBrowser
from tests.client.http_servers import free_socket, serve, unused_port
from tests.interop.fixtures.auth_peers import REDIRECT_URI, sdk_oauth_client

PREFIX = "/tenant1"


@dataclass
class Seen:
    """The ASGI app's requests, as (method, path, status)."""

    app: Any
    requests: list[tuple[str, str, int]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.requests.append((scope["method"], scope["path"], message["status"]))
            await send(message)

        await self.app(scope, receive, sending)

    def status(self, path: str) -> list[int]:
        return [status for _, p, status in self.requests if p == path]


@dataclass
class Tenant:
    base: str
    mcp_url: str
    proxy: OAuthProxy
    seen: Seen


@pytest.fixture
async def tenant() -> AsyncIterator[Tenant]:
    port = unused_port()
    base = f"http://127.0.0.1:{port}{PREFIX}"
    fake = FakeGitHub("Iv1.t", "s", f"{base}/auth/callback")
    fake.add(User(id=7, login="grace", public_email="grace@example.com"))
    async with serve(fake, path="") as github_url:
        provider = github(client_id="Iv1.t", client_secret="s", base_url=github_url,
                          api_url=github_url + API)  # fmt: skip
        proxy = OAuthProxy(upstream=provider, base_url=base)
        server = MCPServer(name="t1", version="1", auth=proxy.protected_resource())

        @server.tool
        def whoami(ctx: Context) -> str:
            """Who is calling."""
            auth = ctx.auth
            return f"{auth.subject} <{auth.claims.get('email')}>" if auth else "nobody"

        seen = Seen(server.http_app(path=f"{PREFIX}/mcp"))
        async with serve(seen, free_socket(port), path=f"{PREFIX}/mcp") as mcp_url:
            yield Tenant(base, mcp_url, proxy, seen)
        await provider.aclose()


async def test_metadata_endpoints_and_resource_metadata_carry_the_path(tenant: Tenant) -> None:
    origin = tenant.base.removesuffix(PREFIX)
    async with httpx.AsyncClient() as http:
        meta = (await http.get(f"{origin}/.well-known/oauth-authorization-server{PREFIX}")).json()
        prm = await http.get(f"{origin}/.well-known/oauth-protected-resource{PREFIX}/mcp")
        root = await http.get(f"{origin}/.well-known/oauth-authorization-server")
        jwks = await http.get(f"{tenant.base}/jwks")
        unprefixed = await http.post(f"{origin}/register", json={"redirect_uris": [REDIRECT_URI]})
        registered = await http.post(f"{tenant.base}/register",
                                     json={"redirect_uris": [REDIRECT_URI]})  # fmt: skip
    assert meta["issuer"] == tenant.base
    for name in ("authorization", "token", "registration", "revocation"):
        assert meta[f"{name}_endpoint"].startswith(f"{tenant.base}/")
    assert meta["jwks_uri"] == f"{tenant.base}/jwks" and jwks.json()["keys"]
    assert prm.json()["authorization_servers"] == [tenant.base]
    assert prm.json()["resource"] == tenant.mcp_url
    # The issuer is the tenant, not the host: the bare host's paths are the MCP app's
    # (behind its token check), not the authorization server's.
    assert root.status_code == unprefixed.status_code == 401
    assert registered.status_code == 201


async def test_mcpkit_s_client_discovers_the_tenant_and_signs_in(tenant: Tenant) -> None:
    browser = FormBrowser(login="grace")
    try:
        async with Client(url=tenant.mcp_url, auth=OAuth(authorizer=browser), timeout=10.0) as c:
            result = await c.call_tool("whoami", {})
    finally:
        await browser.aclose()
    assert result["content"][0]["text"] == "7 <grace@example.com>"
    seen = tenant.seen
    assert 200 in seen.status(f"/.well-known/oauth-authorization-server{PREFIX}")
    assert seen.status(f"{PREFIX}/register") == [201]
    assert seen.status(f"{PREFIX}/token") == [200]
    assert seen.status(f"{PREFIX}/auth/callback") == [302]


async def test_the_official_sdk_client_discovers_the_tenant_and_signs_in(tenant: Tenant) -> None:
    browser = FormBrowser(REDIRECT_URI, login="grace")
    sdk = SDKBrowser(browser)
    try:
        async with sdk_oauth_client(tenant.mcp_url, sdk) as session:  # type: ignore[arg-type]
            result = await session.call_tool("whoami", {})
    finally:
        await browser.aclose()
    assert result.content[0].text == "7 <grace@example.com>"  # type: ignore[union-attr]
    assert sdk.answer["iss"] == tenant.base
    assert 200 in tenant.seen.status(f"/.well-known/oauth-authorization-server{PREFIX}")
    assert tenant.seen.status(f"{PREFIX}/token") == [200]
