"""What the protected-server tests share: a verify function with a token table, a server
whose tools report what they see of the caller, and raw HTTP helpers.

The verify function is the contract's async ``(token, resource) -> AuthInfo | None``
(the verifier classes are tested on their own); it refuses tokens asked about for
another resource, so the tests also show that the protected resource passes its own
identifier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import orjson

from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo, ProtectedResource
from mcpkit.errors import VerifierUnavailable
from mcpkit.server.middleware import CallNext, MiddlewareContext
from tests import schema
from tests.transports.conftest import BOTH, HTTPClient

RESOURCE = "https://mcp.example.com/mcp"
METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
ISSUER = "https://auth.example.com"
SCOPES = ("mcp:read", "mcp:write")

# token -> (subject, scopes)
TOKENS: dict[str, tuple[str, frozenset[str]]] = {
    "alice-rw": ("alice", frozenset({"mcp:read", "mcp:write"})),
    "alice-rw-2": ("alice", frozenset({"mcp:read", "mcp:write"})),  # a refreshed token
    "alice-r": ("alice", frozenset({"mcp:read"})),
    "bob-rw": ("bob", frozenset({"mcp:read", "mcp:write"})),
    "nobody": ("carol", frozenset()),
}
DOWN = "verifier-down"  # the verifier cannot be reached for this one


def verify_for(resource: str) -> Any:
    async def verify(token: str, asked_for: str) -> AuthInfo | None:
        if token == DOWN:
            raise VerifierUnavailable("introspection endpoint timed out")
        if asked_for != resource or token not in TOKENS:
            return None
        subject, scopes = TOKENS[token]
        return AuthInfo(
            token=token,
            subject=subject,
            client_id="test-client",
            issuer=ISSUER,
            scopes=scopes,
            resource=resource,
            claims={"sub": subject, "scope": " ".join(sorted(scopes))},
        )

    return verify


def protected(resource: str = RESOURCE, **options: Any) -> ProtectedResource:
    kw: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": [ISSUER],
        "scopes_supported": list(SCOPES),
        "resource_name": "Protected test server",
        "verifier": verify_for(resource),
    }
    kw.update(options)
    return ProtectedResource(**kw)


def scoped_server(**options: Any) -> Any:  # an MCPServer with .ran and .seen_by_middleware
    server = MCPServer(name="protected-demo", version="1.0.0", **options)
    ran: list[str] = []  # every tool run, so a test can show nothing ran
    seen_by_middleware: list[Any] = []
    server.ran = ran  # type: ignore[attr-defined]
    server.seen_by_middleware = seen_by_middleware  # type: ignore[attr-defined]

    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "tools/call":
            seen_by_middleware.append((ctx.auth, ctx.auth_info))
        return await call_next(ctx)

    server.add_middleware(record)

    @server.tool
    async def whoami(ctx: Context) -> dict[str, Any]:
        """Say who the token speaks for."""
        ran.append("whoami")
        auth = ctx.auth
        assert auth is not None
        return {
            "subject": auth.subject,
            "client_id": auth.client_id,
            "scopes": sorted(auth.scopes),
            "same_everywhere": ctx.extra.auth_info is auth and ctx.auth_info is auth,
            "token_seen": auth.token,
        }

    @server.tool(scopes=["mcp:write"])
    async def write_note(text: str) -> str:
        """Needs mcp:write."""
        ran.append(f"write_note {text}")
        return f"noted {text}"

    @server.tool
    async def ask(ctx: Context) -> str:
        """Elicit a name (an input round on 2026-07-28)."""
        ran.append("ask")
        answer = await ctx.elicit(
            "Name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        )
        return f"hello {(answer.content or {}).get('name')}"

    return server


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def client_with(http: httpx.AsyncClient, url: str, token: str) -> HTTPClient:
    """The raw test client, sending ``token`` on every request."""
    client = HTTPClient(http, url)
    plain = client.headers

    def headers(accept: str = BOTH, **extra: str) -> dict[str, str]:
        return {**plain(accept, **extra), **bearer(token)}

    client.headers = headers  # type: ignore[method-assign]
    return client


def initialize_message(rid: int = 1, version: str = "2025-11-25") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "auth-test", "version": "0"},
        },
    }


async def raw_post(
    http: httpx.AsyncClient, url: str, msg: Any, headers: Mapping[str, str] | None = None
) -> httpx.Response:
    hdrs = {"accept": BOTH, "content-type": "application/json"}
    hdrs.update(headers or {})
    return await http.post(url, content=orjson.dumps(msg), headers=hdrs)


def error_answer(resp: httpx.Response, revision: str = "2025-11-25") -> dict[str, Any]:
    """The JSON-RPC error body of a refusal, checked against the schema."""
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    body: dict[str, Any] = resp.json()
    schema.validate_message(body, revision)
    assert "error" in body, body
    return body
