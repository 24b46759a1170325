"""ProtectedResource's configuration, its metadata document, and `mcpkit run` picking up
``MCPServer(auth=...)`` in a real subprocess."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpkit import MCPServer
from mcpkit.auth import (
    AuthInfo,
    ProtectedResource,
    StaticTokenVerifier,
    TokenVerifier,
    parse_www_authenticate,
)
from mcpkit.errors import ConfigurationError, InsufficientScope, InvalidToken
from mcpkit.server.stateless.input_required import principal_of
from tests.auth.protected_support import ISSUER, initialize_message, verify_for
from tests.cli.test_run import _free_port, _running, _until_listening
from tests.transports.conftest import BOTH, TIMEOUT, run_app

GOOD = {
    "resource": "https://mcp.example.com/mcp",
    "authorization_servers": [ISSUER],
    "verifier": verify_for("https://mcp.example.com/mcp"),
}


def make(**changes: Any) -> ProtectedResource:
    return ProtectedResource(**{**GOOD, **changes})


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"resource": "http://mcp.example.com/mcp"}, "must use https"),
        ({"resource": "mcp.example.com/mcp"}, "must be an absolute https:// URL"),
        ({"resource": "https://mcp.example.com/mcp#frag"}, "must not contain a fragment"),
        ({"resource": "https://mcp.example.com/mcp?x=1"}, "should not have a query"),
        ({"authorization_servers": []}, "at least one authorization server"),
        ({"authorization_servers": ["http://auth.example.com"]}, "must use https"),
        ({"scopes_supported": "mcp:read mcp:write"}, "not the string"),
        ({"scopes_supported": ["mcp read"]}, "are not OAuth scope names"),
        ({"required_scopes": ['a"b']}, "are not OAuth scope names"),
        ({"verifier": "not callable"}, "verifier:"),
        ({"resource_documentation": "docs"}, "resource_documentation must be"),
        ({"extra_metadata": {"resource": "https://other"}}, "may not set 'resource'"),
    ],
)
def test_bad_options_are_configuration_errors(changes: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigurationError, match="ProtectedResource cannot be used") as info:
        make(**changes)
    assert said in str(info.value)


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ConfigurationError) as info:
        ProtectedResource(resource="ftp://x", authorization_servers=[], verifier=42)  # type: ignore[arg-type]
    text = str(info.value)
    assert "resource 'ftp://x'" in text and "authorization_servers" in text and "verifier" in text


@pytest.mark.parametrize(
    "resource", ["http://localhost:8000/mcp", "http://127.0.0.1/mcp", "http://[::1]:9/mcp"]
)
def test_plain_http_is_accepted_on_loopback_for_development(resource: str) -> None:
    assert make(resource=resource).resource == resource


def test_the_metadata_document_and_its_url() -> None:
    auth = make(
        scopes_supported=["mcp:read", "mcp:write"],
        resource_name="Demo",
        resource_policy_uri="https://example.com/policy",
        extra_metadata={"dpop_bound_access_tokens_required": False},
    )
    assert auth.metadata() == {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "resource_name": "Demo",
        "resource_policy_uri": "https://example.com/policy",
        "dpop_bound_access_tokens_required": False,
    }
    assert auth.resource_metadata_url == (
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    )
    root = make(resource="https://mcp.example.com/")
    assert (
        root.resource_metadata_url == "https://mcp.example.com/.well-known/oauth-protected-resource"
    )
    assert root.metadata_paths() == {"/.well-known/oauth-protected-resource"}
    # The 401 asks for what the metadata lists, plus what every request needs.
    assert make(scopes_supported=["a"], required_scopes=["b"]).challenge_scopes == ("a", "b")


async def test_an_object_verifier_and_a_verifier_returning_junk() -> None:
    class Table:
        async def verify(self, token: str) -> AuthInfo | None:
            return AuthInfo(token=token, subject="t") if token == "ok" else None

    assert isinstance(Table(), TokenVerifier)
    auth = make(verifier=Table())
    assert (await auth.verify("ok")).subject == "t"

    async def expired(token: str, resource: str) -> AuthInfo | None:
        return AuthInfo(token=token, subject="t", expires_at=1.0)

    async def junk(token: str, resource: str) -> Any:
        return {"sub": "t"}

    with pytest.raises(InvalidToken, match="expired"):
        await make(verifier=expired).verify("x")
    with pytest.raises(InvalidToken):
        await auth.verify("nope")
    with pytest.raises(TypeError, match="not an AuthInfo"):
        await make(verifier=junk).verify("x")


def test_mcp_server_auth_must_be_a_protected_resource() -> None:
    with pytest.raises(ConfigurationError, match="ProtectedResource"):
        MCPServer(name="x", version="1", auth="secret")  # type: ignore[arg-type]
    auth = make()
    assert MCPServer(name="x", version="1", auth=auth).auth is auth


APP = '''
from mcpkit import Context, MCPServer
from mcpkit.auth import AuthInfo, ProtectedResource


async def verify(token: str, resource: str) -> AuthInfo | None:
    if token == "cli-token" and resource == RESOURCE:
        return AuthInfo(token=token, subject="cli-user", scopes=frozenset({"mcp:read"}))
    return None


server = MCPServer(
    name="cli-protected",
    version="1.0.0",
    auth=ProtectedResource(
        resource=RESOURCE,
        authorization_servers=["https://auth.example.com"],
        scopes_supported=["mcp:read"],
        verifier=verify,
    ),
)


@server.tool
async def whoami(ctx: Context) -> str:
    """The token's subject."""
    return ctx.auth.subject if ctx.auth is not None else "nobody"
'''


async def test_mcpkit_run_serves_the_servers_auth(tmp_path: Path) -> None:
    port = _free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    app = tmp_path / "protected_app.py"
    app.write_text(f"RESOURCE = {resource!r}\n" + textwrap.dedent(APP))
    async with _running(str(app), "--transport", "http", "--port", str(port)) as proc:
        await _until_listening(port, proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            meta = await http.get(
                f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
            )
            assert meta.status_code == 200 and meta.json()["resource"] == resource
            headers = {"accept": BOTH, "content-type": "application/json"}
            init = orjson.dumps(initialize_message())
            refused = await http.post(resource, content=init, headers=headers)
            assert refused.status_code == 401
            assert parse_www_authenticate(refused.headers["www-authenticate"]) == {
                "resource_metadata": (
                    f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
                ),
                "scope": "mcp:read",
            }
            headers["authorization"] = "Bearer cli-token"
            ok = await http.post(resource, content=init, headers=headers)
            assert ok.status_code == 200
            headers["mcp-session-id"] = ok.headers["mcp-session-id"]
            headers["mcp-protocol-version"] = "2025-11-25"
            await http.post(
                resource,
                content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                headers=headers,
            )
            call = await http.post(
                resource,
                content=b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}',
                headers=headers,
            )
            assert call.status_code == 200
            assert '"text":"cli-user"' in call.text.replace(" ", "")


async def test_an_app_mounted_under_a_prefix_with_the_metadata_at_the_root() -> None:
    auth = make(resource="https://example.com/api/mcp")
    server = MCPServer(name="mounted", version="1.0.0", auth=auth)
    outer = Starlette(
        routes=[
            Mount("/api", app=server.http_app()),
            Mount("/.well-known", app=auth.metadata_app()),
        ]
    )
    async with run_app(outer) as base, httpx.AsyncClient(timeout=TIMEOUT) as http:
        for path in (
            "/.well-known/oauth-protected-resource/api/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            meta = await http.get(base + path)
            assert meta.status_code == 200 and meta.json()["resource"] == auth.resource
        assert (await http.get(base + "/.well-known/openid-configuration")).status_code == 404
        refused = await http.post(base + "/api/mcp", content=orjson.dumps(initialize_message()))
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == (
            'Bearer resource_metadata="https://example.com/.well-known/'
            'oauth-protected-resource/api/mcp"'
        )


def test_an_auth_infos_principal_is_its_issuer_subject_and_client_never_its_token() -> None:
    alice = AuthInfo(token="t-1", subject="alice", issuer=ISSUER, client_id="app")
    refreshed = AuthInfo(token="t-2", subject="alice", issuer=ISSUER, client_id="app")
    elsewhere = AuthInfo(token="t-1", subject="alice", issuer="https://other.example.com")
    assert principal_of(alice) == principal_of(refreshed) != principal_of(elsewhere)
    assert "alice" in (principal_of(alice) or "") and "t-1" not in (principal_of(alice) or "")
    anonymous = AuthInfo(token="opaque-secret-token")
    named = principal_of(anonymous)
    assert named is not None and "opaque-secret-token" not in named
    assert named != principal_of(AuthInfo(token="another-token"))


async def test_a_verifier_with_its_own_required_scopes_answers_403() -> None:
    verifier = StaticTokenVerifier({"narrow": ["mcp:read"], "wide": ["mcp:read", "mcp:admin"]})

    async def needs_admin(token: str, resource: str) -> AuthInfo | None:
        info = await verifier.verify(token)
        if info is not None and not info.has_scopes(["mcp:admin"]):
            raise InsufficientScope(["mcp:admin"])
        return info

    server = MCPServer(name="admin", version="1.0.0")
    app = server.http_app(auth=make(verifier=needs_admin))
    async with run_app(app) as base, httpx.AsyncClient(timeout=TIMEOUT) as http:
        headers = {"accept": BOTH, "content-type": "application/json"}
        body = orjson.dumps(initialize_message())
        narrow = await http.post(
            base + "/mcp", content=body, headers={**headers, "authorization": "Bearer narrow"}
        )
        assert narrow.status_code == 403
        assert parse_www_authenticate(narrow.headers["www-authenticate"]) == {
            "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "error": "insufficient_scope",
            "scope": "mcp:admin",
            "error_description": "this request needs the scopes mcp:admin",
        }
        wide = await http.post(
            base + "/mcp", content=body, headers={**headers, "authorization": "Bearer wide"}
        )
        assert wide.status_code == 200
