"""Interop: the official MCP Python SDK client (``mcp`` from PyPI) completes OAuth against a
protected mcpkit server, with an authorization server nobody on this project wrote.

The authorization server is built from the SDK's own components (``create_auth_routes``
with a small in-memory provider that approves every request, as a user who clicks
"allow" would). The SDK client discovers everything from mcpkit's ``401``: the protected
resource metadata, the authorization server's metadata, dynamic client registration,
then authorization code + PKCE with the ``resource`` parameter. mcpkit checks the tokens
with an async verify function that asks the authorization server's token table, so the
audience check (RFC 8707) is visible in this file. Then a tool that needs a scope the
first token lacks: mcpkit's ``403 insufficient_scope`` makes the SDK step up and retry.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo, ProtectedResource
from tests.transports.conftest import TIMEOUT, run_app

SUBJECT = "sdk-user"


class ApprovingProvider:
    """An in-memory authorization server's state: clients, codes and tokens."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.authorized: list[AuthorizationParams] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        # This server's policy: a registered client may ask for every scope it offers
        # (the SDK's authorize endpoint refuses scopes outside the registration, and a
        # step-up does not register again).
        client_info.scope = "mcp:read mcp:write"
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        self.authorized.append(params)
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=SUBJECT,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        token = secrets.token_urlsafe(32)
        refresh = secrets.token_urlsafe(32)
        self.tokens[token] = AccessToken(
            token=token,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + 3600,
            resource=resource,
            subject=SUBJECT,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=SUBJECT
        )
        return OAuthToken(
            access_token=token, expires_in=3600, scope=" ".join(scopes), refresh_token=refresh
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "no identity assertions here")


class Late:
    """An ASGI app whose real app is set once its URL (its port) is known."""

    app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.app is None and scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await self.app(scope, receive, send)


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture
async def urls() -> AsyncIterator[tuple[str, ApprovingProvider, MCPServer]]:
    provider = ApprovingProvider()
    auth_server, mcp_app = Late(), Late()
    async with run_app(auth_server) as as_base, run_app(mcp_app) as mcp_base:
        # The issuer exactly as the authorization server spells it (pydantic adds the
        # trailing slash): clients compare issuers without normalising (RFC 8414 § 3.3).
        issuer = str(AnyHttpUrl(as_base))
        auth_server.app = Starlette(
            routes=create_auth_routes(
                provider,
                issuer_url=AnyHttpUrl(issuer),
                client_registration_options=ClientRegistrationOptions(
                    enabled=True, valid_scopes=["mcp:read", "mcp:write"]
                ),
            )
        )
        resource = f"{mcp_base}/mcp"

        async def verify(token: str, asked_for: str) -> AuthInfo | None:
            known = await provider.load_access_token(token)
            # RFC 8707: only tokens issued for this resource (no token passthrough).
            if known is None or known.resource != asked_for:
                return None
            return AuthInfo(
                token=token,
                subject=known.subject,
                client_id=known.client_id,
                issuer=issuer,
                scopes=frozenset(known.scopes),
                expires_at=known.expires_at,
                resource=known.resource,
            )

        server = MCPServer(
            name="protected-for-sdk",
            version="1.0.0",
            auth=ProtectedResource(
                resource=resource,
                authorization_servers=[issuer],
                scopes_supported=["mcp:read"],
                verifier=verify,
            ),
        )

        @server.tool
        async def whoami(ctx: Context) -> str:
            """The token's subject and scopes."""
            assert ctx.auth is not None
            return f"{ctx.auth.subject} {' '.join(sorted(ctx.auth.scopes))}"

        @server.tool(scopes=["mcp:write"])
        async def write(text: str) -> str:
            """Needs mcp:write: the first token does not have it."""
            return f"wrote {text}"

        mcp_app.app = server.http_app()
        yield resource, provider, server


async def test_the_sdk_client_authorizes_calls_and_steps_up(
    urls: tuple[str, ApprovingProvider, MCPServer],
) -> None:
    resource, provider, _ = urls
    pending: list[AuthorizationCodeResult] = []

    async def redirect_handler(authorization_url: str) -> None:
        # The "browser": the authorization server approves at once and redirects back.
        async with httpx.AsyncClient(timeout=TIMEOUT) as browser:
            answer = await browser.get(authorization_url)
        assert answer.status_code in (302, 303, 307), answer.text
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        pending.append(
            AuthorizationCodeResult(
                code=query["code"][0],
                state=query.get("state", [None])[0],
                iss=query.get("iss", [None])[0],
            )
        )

    async def callback_handler() -> AuthorizationCodeResult:
        return pending.pop()

    oauth = OAuthClientProvider(
        server_url=resource,
        client_metadata=OAuthClientMetadata(
            client_name="sdk-interop",
            redirect_uris=[AnyHttpUrl("http://127.0.0.1:9/callback")],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=MemoryStorage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with (
        httpx2.AsyncClient(auth=oauth, timeout=TIMEOUT) as http,
        streamable_http_client(resource, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        who = await session.call_tool("whoami", {})
        assert who.content[0].text == f"{SUBJECT} mcp:read"  # type: ignore[union-attr]
        first = provider.authorized[0]
        assert first.resource == resource  # RFC 8707 in the authorization request
        assert first.scopes == ["mcp:read"]  # the 401's scope (MCP scope selection)
        wrote = await session.call_tool("write", {"text": "hi"})
        assert wrote.content[0].text == "wrote hi"  # type: ignore[union-attr]
        # The 403 named mcp:read and mcp:write: the step-up asked for both.
        assert sorted(provider.authorized[-1].scopes or []) == ["mcp:read", "mcp:write"]
        who = await session.call_tool("whoami", {})
        assert who.content[0].text == f"{SUBJECT} mcp:read mcp:write"  # type: ignore[union-attr]
