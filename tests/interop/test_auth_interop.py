"""Authorization interop: OAuth flows between mcpkit and peers nobody on this project wrote.

The authorization server is the official MCP Python SDK's (``mcp.server.auth`` routes and
handlers: metadata, authorize, token with PKCE, dynamic registration), on an in-memory
provider written here, plus an RFC 7662 introspection endpoint
(``tests/interop/fixtures/auth_peers.py``). Everything runs on uvicorn on free
127.0.0.1 ports; the authorization step is done without a browser, by reading the
authorization server's redirect.

* the SDK's OAuth client against the SDK's protected server: proves the peers themselves;
* the SDK's OAuth client against a protected mcpkit server whose verifier asks that
  authorization server's introspection endpoint;
* mcpkit's OAuth client against a protected SDK server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from tests.client.http_servers import free_socket, serve
from tests.interop.fixtures.auth_peers import (
    SCOPES,
    USER,
    HeadlessBrowser,
    MemoryProvider,
    SDKIntrospectionVerifier,
    authorization_server_app,
    sdk_oauth_client,
    sdk_protected_server,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TIMEOUT = 60.0


@dataclass
class AuthServer:
    issuer: str
    provider: MemoryProvider

    @property
    def introspection_url(self) -> str:
        return self.issuer + "/introspect"


@contextlib.asynccontextmanager
async def running_authorization_server() -> AsyncIterator[AuthServer]:
    sock = free_socket()
    issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = MemoryProvider(issuer=issuer)
    async with serve(authorization_server_app(provider), sock, path=""):
        yield AuthServer(issuer, provider)


@contextlib.asynccontextmanager
async def running_sdk_server(
    auth_server: AuthServer, required_scopes: list[str] | None = None
) -> AsyncIterator[tuple[str, SDKIntrospectionVerifier]]:
    sock = free_socket()
    resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    verifier = SDKIntrospectionVerifier(auth_server.introspection_url, resource)
    app = sdk_protected_server(
        resource=resource,
        issuer=auth_server.issuer,
        verifier=verifier,
        required_scopes=required_scopes or ["mcp:read"],
    )
    async with serve(app, sock) as server_url:
        yield server_url, verifier


async def test_sdk_client_completes_the_flow_against_the_sdk_server() -> None:
    """The peers agree with each other: the baseline the mcpkit tests build on."""
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server() as auth_server:
            async with running_sdk_server(auth_server) as (server_url, verifier):
                async with httpx.AsyncClient() as http:
                    refused = await http.post(server_url, json={})
                assert refused.status_code == 401
                browser = HeadlessBrowser()
                async with sdk_oauth_client(server_url, browser) as session:
                    tools = await session.list_tools()
                    assert {"add", "whoami"} <= {t.name for t in tools.tools}
                    result = await session.call_tool("add", {"a": 2, "b": 40})
                    assert result.content[0].text == "42"  # type: ignore[union-attr]
                    who = await session.call_tool("whoami", {})
                    assert who.content[0].text.startswith(f"{USER} via ")  # type: ignore[union-attr]
        provider = auth_server.provider
        assert len(provider.authorizations) == 1
        assert provider.authorizations[0].resource == server_url
        assert set(provider.authorizations[0].scopes or []) <= set(SCOPES)
        assert browser.last["iss"] == auth_server.issuer
        token = provider.issued[0].token
        assert token in verifier.checked and token in provider.introspections
