"""A protected server with real tokens, end to end over real sockets.

JWTs signed with keys generated here, their public halves served by a real JWKS
endpoint on a local port; opaque tokens checked by a real RFC 7662 introspection
endpoint. Every case answers as the specification says (200, 401 invalid_token,
403 insufficient_scope, 503, 404 for another subject's session) and no refused
request runs anything.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from joserfc.jwk import RSAKey

from mcpkit.auth import IntrospectionVerifier, JWTVerifier, parse_www_authenticate
from tests.auth.protected_support import (
    METADATA_URL,
    client_with,
    initialize_message,
    protected,
    raw_post,
    scoped_server,
)
from tests.auth.verifier_endpoints import (
    ISSUER,
    RESOURCE,
    IntrospectionEndpoint,
    JWKSEndpoint,
    forge_hs256,
    sign,
)
from tests.transports.conftest import TIMEOUT, run_app

RSA = RSAKey.generate_key(2048, parameters={"kid": "default"})


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        yield client


@pytest.fixture
async def jwt_server() -> AsyncIterator[tuple[str, Any, JWKSEndpoint]]:
    """(MCP URL, server, JWKS endpoint) of a server verifying JWTs from a live JWKS."""
    endpoint = JWKSEndpoint(keys=[RSA])
    async with run_app(endpoint.app()) as jwks_base:
        verifier = JWTVerifier(
            jwks_uri=f"{jwks_base}/jwks",
            issuer=ISSUER,
            audience=RESOURCE,
            jwks_refresh_interval=0.2,
        )
        server = scoped_server()
        async with run_app(server.http_app(auth=protected(verifier=verifier))) as base:
            yield base + "/mcp", server, endpoint


def invalid_token(resp: httpx.Response) -> str:
    """The error_description of a 401 invalid_token answer (checked in full)."""
    assert resp.status_code == 401, resp.text
    challenge = parse_www_authenticate(resp.headers["www-authenticate"])
    assert challenge is not None
    assert challenge["resource_metadata"] == METADATA_URL
    assert challenge["error"] == "invalid_token"
    assert challenge["scope"] == "mcp:read mcp:write"
    return challenge["error_description"]


async def test_jwt_tokens_each_answer_as_the_specification_says(
    jwt_server: tuple[str, Any, JWKSEndpoint], http: httpx.AsyncClient
) -> None:
    url, server, _ = jwt_server
    now = int(time.time())
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami"}}

    async def post(token: str) -> httpx.Response:
        return await raw_post(
            http,
            url,
            call,
            {"authorization": f"Bearer {token}", "mcp-protocol-version": "2025-11-25"},
        )

    header, payload, signature = sign(RSA).split(".")
    flipped = ("A" if signature[10] != "A" else "B").join((signature[:10], signature[11:]))
    refused = {
        "expired": sign(RSA, exp=now - 3600, iat=now - 7200),
        "not yet valid": sign(RSA, nbf=now + 3600),
        "wrong issuer": sign(RSA, iss="https://evil.example.com"),
        "for another resource": sign(RSA, aud="https://other.example.com/mcp"),
        "alg none": b64(b'{"alg":"none","kid":"default"}') + f".{payload}.",
        "hmac with the public key": forge_hs256(RSA.as_pem(private=False)),
        "tampered": f"{header}.{payload}.{flipped}",
    }
    said = {}
    for why, token in refused.items():
        said[why] = description = invalid_token(await post(token))
        assert token not in description, why
    # Each refusal says why (the verifier's words), never with the token.
    assert said == {
        "expired": "token expired",
        "not yet valid": "token not yet valid ('nbf' is in the future)",
        "wrong issuer": "wrong issuer",
        "for another resource": "wrong audience: the token was issued for another resource",
        "alg none": "token signing algorithm not allowed",
        "hmac with the public key": "token signing algorithm not allowed",
        "tampered": "invalid token signature",
    }
    assert server.ran == []
    # The same request with a good token gets through the token check (to the session
    # rule: a tools/call without a session is 400), and a session shows ctx.auth.
    assert (await post(sign(RSA))).status_code == 400
    client = client_with(http, url, sign(RSA, sub="user-1"))
    await client.initialize()
    result = (await client.call_tool("whoami")).result["structuredContent"]
    assert result["subject"] == "user-1" and result["scopes"] == ["mcp:read", "mcp:write"]
    assert result["client_id"] == "client-1"


async def test_jwt_scope_step_up_session_owner_and_key_rotation(
    jwt_server: tuple[str, Any, JWKSEndpoint], http: httpx.AsyncClient
) -> None:
    url, server, endpoint = jwt_server
    reader = client_with(http, url, sign(RSA, scope="mcp:read"))
    await reader.initialize()
    refused = await reader.call_tool("write_note", {"text": "x"})
    assert refused.status == 403
    assert parse_www_authenticate(refused.headers["www-authenticate"]) == {
        "resource_metadata": METADATA_URL,
        "error": "insufficient_scope",
        "scope": "mcp:read mcp:write",
        "error_description": "this request needs the scopes mcp:write",
    }
    # Another subject's valid token on user-1's session: 404, nothing runs.
    other = client_with(http, url, sign(RSA, sub="user-2"))
    other.session_id, other.protocol_version = reader.session_id, reader.protocol_version
    stolen = await other.call_tool("whoami")
    assert stolen.status == 404
    assert server.ran == []
    # The issuer rotates its key: a token with the new kid makes the verifier refetch.
    rotated = RSAKey.generate_key(2048, parameters={"kid": "rotated"})
    await asyncio.sleep(0.25)  # past the verifier's refresh interval
    endpoint.keys = [rotated]
    writer = client_with(http, url, sign(rotated, kid="rotated"))
    writer.session_id, writer.protocol_version = reader.session_id, reader.protocol_version
    done = await writer.call_tool("write_note", {"text": "rotated"})
    assert done.result["content"][0]["text"] == "noted rotated"
    assert server.ran == ["write_note rotated"]


async def test_a_jwks_endpoint_that_is_down_is_503(http: httpx.AsyncClient) -> None:
    endpoint = JWKSEndpoint(keys=[RSA], status=503)
    async with run_app(endpoint.app()) as jwks_base:
        verifier = JWTVerifier(jwks_uri=f"{jwks_base}/jwks", issuer=ISSUER, audience=RESOURCE)
        server = scoped_server()
        async with run_app(server.http_app(auth=protected(verifier=verifier))) as base:
            resp = await raw_post(
                http, base + "/mcp", initialize_message(), {"authorization": f"Bearer {sign(RSA)}"}
            )
    assert resp.status_code == 503
    assert "www-authenticate" not in resp.headers
    assert endpoint.hits >= 1


async def test_introspected_tokens_active_revoked_and_endpoint_down(
    http: httpx.AsyncClient,
) -> None:
    now = int(time.time())
    good = {
        "active": True,
        "scope": "mcp:read",
        "client_id": "client-1",
        "sub": "user-9",
        "iss": ISSUER,
        "aud": RESOURCE,
        "exp": now + 300,
    }
    ep = IntrospectionEndpoint(
        answers={
            "opaque-good-token": good,
            "opaque-elsewhere": {**good, "aud": "https://other.example.com/mcp"},
        }
    )
    async with run_app(ep.app()) as introspection_base:
        verifier = IntrospectionVerifier(
            endpoint=f"{introspection_base}/introspect",
            audience=RESOURCE,
            client_id=ep.client_id,
            client_secret=ep.client_secret,
            allow_insecure_http=True,
        )
        server = scoped_server()
        async with run_app(server.http_app(auth=protected(verifier=verifier))) as base:
            url = base + "/mcp"
            client = client_with(http, url, "opaque-good-token")
            await client.initialize()
            who = (await client.call_tool("whoami")).result["structuredContent"]
            assert who["subject"] == "user-9" and who["scopes"] == ["mcp:read"]
            assert (await client.call_tool("write_note", {"text": "x"})).status == 403
            for token in ("opaque-revoked-token", "opaque-elsewhere"):
                resp = await raw_post(
                    http, url, initialize_message(), {"authorization": f"Bearer {token}"}
                )
                invalid_token(resp)
            ep.status = 500  # the authorization server breaks: a new token cannot be checked
            down = await raw_post(
                http, url, initialize_message(), {"authorization": "Bearer opaque-new-token"}
            )
            assert down.status_code == 503
    assert server.ran == ["whoami"]
    # The resource server authenticated itself to the introspection endpoint.
    assert all(h.get("authorization", "").startswith("Basic ") for h in ep.headers)
