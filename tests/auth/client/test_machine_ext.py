"""Machine-to-machine and enterprise authorization, end to end over real sockets.

The real mcpkit ``Client`` connects to an mcpkit server behind a token gate
(:class:`ProtectedMCP`), which sends it to a real authorization server
(:class:`AuthServer`) and, for enterprise-managed authorization, a real IdP.
The peers verify what they receive: client secrets, the signature and claims of
``private_key_jwt`` assertions, ID tokens and ID-JAGs, DPoP proofs.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from joserfc.jwk import ECKey

from mcpkit.auth.client import (
    ClientCredentials,
    DPoPKey,
    DPoPSigner,
    EnterpriseAuth,
    HeadlessAuthorizer,
    OAuth,
    WorkloadIdentity,
)
from mcpkit.client import Client
from mcpkit.errors import AuthorizationFailed, ConfigurationError
from mcpkit.server.server import MCPServer
from tests.auth.client.oauth_peers import (
    JWT_BEARER,
    AuthServer,
    IdentityProvider,
    ProtectedMCP,
    client_keys,
    running,
)

TIMEOUT = 10.0


def build_server() -> MCPServer:
    server = MCPServer(name="protected", version="1.0.0")

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    return server


async def call_add(url: str, auth: Any) -> int:
    async with Client(url=url, auth=auth, timeout=TIMEOUT) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        again = await client.call_tool("add", {"a": 1, "b": 1})
        assert again["content"][0]["text"] == "2"
        return int(result["content"][0]["text"])


def token_requests(auth_server: AuthServer) -> list[dict[str, str]]:
    return [seen.form for seen in auth_server.requests if seen.path == "/token"]


# -- client credentials --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_client_credentials_with_a_secret(method: str) -> None:
    auth_server = AuthServer(auth_methods=[method], secrets={"svc": "s3cr:et/"})
    protected = ProtectedMCP(build_server(), auth_server)
    async with running(auth_server), running(protected, path="/mcp") as url:
        assert await call_add(url, ClientCredentials("svc", client_secret="s3cr:et/")) == 5
    assert auth_server.problems == [] and protected.problems == []
    [form] = token_requests(auth_server)  # one token for the whole session
    assert form["grant_type"] == "client_credentials"
    assert form["resource"] == url
    assert ("client_secret" in form) == (method == "client_secret_post")


async def test_an_expired_client_credentials_token_is_replaced_by_a_new_grant() -> None:
    auth_server = AuthServer(secrets={"svc": "pw"}, expires_in=1)
    protected = ProtectedMCP(build_server(), auth_server)
    async with (
        running(auth_server),
        running(protected, path="/mcp") as url,
        Client(url=url, auth=ClientCredentials("svc", client_secret="pw"), timeout=TIMEOUT) as c,
    ):
        await c.call_tool("add", {"a": 1, "b": 2})
        await asyncio.sleep(1.2)  # the token is now refused by the server
        result = await c.call_tool("add", {"a": 2, "b": 2})
        assert result["content"][0]["text"] == "4"
    assert len(token_requests(auth_server)) == 2
    assert auth_server.problems == [] and protected.problems == []


async def test_no_secret_key_or_token_reaches_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    pem, public = client_keys()
    auth_server = AuthServer(
        auth_methods=["private_key_jwt"], public_keys={"svc": public}, dpop=True
    )
    protected = ProtectedMCP(build_server(), auth_server)
    caplog.set_level(logging.DEBUG)
    auth = ClientCredentials("svc", private_key=pem, dpop=True)
    async with running(auth_server), running(protected, path="/mcp") as url:
        assert await call_add(url, auth) == 5
    [token] = auth_server.tokens
    [form] = token_requests(auth_server)
    proofs = [s.headers["dpop"] for s in protected.requests if "dpop" in s.headers]
    secrets_seen = [token, form["client_assertion"], *proofs, *pem.splitlines()[1:-1]]
    text = caplog.text + repr(auth) + repr(auth.hooks) + repr(auth.grant)
    assert caplog.records  # the flow did log, at DEBUG
    assert not [s for s in secrets_seen if s in text]


@pytest.mark.parametrize("algorithm", ["ES256", "RS256"])
async def test_client_credentials_with_private_key_jwt(algorithm: str) -> None:
    from joserfc import jwk
    from joserfc.jwk import RSAKey

    key: Any = ECKey.generate_key("P-256") if algorithm == "ES256" else RSAKey.generate_key(2048)
    public = jwk.import_key(key.as_dict(private=False), "EC" if algorithm == "ES256" else "RSA")
    auth_server = AuthServer(auth_methods=["private_key_jwt"], public_keys={"svc": public})
    protected = ProtectedMCP(build_server(), auth_server)
    pem = key.as_pem(private=True).decode()
    async with running(auth_server), running(protected, path="/mcp") as url:
        # No algorithm given: inferred from the key.
        assert await call_add(url, ClientCredentials("svc", private_key=pem)) == 5
    assert auth_server.problems == [] and protected.problems == []
    [form] = token_requests(auth_server)
    assert form["client_id"] == "svc" and "client_secret" not in form
    assert len(auth_server.assertion_jtis) == 1


async def test_a_wrong_key_is_refused_as_invalid_client_and_not_retried() -> None:
    _, public = client_keys()
    other_pem, _ = client_keys()
    auth_server = AuthServer(auth_methods=["private_key_jwt"], public_keys={"svc": public})
    protected = ProtectedMCP(build_server(), auth_server)
    async with running(auth_server), running(protected, path="/mcp") as url:
        with pytest.raises(AuthorizationFailed) as caught:
            await call_add(url, ClientCredentials("svc", private_key=other_pem))
    assert caught.value.error == "invalid_client"
    assert len(token_requests(auth_server)) == 1
    assert "BEGIN" not in str(caught.value)


@pytest.mark.parametrize("error", ["invalid_scope", "unauthorized_client"])
async def test_a_refused_grant_surfaces_its_oauth_code_without_retrying(error: str) -> None:
    auth_server = AuthServer(secrets={"svc": "pw"}, refuse_scopes={"admin": error})
    protected = ProtectedMCP(build_server(), auth_server)
    async with running(auth_server), running(protected, path="/mcp") as url:
        with pytest.raises(AuthorizationFailed) as caught:
            await call_add(url, ClientCredentials("svc", client_secret="pw", scopes=["admin"]))
    assert caught.value.error == error
    assert len(token_requests(auth_server)) == 1


def test_client_credentials_needs_exactly_one_credential() -> None:
    with pytest.raises(ConfigurationError):
        ClientCredentials("svc")
    pem, _ = client_keys()
    with pytest.raises(ConfigurationError):
        ClientCredentials("svc", client_secret="x", private_key=pem)
    with pytest.raises(ConfigurationError):
        ClientCredentials("svc", private_key=pem, algorithm="HS256")
    assert "x" not in repr(ClientCredentials("svc", client_secret="x-secret-x"))


# -- workload identity (JWT bearer) ----------------------------------------------------------


def workload_check(idp: IdentityProvider, audience: list[str]) -> Any:
    from joserfc import jwt

    def check(assertion: str, client_id: str | None) -> str | None:
        try:
            claims = jwt.decode(assertion, idp.key, algorithms=["ES256"]).claims
        except Exception:
            return "invalid_grant"
        return None if claims.get("aud") == audience[0] else "invalid_grant"

    return check


async def test_workload_identity_reads_the_token_file_for_each_grant(tmp_path: Path) -> None:
    idp = IdentityProvider()
    issuer: list[str] = []
    auth_server = AuthServer(
        grant_types=[JWT_BEARER], auth_methods=["none"], check_assertion=workload_check(idp, issuer)
    )
    protected = ProtectedMCP(build_server(), auth_server)
    token_file = tmp_path / "token"
    async with running(idp), running(auth_server), running(protected, path="/mcp") as url:
        issuer.append(auth_server.issuer)
        idp.client_id = auth_server.issuer  # the workload token's audience: the AS
        token_file.write_text(idp.id_token("system:serviceaccount:ns:worker") + "\n")
        auth = WorkloadIdentity(token_file, client_id="worker")
        assert await call_add(url, auth) == 5
    assert auth_server.problems == [] and protected.problems == []
    [form] = token_requests(auth_server)
    assert form["grant_type"] == JWT_BEARER
    assert form["assertion"] == token_file.read_text().strip()
    assert form["client_id"] == "worker" and form["resource"] == url


async def test_workload_identity_with_a_refused_assertion_fails_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    idp = IdentityProvider()
    auth_server = AuthServer(
        grant_types=[JWT_BEARER],
        auth_methods=["none"],
        check_assertion=workload_check(idp, ["https://not-this-server"]),
    )
    protected = ProtectedMCP(build_server(), auth_server)
    caplog.set_level(logging.DEBUG)
    async with running(idp), running(auth_server), running(protected, path="/mcp") as url:
        assertion = idp.id_token("wl")
        with pytest.raises(AuthorizationFailed) as caught:
            await call_add(url, WorkloadIdentity(lambda: assertion, client_id="worker"))
    assert caught.value.error == "invalid_grant"
    forms = token_requests(auth_server)
    assert len(forms) == 1 and forms[0]["grant_type"] == JWT_BEARER  # no retry, no fallback
    assert assertion not in caplog.text and assertion not in str(caught.value)


async def test_a_missing_token_file_fails_before_any_token_request(tmp_path: Path) -> None:
    auth_server = AuthServer(grant_types=[JWT_BEARER], auth_methods=["none"])
    protected = ProtectedMCP(build_server(), auth_server)
    async with running(auth_server), running(protected, path="/mcp") as url:
        with pytest.raises(AuthorizationFailed) as caught:
            await call_add(url, WorkloadIdentity(tmp_path / "absent", client_id="w"))
    assert caught.value.error == "invalid_assertion" and "absent" in str(caught.value)
    assert token_requests(auth_server) == []


# -- enterprise-managed authorization (token exchange + JWT bearer) -------------------------


@pytest.mark.parametrize("discover_idp", [False, True])
async def test_enterprise_auth_exchanges_the_id_token_for_an_id_jag(discover_idp: bool) -> None:
    idp = IdentityProvider(as_client_id="mcp-app")
    auth_server = AuthServer(
        grant_types=[JWT_BEARER], auth_methods=["client_secret_basic"], secrets={"mcp-app": "pw"}
    )
    protected = ProtectedMCP(build_server(), auth_server)
    async with running(idp), running(auth_server), running(protected, path="/mcp") as url:
        auth_server.check_assertion = idp.check_id_jag(auth_server.issuer, url)
        auth = EnterpriseAuth(
            client_id="mcp-app",
            client_secret="pw",
            id_token=idp.id_token(),
            idp_client_id=idp.client_id,
            **(
                {"idp_issuer": idp.issuer}  # the token endpoint from OpenID discovery
                if discover_idp
                else {"idp_token_endpoint": f"{idp.issuer}/token"}
            ),
            scopes="tools:read",
        )
        assert await call_add(url, auth) == 5
    assert idp.problems == [] and auth_server.problems == [] and protected.problems == []
    [exchange] = [seen.form for seen in idp.requests if seen.path == "/token"]
    assert exchange["audience"] == auth_server.issuer and exchange["resource"] == url
    assert exchange["client_id"] == idp.client_id and exchange["scope"] == "tools:read"
    [form] = token_requests(auth_server)
    assert form["grant_type"] == JWT_BEARER and form["scope"] == "tools:read"
    assert auth_server.tokens[next(iter(auth_server.tokens))].client_id == "mcp-app"


async def test_enterprise_auth_stops_when_the_idp_refuses_the_id_token() -> None:
    idp = IdentityProvider()
    auth_server = AuthServer(grant_types=[JWT_BEARER], secrets={"mcp-app": "pw"})
    protected = ProtectedMCP(build_server(), auth_server)
    forged = IdentityProvider()  # signed with another key
    async with running(idp), running(auth_server), running(protected, path="/mcp") as url:
        forged.issuer = idp.issuer
        auth = EnterpriseAuth(
            client_id="mcp-app",
            client_secret="pw",
            id_token=forged.id_token(),
            idp_token_endpoint=f"{idp.issuer}/token",
            idp_client_id=idp.client_id,
        )
        with pytest.raises(AuthorizationFailed) as caught:
            await call_add(url, auth)
    assert caught.value.error == "invalid_grant"
    assert token_requests(auth_server) == []  # the AS never saw anything


# -- DPoP ----------------------------------------------------------------------------------


@pytest.mark.parametrize("nonces", [False, True])
async def test_dpop_bound_tokens_with_a_fresh_proof_per_request(nonces: bool) -> None:
    auth_server = AuthServer(
        secrets={"svc": "pw"}, dpop=True, dpop_nonce="as-nonce-1" if nonces else None
    )
    protected = ProtectedMCP(
        build_server(), auth_server, dpop_nonce="rs-nonce-1" if nonces else None
    )
    key = DPoPKey()
    async with running(auth_server), running(protected, path="/mcp") as url:
        assert await call_add(url, ClientCredentials("svc", client_secret="pw", dpop=key)) == 5
    assert auth_server.problems == [] and protected.problems == []
    [issued] = auth_server.tokens.values()
    assert issued.jkt == key.thumbprint()
    tokens = token_requests(auth_server)
    assert len(tokens) == (2 if nonces else 1)  # one nonce retry at the AS
    mcp_posts = [s for s in protected.requests if s.method == "POST" and s.path == "/mcp"]
    authorized = [s for s in mcp_posts if s.headers.get("authorization", "").startswith("DPoP ")]
    # Every authorized request carried its own proof (the gate refuses a replayed jti).
    assert len(authorized) >= 3 and len(protected.proof_jtis) == len(authorized)
    # One use_dpop_nonce challenge from each server; then the nonce is remembered.
    assert auth_server.nonce_challenges == protected.nonce_challenges == (1 if nonces else 0)


async def test_dpop_with_the_authorization_code_flow_and_both_nonces() -> None:
    auth_server = AuthServer(
        grant_types=["authorization_code"], auth_methods=["none"], dpop=True, dpop_nonce="as-n"
    )
    protected = ProtectedMCP(build_server(), auth_server, dpop_nonce="rs-n")
    signer = DPoPSigner()
    auth = OAuth(
        authorizer=HeadlessAuthorizer("http://127.0.0.1:9/callback"),
        client_id="app",
        hooks=[signer],
    )
    async with running(auth_server), running(protected, path="/mcp") as url:
        assert await call_add(url, auth) == 5
    assert auth_server.problems == [] and protected.problems == []
    [issued] = auth_server.tokens.values()
    assert issued.jkt == signer.key.thumbprint() and issued.client_id == "app"
    assert [f["grant_type"] for f in token_requests(auth_server)] == ["authorization_code"] * 2
    assert auth_server.nonce_challenges == protected.nonce_challenges == 1
