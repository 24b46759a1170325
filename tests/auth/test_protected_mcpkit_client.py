"""Both halves together: mcpkit's OAuth client against a server protected by mcpkit's
``ProtectedResource``, with the test authorization server of the client tests, all on
real sockets. Discovery starts from the server's own 401; a scoped tool's 403 makes the
client step up; Streamable HTTP and legacy SSE."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Literal

import pytest

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo, ProtectedResource
from mcpkit.auth.client import HeadlessAuthorizer, OAuth
from mcpkit.client import Client
from tests.auth.client.servers import AuthServer, TokenTable
from tests.client.http_servers import free_socket, serve

REDIRECT = "http://127.0.0.1:1/callback"


@contextlib.asynccontextmanager
async def protected_world(transport: str) -> AsyncIterator[tuple[str, AuthServer, list[str]]]:
    table = TokenTable()
    as_sock, rs_sock = free_socket(), free_socket()
    as_base = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
    rs_base = f"http://127.0.0.1:{rs_sock.getsockname()[1]}"
    path = "/mcp" if transport == "streamable-http" else "/sse"
    resource = rs_base + path
    auth_server = AuthServer(base=as_base, table=table)

    async def verify(token: str, asked_for: str) -> AuthInfo | None:
        issued = table.access.get(token)
        if issued is None or issued.resource != asked_for:  # RFC 8707: ours only
            return None
        return AuthInfo(
            token=token,
            client_id=issued.client_id,
            issuer=issued.issuer,
            subject="user-" + issued.client_id,
            scopes=frozenset(issued.scopes),
            resource=issued.resource,
        )

    ran: list[str] = []
    server = MCPServer(
        name="both-halves",
        version="1.0.0",
        auth=ProtectedResource(
            resource=resource,
            authorization_servers=[auth_server.issuer],
            scopes_supported=["mcp:read"],
            verifier=verify,
        ),
    )

    @server.tool
    async def whoami(ctx: Context) -> str:
        """The token's scopes."""
        assert ctx.auth is not None
        ran.append("whoami")
        return " ".join(sorted(ctx.auth.scopes))

    @server.tool(scopes=["mcp:write"])
    async def write(text: str) -> str:
        """Needs mcp:write."""
        ran.append("write")
        return f"wrote {text}"

    app = server.http_app() if transport == "streamable-http" else server.sse_app()
    async with serve(auth_server, as_sock, path=""), serve(app, rs_sock, path=path) as url:
        yield url, auth_server, ran


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_mcpkit_client_authorizes_and_steps_up_against_a_protected_resource(
    transport: Literal["streamable-http", "sse"],
) -> None:
    async with protected_world(transport) as (url, auth_server, ran):
        auth = OAuth(authorizer=HeadlessAuthorizer(REDIRECT))
        async with Client(url=url, auth=auth, timeout=10.0, http_transport=transport) as client:
            first = await client.call_tool("whoami", {})
            assert first["content"][0]["text"] == "mcp:read"
            wrote = await client.call_tool("write", {"text": "hi"})
            assert wrote["content"][0]["text"] == "wrote hi"
            after = await client.call_tool("whoami", {})
            assert after["content"][0]["text"] == "mcp:read mcp:write"
        # One authorization from the 401, one step-up from the 403; the refused call
        # never ran (ran lists each tool run).
        # The first asks for the 401's scope, the step-up for the 403's (granted plus
        # needed), both for this resource (RFC 8707).
        resource = url
        assert [(a.get("scope"), a.get("resource")) for a in auth_server.authorizations] == [
            ("mcp:read", resource),
            ("mcp:read mcp:write", resource),
        ]
        assert ran == ["whoami", "write", "whoami"]
