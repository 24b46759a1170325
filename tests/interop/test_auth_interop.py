"""Authorization interop: OAuth flows between mcpkit and peers nobody on this project wrote.

The authorization server is the official MCP Python SDK's (``mcp.server.auth`` routes and
handlers: metadata, authorize, token with PKCE, dynamic registration), on an in-memory
provider written here, plus an RFC 7662 introspection endpoint
(``tests/interop/fixtures/auth_peers.py``). Everything runs on uvicorn on free
127.0.0.1 ports; the authorization step is done without a browser, by reading the
authorization server's redirect.

* the SDK's OAuth client against the SDK's protected server: proves the peers themselves;
* the SDK's OAuth client against a protected mcpkit server (``ProtectedResource`` with an
  ``IntrospectionVerifier`` asking that authorization server): the flow, step-up on
  mcpkit's 403, refresh, and a token for another resource refused;
* mcpkit's OAuth client (``Client(url, auth=OAuth(...))``) against the SDK's protected
  server: the flow with pre-registered clients, refresh after a 401, step-up on the
  SDK's 403.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth import IntrospectionVerifier, ProtectedResource, parse_www_authenticate
from mcpkit.auth.client import MemoryTokenStorage, OAuth
from mcpkit.client import Client
from tests.client.http_servers import free_socket, serve
from tests.interop.fixtures.auth_peers import (
    REDIRECT_URI,
    RS_CLIENT_ID,
    RS_CLIENT_SECRET,
    SCOPES,
    USER,
    HeadlessBrowser,
    MemoryProvider,
    SDKIntrospectionVerifier,
    SDKTokenStorage,
    authorization_server_app,
    sdk_oauth_client,
    sdk_oauth_modern_client,
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
async def running_authorization_server(**options: Any) -> AsyncIterator[AuthServer]:
    sock = free_socket()
    issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = MemoryProvider(issuer=issuer, **options)
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


# -- the SDK's OAuth client against a protected mcpkit server -----------------------------------


def mcpkit_server(resource: str, auth_server: AuthServer) -> MCPServer:
    """A protected mcpkit server whose ``IntrospectionVerifier`` asks the SDK-built
    authorization server about each token (as the resource server client it registered),
    accepting only tokens issued by it for this server."""
    verifier = IntrospectionVerifier(
        endpoint=auth_server.introspection_url,
        client_id=RS_CLIENT_ID,
        client_secret=RS_CLIENT_SECRET,
        audience=resource,
        issuer=auth_server.issuer,
    )
    server = MCPServer(
        name="mcpkit-protected",
        version="1.0.0",
        auth=ProtectedResource(
            resource=resource,
            authorization_servers=[auth_server.issuer],
            scopes_supported=list(SCOPES),
            resource_name="mcpkit behind an SDK-built authorization server",
            verifier=verifier,
        ),
    )
    notes: list[str] = []
    server.notes = notes  # type: ignore[attr-defined]

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    async def whoami(ctx: Context) -> str:
        """Who the verified token speaks for."""
        assert ctx.auth is not None
        return (
            f"{ctx.auth.subject} via {ctx.auth.client_id} with {' '.join(sorted(ctx.auth.scopes))}"
        )

    @server.tool(scopes=["mcp:write"])
    async def write_note(text: str) -> str:
        """Needs mcp:write."""
        notes.append(text)
        return f"noted {text}"

    return server


@contextlib.asynccontextmanager
async def running_mcpkit_server(auth_server: AuthServer) -> AsyncIterator[tuple[str, MCPServer]]:
    sock = free_socket()
    resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    server = mcpkit_server(resource, auth_server)
    async with serve(server.http_app(), sock) as server_url:
        yield server_url, server


async def test_sdk_client_completes_the_flow_against_a_protected_mcpkit_server() -> None:
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server() as auth_server:
            async with running_mcpkit_server(auth_server) as (server_url, server):
                browser = HeadlessBrowser()
                async with sdk_oauth_client(server_url, browser) as session:
                    tools = await session.list_tools()
                    assert {"add", "whoami", "write_note"} <= {t.name for t in tools.tools}
                    added = await session.call_tool("add", {"a": 19, "b": 23})
                    assert not added.is_error
                    assert added.content[0].text == "42"  # type: ignore[union-attr]
                    who = await session.call_tool("whoami", {})
                    wrote = await session.call_tool("write_note", {"text": "hi"})
                    assert wrote.content[0].text == "noted hi"  # type: ignore[union-attr]
        provider = auth_server.provider
        # The SDK client registered itself at the SDK's registration endpoint, then went
        # through the authorize endpoint once, asking for this server as the resource.
        [client_id] = provider.clients
        [authorization] = provider.authorizations
        assert authorization.resource == server_url
        assert sorted(authorization.scopes or []) == sorted(SCOPES)  # the 401's scope
        [token] = provider.issued
        assert token.resource == server_url
        # mcpkit's verifier asked the authorization server, and handed the tool what it said.
        assert token.token in provider.introspections
        assert who.content[0].text == f"{USER} via {client_id} with mcp:read mcp:write"  # type: ignore[union-attr]
        assert server.notes == ["hi"]  # type: ignore[attr-defined]


async def test_sdk_client_in_2026_mode_completes_the_flow_against_a_protected_mcpkit_server() -> (
    None
):
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server() as auth_server:
            async with running_mcpkit_server(auth_server) as (server_url, server):
                async with sdk_oauth_modern_client(server_url, HeadlessBrowser()) as client:
                    assert client.protocol_version == "2026-07-28"
                    who = await client.call_tool("whoami", {})
                    wrote = await client.call_tool("write_note", {"text": "modern"})
                    assert wrote.content[0].text == "noted modern"  # type: ignore[union-attr]
        [client_id] = auth_server.provider.clients
        [authorization] = auth_server.provider.authorizations
        assert authorization.resource == server_url
        assert who.content[0].text == f"{USER} via {client_id} with mcp:read mcp:write"  # type: ignore[union-attr]
        assert server.notes == ["modern"]  # type: ignore[attr-defined]


async def test_sdk_client_steps_up_when_mcpkit_answers_insufficient_scope() -> None:
    """The user grants only mcp:read at first; the scoped tool's 403 makes the SDK client
    authorize again for mcp:write, and the retried call runs."""
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server(first_consent=["mcp:read"]) as auth_server:
            async with running_mcpkit_server(auth_server) as (server_url, server):
                async with sdk_oauth_client(server_url, HeadlessBrowser()) as session:
                    listed = {t.name for t in (await session.list_tools()).tools}
                    # mcpkit hides what the read-only token cannot call (docs/auth.md).
                    assert "add" in listed and "write_note" not in listed
                    wrote = await session.call_tool("write_note", {"text": "after step-up"})
                    assert wrote.content[0].text == "noted after step-up"  # type: ignore[union-attr]
        provider = auth_server.provider
        assert [sorted(t.scopes) for t in provider.issued] == [
            ["mcp:read"],
            ["mcp:read", "mcp:write"],
        ]
        assert len(provider.authorizations) == 2
        assert server.notes == ["after step-up"]  # type: ignore[attr-defined]


async def test_sdk_client_refreshes_its_token_and_mcpkit_accepts_the_new_one() -> None:
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server(access_ttl=2) as auth_server:
            async with running_mcpkit_server(auth_server) as (server_url, _):
                storage = SDKTokenStorage()
                async with sdk_oauth_client(server_url, HeadlessBrowser(), storage) as session:
                    await session.call_tool("add", {"a": 1, "b": 1})
                    await asyncio.sleep(2.2)  # the SDK client refreshes an expired token first
                    again = await session.call_tool("add", {"a": 2, "b": 2})
                    assert again.content[0].text == "4"  # type: ignore[union-attr]
        provider = auth_server.provider
        assert len(provider.authorizations) == 1  # no second trip to the authorize endpoint
        first, second = provider.issued  # the second from the SDK's refresh_token grant
        assert storage.tokens is not None and storage.tokens.access_token == second.token
        assert second.token in provider.introspections  # mcpkit checked the new token
        assert first.token in provider.introspections and first.token != second.token


async def test_mcpkit_refuses_a_token_the_sdk_authorization_server_issued_for_another_resource() -> (
    None
):
    """No token passthrough (MCP authorization § token audience binding): the SDK client's
    token for the SDK server is active at the authorization server, but its audience is
    that server, so mcpkit answers 401 ``invalid_token``."""
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server() as auth_server:
            async with running_sdk_server(auth_server) as (sdk_url, _):
                async with sdk_oauth_client(sdk_url, HeadlessBrowser()) as session:
                    await session.call_tool("add", {"a": 1, "b": 1})
            [token] = auth_server.provider.issued
            assert token.resource == sdk_url
            async with running_mcpkit_server(auth_server) as (server_url, _):
                initialize = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "replay", "version": "0"},
                    },
                }
                async with httpx.AsyncClient(timeout=10.0) as http:
                    asked_before = auth_server.provider.introspections.count(token.token)
                    refused = await http.post(
                        server_url,
                        json=initialize,
                        headers={
                            "authorization": f"Bearer {token.token}",
                            "accept": "application/json, text/event-stream",
                        },
                    )
        assert refused.status_code == 401
        challenge = parse_www_authenticate(refused.headers["www-authenticate"])
        assert challenge is not None and challenge["error"] == "invalid_token"
        assert challenge["resource_metadata"].startswith(server_url.removesuffix("/mcp"))
        assert token.token not in refused.text
        # mcpkit did ask the authorization server, which said "active": the audience refused it.
        assert auth_server.provider.introspections.count(token.token) == asked_before + 1


# -- mcpkit's OAuth client against a protected SDK server ----------------------------------------


@dataclass
class BrowserAuthorizer:
    """mcpkit's ``Authorizer`` contract on the test's headless user agent."""

    browser: HeadlessBrowser
    redirect_uri: str = REDIRECT_URI

    async def authorize(self, url: str) -> str:
        return await self.browser.follow(url)


PUBLIC_CLIENT = "mcpkit-preregistered"
CONFIDENTIAL_CLIENT = "mcpkit-confidential"
CONFIDENTIAL_SECRET = "s3cret-for-the-test"

# How mcpkit's client is known to the SDK-built authorization server: (provider setup,
# OAuth keyword arguments).
REGISTRATIONS: dict[str, Any] = {
    "preregistered-public": (
        lambda p: p.preregister(PUBLIC_CLIENT),
        {"client_id": PUBLIC_CLIENT},
    ),
    "preregistered-client-secret-post": (
        lambda p: p.preregister(
            CONFIDENTIAL_CLIENT, secret=CONFIDENTIAL_SECRET, auth_method="client_secret_post"
        ),
        {
            "client_id": CONFIDENTIAL_CLIENT,
            "client_secret": CONFIDENTIAL_SECRET,
            "token_endpoint_auth_method": "client_secret_post",
        },
    ),
    # Dynamic registration (the default with no credentials) registers for
    # client_secret_basic with this server, so these two send the id in the Basic header;
    # the SDK-built server also wants it in the body.
    "dynamic": (lambda p: None, {}),
    "preregistered-client-secret-basic": (
        lambda p: p.preregister(CONFIDENTIAL_CLIENT, secret=CONFIDENTIAL_SECRET),
        {"client_id": CONFIDENTIAL_CLIENT, "client_secret": CONFIDENTIAL_SECRET},
    ),
}


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("registration", list(REGISTRATIONS))
async def test_mcpkit_client_completes_the_flow_against_the_sdk_server(
    registration: str, era: str
) -> None:
    """The SDK server speaks both eras: the client's default finds 2026-07-28 by
    ``server/discover``; pinned to 2025-11-25 it does the handshake. Either way every
    request carries the token."""
    setup, options = REGISTRATIONS[registration]
    pinned = {} if era == "2026-07-28" else {"protocol_version": era}
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server() as auth_server:
            setup(auth_server.provider)
            known_before = set(auth_server.provider.clients)
            async with running_sdk_server(auth_server) as (server_url, verifier):
                browser = HeadlessBrowser()
                storage = MemoryTokenStorage()

                def oauth() -> OAuth:
                    return OAuth(authorizer=BrowserAuthorizer(browser), storage=storage, **options)

                async with Client(url=server_url, auth=oauth(), timeout=20.0, **pinned) as client:
                    assert client.protocol_version == era
                    tools = await client.list_tools()
                    assert {"add", "whoami"} <= {t["name"] for t in tools}
                    added = await client.call_tool("add", {"a": 19, "b": 23})
                    assert added["content"][0]["text"] == "42"
                    who = await client.call_tool("whoami", {})
                # A second client with the same storage needs no authorization.
                async with Client(url=server_url, auth=oauth(), timeout=20.0) as client:
                    again = await client.call_tool("add", {"a": 1, "b": 2})
                    assert again["content"][0]["text"] == "3"
        provider = auth_server.provider
        [client_id] = provider.clients
        if known_before:
            assert set(provider.clients) == known_before  # nothing registered dynamically
        [authorization] = provider.authorizations
        assert authorization.resource == server_url  # RFC 8707
        assert sorted(authorization.scopes or []) == ["mcp:read"]  # the SDK's 401 scope
        assert browser.last["iss"] == auth_server.issuer
        [token] = provider.issued
        assert token.client_id == client_id
        assert token.token in verifier.checked
        assert who["content"][0]["text"] == f"{USER} via {client_id} with mcp:read"


async def test_mcpkit_client_refreshes_a_token_the_sdk_server_refuses() -> None:
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server() as auth_server:
            auth_server.provider.preregister(PUBLIC_CLIENT)
            async with running_sdk_server(auth_server) as (server_url, _):
                browser = HeadlessBrowser()
                auth = OAuth(authorizer=BrowserAuthorizer(browser), client_id=PUBLIC_CLIENT)
                async with Client(url=server_url, auth=auth, timeout=20.0) as client:
                    await client.call_tool("add", {"a": 1, "b": 1})
                    auth_server.provider.expire_access_tokens()
                    again = await client.call_tool("add", {"a": 2, "b": 2})
                    assert again["content"][0]["text"] == "4"
        provider = auth_server.provider
        assert len(provider.authorizations) == 1  # the 401 was answered by a refresh
        assert len(provider.issued) == 2  # the SDK token endpoint's refresh_token grant


async def test_mcpkit_client_steps_up_on_the_sdk_servers_insufficient_scope() -> None:
    """The SDK server needs mcp:read and mcp:write; the user grants only mcp:read at first.
    The SDK's 403 ``insufficient_scope`` (a challenge without a ``scope`` parameter) makes
    mcpkit's client authorize again for what it asked before, and the request goes through."""
    async with asyncio.timeout(TIMEOUT):
        async with running_authorization_server(first_consent=["mcp:read"]) as auth_server:
            auth_server.provider.preregister(PUBLIC_CLIENT)
            async with running_sdk_server(auth_server, list(SCOPES)) as (server_url, _):
                auth = OAuth(
                    authorizer=BrowserAuthorizer(HeadlessBrowser()), client_id=PUBLIC_CLIENT
                )
                async with Client(url=server_url, auth=auth, timeout=20.0) as client:
                    who = await client.call_tool("whoami", {})
        provider = auth_server.provider
        assert [sorted(a.scopes or []) for a in provider.authorizations] == [list(SCOPES)] * 2
        assert [sorted(t.scopes) for t in provider.issued] == [["mcp:read"], list(SCOPES)]
        assert who["content"][0]["text"] == f"{USER} via {PUBLIC_CLIENT} with mcp:read mcp:write"
