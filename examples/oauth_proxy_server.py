"""An MCP server whose users sign in with your OpenID Connect provider (docs/auth.md).

mcpkit is the MCP authorization server here (an OAuth proxy): MCP clients register with
it dynamically, users approve the client on its consent page and sign in at your
identity provider, and the tools see who they are. Register one confidential client at
the provider with the redirect URI ``{MCPKIT_PUBLIC_URL}/auth/callback``, then::

    MCPKIT_OIDC_ISSUER=https://login.example.com \\
    MCPKIT_OIDC_CLIENT_ID=... MCPKIT_OIDC_CLIENT_SECRET=... \\
    MCPKIT_PUBLIC_URL=http://127.0.0.1:8000 \\
    mcpkit run examples/oauth_proxy_server.py -t http --port 8000

and point an MCP client at ``{MCPKIT_PUBLIC_URL}/mcp``. Environment:

``MCPKIT_OIDC_ISSUER``         the provider's issuer (its ``/.well-known/openid-configuration``
                               is read at the first sign-in)
``MCPKIT_OIDC_CLIENT_ID``      mcpkit's client id at the provider
``MCPKIT_OIDC_CLIENT_SECRET``  and its secret
``MCPKIT_PUBLIC_URL``          this server's public base URL (default http://127.0.0.1:8000);
                               behind a proxy, the URL browsers and clients use
``MCPKIT_SIGNING_KEY``         optional: a private JWK (JSON) or PEM key that signs the access
                               tokens; without it a key is generated at start-up, and the
                               tokens die with the process
"""

from __future__ import annotations

import json
import os

from mcpkit import Context, MCPServer
from mcpkit.auth.server import OAuthProxy, OIDCProvider
from mcpkit.errors import ConfigurationError


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ConfigurationError(
            f"set {name} (see the docstring of examples/oauth_proxy_server.py)"
        )
    return value


def _signing_key() -> object:
    raw = os.environ.get("MCPKIT_SIGNING_KEY")
    if not raw:
        return None
    return json.loads(raw) if raw.lstrip().startswith("{") else raw


proxy = OAuthProxy(
    upstream=OIDCProvider(
        issuer=_env("MCPKIT_OIDC_ISSUER"),
        client_id=_env("MCPKIT_OIDC_CLIENT_ID"),
        client_secret=_env("MCPKIT_OIDC_CLIENT_SECRET"),
    ),
    base_url=os.environ.get("MCPKIT_PUBLIC_URL", "http://127.0.0.1:8000"),
    signing_key=_signing_key(),
    scopes_supported=["notes"],
)

server = MCPServer(
    name="oidc-notes",
    version="1.0.0",
    auth=proxy.protected_resource(resource_name="Notes (mcpkit OAuth proxy example)"),
)
notes: dict[str, list[str]] = {}


@server.tool
def whoami(ctx: Context) -> dict[str, str | None]:
    """Who signed in, as the identity provider says."""
    auth = ctx.auth
    if auth is None:
        return {"subject": None, "email": None}
    return {"subject": auth.subject, "email": auth.claims.get("email")}


@server.tool
def add_note(text: str, ctx: Context) -> int:
    """Add a note to the caller's own list; returns how many they have."""
    owner = ctx.auth.subject if ctx.auth is not None else "anonymous"
    mine = notes.setdefault(owner or "anonymous", [])
    mine.append(text)
    return len(mine)


if __name__ == "__main__":
    server.run_http(port=int(os.environ.get("PORT", "8000")))
