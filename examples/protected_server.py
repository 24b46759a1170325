"""A protected MCP server: every HTTP request needs a bearer token (docs/auth.md).

Run it::

    python examples/protected_server.py
    # or: mcpkit run examples/protected_server.py --transport http

then call it with the development token::

    curl -s http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp
    curl -si -X POST http://127.0.0.1:8000/mcp -H 'content-type: application/json' \\
        -H 'accept: application/json, text/event-stream' \\
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":
        "2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}'
    # -> 401 with WWW-Authenticate: Bearer resource_metadata="...", scope="notes:read ..."
    # add -H 'authorization: Bearer dev-token' and it answers.

The token check here is a ``StaticTokenVerifier`` with a table of tokens, enough for
development; in production give ``verifier=`` a JWT or introspection verifier for
your authorization server (see "Token verifiers" in docs/auth.md). Environment:

``MCP_RESOURCE``      the public URL of the MCP endpoint (default http://127.0.0.1:8000/mcp);
                      behind a proxy, the URL clients use, not the local address
``MCP_AUTH_SERVER``   the authorization server's issuer URL
``MCP_DEV_TOKENS``    space-separated ``token=subject`` pairs (default ``dev-token=dev``)
"""

from __future__ import annotations

import os

from mcpkit import Context, MCPServer
from mcpkit.auth import ProtectedResource, StaticTokenVerifier

RESOURCE = os.environ.get("MCP_RESOURCE", "http://127.0.0.1:8000/mcp")
AUTH_SERVER = os.environ.get("MCP_AUTH_SERVER", "https://auth.example.com")
SCOPES = ["notes:read", "notes:write"]
DEV_TOKENS = dict(
    pair.split("=", 1) for pair in os.environ.get("MCP_DEV_TOKENS", "dev-token=dev").split()
)

# Development only: a fixed table of tokens (see "Token verifiers" in docs/auth.md for
# JWTVerifier and IntrospectionVerifier, which check tokens your authorization server issued).
verifier = StaticTokenVerifier(
    {token: {"subject": subject, "scopes": SCOPES} for token, subject in DEV_TOKENS.items()},
    default_client_id="dev",
)

server = MCPServer(
    name="protected-notes",
    version="1.0.0",
    auth=ProtectedResource(
        resource=RESOURCE,
        authorization_servers=[AUTH_SERVER],
        scopes_supported=SCOPES,
        resource_name="Protected notes (mcpkit example)",
        verifier=verifier,
    ),
)
notes: dict[str, list[str]] = {}


@server.tool(scopes=["notes:write"])  # a token without it gets 403 insufficient_scope
async def add_note(text: str, ctx: Context) -> str:
    """Keep a note for the caller (each subject has its own notes)."""
    who = _caller(ctx)
    mine = notes.setdefault(who, [])
    mine.append(text)
    return f"{len(mine)} note(s) for {who}"


@server.tool(scopes=["notes:read"])
async def my_notes(ctx: Context) -> list[str]:
    """The caller's notes."""
    return notes.get(_caller(ctx), [])


def _caller(ctx: Context) -> str:
    # Over HTTP the token's subject; over stdio (unauthenticated by the specification:
    # the local user started the server) there is no token, so one shared notebook.
    return (ctx.auth.subject or "?") if ctx.auth is not None else "local user"


if __name__ == "__main__":
    server.run_http()  # 127.0.0.1:8000/mcp, protected by server.auth
