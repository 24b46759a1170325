"""The server of the visibility tests across nodes: tools hidden by tag, per caller.

Loadable as ``tests/cluster/visibility_app.py:server`` by the cluster fixture
(``@pytest.mark.cluster(target=...)``). Its tokens (:data:`TOKENS`) name two
principals, so that a 2026-07-28 caller, which has no session, has rules of its own.
"""

from __future__ import annotations

import os

from mcpkit import Context, MCPServer
from mcpkit.auth import ProtectedResource, StaticTokenVerifier

#: Bearer token -> subject.
TOKENS = {"alice-token": "alice", "bob-token": "bob"}

server = MCPServer(
    name="visibility-node",
    version="1.0.0",
    auth=ProtectedResource(
        resource="http://127.0.0.1/mcp",
        authorization_servers=["https://auth.example.com"],
        verifier=StaticTokenVerifier({t: {"subject": s} for t, s in TOKENS.items()}),
    ),
)


@server.tool(tags={"admin"})
def purge() -> str:
    """Remove everything (tagged admin)."""
    return "purged"


@server.tool
def whoami() -> int:
    """The process id of the node serving this request."""
    return os.getpid()


@server.tool
async def hide_admin(ctx: Context) -> str:
    """Hide the admin tools from this caller (its session, or its principal)."""
    await ctx.disable_components(tags={"admin"})
    return "hidden"


@server.tool
async def reset(ctx: Context) -> str:
    """Forget this caller's own rules."""
    await ctx.reset_visibility()
    return "reset"
