"""IntrospectionVerifier against a real RFC 7662 endpoint on a local port."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit.auth import IntrospectionVerifier
from mcpkit.errors import ConfigurationError, InsufficientScope, InvalidToken, VerifierUnavailable
from tests.auth.verifier_endpoints import ISSUER, RESOURCE, IntrospectionEndpoint
from tests.transports.conftest import run_app

TOKEN = "opaque-access-token-0123456789"


def active(**fields: Any) -> dict[str, Any]:
    now = int(time.time())
    answer: dict[str, Any] = {
        "active": True,
        "scope": "mcp:read mcp:write",
        "client_id": "client-1",
        "sub": "user-1",
        "iss": ISSUER,
        "aud": RESOURCE,
        "exp": now + 300,
        "iat": now,
        "token_type": "Bearer",
    }
    answer.update(fields)
    return {k: v for k, v in answer.items() if v is not None}


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[IntrospectionEndpoint, str]]:
    ep = IntrospectionEndpoint(answers={TOKEN: active()})
    async with run_app(ep.app()) as url:
        yield ep, f"{url}/introspect"


def verifier(ep: IntrospectionEndpoint, url: str, **options: Any) -> IntrospectionVerifier:
    options.setdefault("audience", RESOURCE)
    if ep.client_auth != "none":
        options.setdefault("client_id", ep.client_id)
        options.setdefault("client_secret", ep.client_secret)
    options.setdefault("client_auth", ep.client_auth)
    return IntrospectionVerifier(endpoint=url, **options)


async def refused(v: IntrospectionVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as info:
        await v.verify(token)
    assert token not in str(info.value)
    return str(info.value)


async def test_active_token_gives_its_auth_info(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    info = await verifier(ep, url).verify(TOKEN)
    assert info.token == TOKEN
    assert info.subject == "user-1"
    assert info.client_id == "client-1"
    assert info.issuer == ISSUER
    assert info.scopes == {"mcp:read", "mcp:write"}
    assert info.resource == RESOURCE
    assert info.expires_at is not None and info.expires_at > time.time()
    assert info.claims["token_type"] == "Bearer"
    assert ep.requests[0]["token"] == TOKEN
    assert ep.requests[0]["token_type_hint"] == "access_token"
    assert ep.headers[0]["content-type"] == "application/x-www-form-urlencoded"


async def test_inactive_token_is_refused(endpoint: tuple[IntrospectionEndpoint, str]) -> None:
    ep, url = endpoint
    assert await refused(verifier(ep, url), "revoked-token-abcdef") == "token is not active"
    ep.answers["odd"] = {"active": "true"}  # a string is not the boolean true
    assert await refused(verifier(ep, url), "odd") == "token is not active"


async def test_token_for_another_resource_is_refused(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    ep.answers["elsewhere"] = active(aud="https://other.example.com/api")
    assert "wrong audience" in await refused(verifier(ep, url), "elsewhere")
    ep.answers["no-aud"] = active(aud=None)
    assert "no audience" in await refused(verifier(ep, url), "no-aud")
    # RFC 8707 style answers that name the resource are accepted ...
    ep.answers["by-resource"] = active(aud=None, resource=[RESOURCE])
    assert (await verifier(ep, url).verify("by-resource")).resource == RESOURCE
    # ... and audience=None is an explicit choice to skip the check.
    assert (await verifier(ep, url, audience=None).verify("elsewhere")).subject == "user-1"


async def test_expired_or_future_answers_are_refused(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    now = int(time.time())
    ep.answers["old"] = active(exp=now - 600)
    assert await refused(verifier(ep, url), "old") == "token expired"
    ep.answers["early"] = active(nbf=now + 600)
    assert "not yet valid" in await refused(verifier(ep, url), "early")


async def test_issuer_and_token_type_checks(endpoint: tuple[IntrospectionEndpoint, str]) -> None:
    ep, url = endpoint
    ep.answers["foreign"] = active(iss="https://evil.example.com")
    assert await refused(verifier(ep, url, issuer=ISSUER), "foreign") == "wrong issuer"
    assert (await verifier(ep, url, issuer=ISSUER).verify(TOKEN)).issuer == ISSUER
    ep.answers["refresh"] = active(token_type="refresh_token")
    assert await refused(verifier(ep, url), "refresh") == "not an access token"


async def test_required_scopes_missing_is_insufficient_scope(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    with pytest.raises(InsufficientScope):
        await verifier(ep, url, required_scopes=["mcp:admin"]).verify(TOKEN)


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_client_authentication_is_sent(method: str) -> None:
    ep = IntrospectionEndpoint(answers={TOKEN: active()}, client_auth=method)
    async with run_app(ep.app()) as base:
        url = f"{base}/introspect"
        options: dict[str, Any] = {"client_auth": method, "audience": RESOURCE}
        if method == "none":
            options["client_id"] = "public-rs"
        else:
            options.update(client_id=ep.client_id, client_secret=ep.client_secret)
        assert (await IntrospectionVerifier(endpoint=url, **options).verify(TOKEN)).subject
        if method == "client_secret_basic":
            assert ep.headers[-1]["authorization"].startswith("Basic ")
            assert "client_secret" not in ep.requests[-1]
        elif method == "client_secret_post":
            assert ep.requests[-1]["client_secret"] == ep.client_secret
            assert "authorization" not in ep.headers[-1]
        else:
            assert ep.requests[-1]["client_id"] == "public-rs"
            assert "authorization" not in ep.headers[-1]


async def test_wrong_client_secret_is_unavailable_not_a_pass(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    v = verifier(ep, url, client_secret="wrong")
    with pytest.raises(VerifierUnavailable, match="HTTP 401") as info:
        await v.verify(TOKEN)
    assert TOKEN not in str(info.value) and "wrong" not in str(info.value)
    # client_secret_post to an endpoint that wants Basic is refused the same way.
    with pytest.raises(VerifierUnavailable):
        await verifier(ep, url, client_auth="client_secret_post").verify(TOKEN)


async def test_active_answers_are_cached(endpoint: tuple[IntrospectionEndpoint, str]) -> None:
    ep, url = endpoint
    v = verifier(ep, url)
    first = await v.verify(TOKEN)
    for _ in range(20):
        assert await v.verify(TOKEN) is first
    assert ep.hits == 1
    # Revocation is seen once the cache entry is gone (cache_ttl=0: ask every time).
    uncached = verifier(ep, url, cache_ttl=0)
    await uncached.verify(TOKEN)
    ep.answers[TOKEN] = {"active": False}
    assert await refused(uncached, TOKEN) == "token is not active"
    assert ep.hits == 3


async def test_cache_never_outlives_the_token(endpoint: tuple[IntrospectionEndpoint, str]) -> None:
    ep, url = endpoint
    ep.answers["short"] = active(exp=time.time() + 0.5)
    v = verifier(ep, url, leeway=0)
    await v.verify("short")
    await asyncio.sleep(0.6)
    assert await refused(v, "short") == "token expired"
    assert ep.hits == 2


async def test_refusals_are_cached_briefly(endpoint: tuple[IntrospectionEndpoint, str]) -> None:
    ep, url = endpoint
    v = verifier(ep, url, negative_cache_ttl=0.3)
    assert await refused(v, "bad-token-1") == "token is not active"
    assert await refused(v, "bad-token-1") == "token is not active"
    assert ep.hits == 1
    await asyncio.sleep(0.35)
    await refused(v, "bad-token-1")
    assert ep.hits == 2
    off = verifier(ep, url, negative_cache_ttl=0)
    await refused(off, "bad-token-1")
    await refused(off, "bad-token-1")
    assert ep.hits == 4


async def test_concurrent_requests_with_one_new_token_share_one_call(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    ep.delay = 0.2
    v = verifier(ep, url)
    infos = await asyncio.gather(*(v.verify(TOKEN) for _ in range(25)))
    assert {i.subject for i in infos} == {"user-1"}
    assert ep.hits == 1


async def test_endpoint_errors_are_verifier_unavailable(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    ep.status = 500
    with pytest.raises(VerifierUnavailable, match="HTTP 500"):
        await verifier(ep, url).verify(TOKEN)
    ep.status = 200
    ep.raw_body = b"<html>maintenance</html>"
    with pytest.raises(VerifierUnavailable, match="JSON"):
        await verifier(ep, url).verify(TOKEN)
    ep.raw_body = None
    ep.delay = 0.8
    with pytest.raises(VerifierUnavailable, match="did not answer within"):
        await verifier(ep, url, timeout=0.3).verify(TOKEN)
    # Failures are not cached: the endpoint back, the token is checked again.
    ep.delay = 0.0
    assert (await verifier(ep, url).verify(TOKEN)).subject == "user-1"


async def test_unreachable_endpoint_is_verifier_unavailable() -> None:
    ep = IntrospectionEndpoint()
    async with run_app(ep.app()) as base:
        url = f"{base}/introspect"
    v = verifier(ep, url)
    with pytest.raises(VerifierUnavailable, match="could not be reached"):
        await v.verify(TOKEN)


async def test_one_verifier_serves_several_event_loops(
    endpoint: tuple[IntrospectionEndpoint, str],
) -> None:
    ep, url = endpoint
    ep.answers["second"] = active(sub="user-2")
    v = verifier(ep, url)
    assert (await v.verify(TOKEN)).subject == "user-1"
    # asyncio.run in another thread: a new loop, where the first loop's pooled
    # connection cannot be used; the verifier makes a client for that loop.
    info = await asyncio.to_thread(asyncio.run, v.verify("second"))
    assert info.subject == "user-2"
    assert ep.hits == 2
    await v.aclose()


def test_configuration_mistakes_are_refused_early() -> None:
    with pytest.raises(ConfigurationError, match="client_id and client_secret"):
        IntrospectionVerifier(
            endpoint="https://a/introspect", audience=RESOURCE, client_auth="client_secret_post"
        )
    with pytest.raises(ConfigurationError, match="https"):
        IntrospectionVerifier(endpoint="http://idp.example.com/introspect", audience=RESOURCE)
    with pytest.raises(TypeError):
        IntrospectionVerifier(endpoint="https://a/introspect")  # type: ignore[call-arg]
    v = IntrospectionVerifier(
        endpoint="https://a/introspect", audience=RESOURCE, client_id="c", client_secret="hush"
    )
    assert v.client_auth == "client_secret_basic"
    assert "hush" not in repr(v)
