"""A protected MCP server and its authorization server, both on real sockets, for one test."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from mcpkit.auth.client import HeadlessAuthorizer, OAuth
from mcpkit.client import Client
from mcpkit.server.server import MCPServer
from tests.auth.client.servers import AuthServer, ProtectedMCP, TokenTable
from tests.client.http_servers import free_socket, serve

REDIRECT = "http://127.0.0.1:1/callback"  # never requested: HeadlessAuthorizer stops at it


def mcp_server() -> MCPServer:
    server = MCPServer(name="protected", version="1")

    @server.tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool
    def write(text: str) -> str:
        """Needs mcp:write (the protected wrapper says so)."""
        return f"wrote {text}"

    return server


@dataclass
class World:
    url: str  # the MCP endpoint
    auth_server: AuthServer
    resource: ProtectedMCP
    table: TokenTable

    def oauth(self, **options: Any) -> OAuth:
        options.setdefault("authorizer", HeadlessAuthorizer(REDIRECT))
        return OAuth(**options)

    def client(self, auth: OAuth) -> Client:
        return Client(url=self.url, auth=auth, timeout=10.0, http_transport="streamable-http")


@contextlib.asynccontextmanager
async def world(
    *,
    legacy: bool = False,
    as_options: dict[str, Any] | None = None,
    wrap: Callable[[str, Any], Any] | None = None,
    **rs_options: Any,
) -> AsyncIterator[World]:
    """``legacy``: a 2025-03-26 server (no resource metadata; the authorization server is
    served at the MCP server's origin). ``wrap(role, app)`` (role ``"as"`` or ``"rs"``)
    returns the app to serve in place of that peer (a misbehaving endpoint in front)."""
    wrap = wrap or (lambda role, app: app)
    table = TokenTable()
    rs_sock = free_socket()
    rs_base = f"http://127.0.0.1:{rs_sock.getsockname()[1]}"
    if legacy:
        auth_server = AuthServer(base=rs_base, table=table, **(as_options or {}))
        resource = ProtectedMCP(
            app=mcp_server().http_app(),
            base=rs_base,
            table=table,
            issuers=lambda: [auth_server.issuer],
            prm_at=None,
            fallback=auth_server,
            **rs_options,
        )
        async with serve(wrap("rs", resource), rs_sock) as url:
            yield World(url, auth_server, resource, table)
        return
    as_sock = free_socket()
    as_base = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
    auth_server = AuthServer(base=as_base, table=table, **(as_options or {}))
    resource = ProtectedMCP(
        app=mcp_server().http_app(),
        base=rs_base,
        table=table,
        issuers=lambda: [auth_server.issuer],
        **rs_options,
    )
    async with (
        serve(wrap("as", auth_server), as_sock, path=""),
        serve(wrap("rs", resource), rs_sock) as url,
    ):
        yield World(url, auth_server, resource, table)
