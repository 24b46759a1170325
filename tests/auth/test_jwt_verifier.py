"""JWTVerifier against real tokens: keys generated here, served by a real JWKS endpoint."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from joserfc import jws
from joserfc.jwk import ECKey, OKPKey, RSAKey

from mcpkit.auth import JWTVerifier
from mcpkit.errors import ConfigurationError, InsufficientScope, InvalidToken, VerifierUnavailable
from tests.auth.verifier_endpoints import ISSUER, RESOURCE, JWKSEndpoint, forge_hs256, sign
from tests.transports.conftest import run_app

RSA = RSAKey.generate_key(2048, parameters={"kid": "default"})
EC = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})


@pytest.fixture
async def jwks() -> AsyncIterator[tuple[JWKSEndpoint, str]]:
    endpoint = JWKSEndpoint(keys=[RSA, EC])
    async with run_app(endpoint.app()) as url:
        yield endpoint, f"{url}/jwks"


def verifier(uri: str, **options: Any) -> JWTVerifier:
    return JWTVerifier(jwks_uri=uri, issuer=ISSUER, audience=RESOURCE, **options)


async def refused(v: JWTVerifier, token: str) -> str:
    """The refusal's message; it must never contain the token."""
    with pytest.raises(InvalidToken) as info:
        await v.verify(token)
    message = str(info.value)
    for part in [token, *token.split(".")]:
        assert len(part) < 8 or part not in message
    return message


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


# -- accepted tokens -------------------------------------------------------------------------


async def test_valid_token_gives_its_auth_info(jwks: tuple[JWKSEndpoint, str]) -> None:
    endpoint, uri = jwks
    token = sign(RSA)
    info = await verifier(uri).verify(token)
    assert info.token == token
    assert info.subject == "user-1"
    assert info.client_id == "client-1"
    assert info.issuer == ISSUER
    assert info.resource == RESOURCE
    assert info.scopes == {"mcp:read", "mcp:write"}
    assert info.expires_at is not None and info.expires_at > time.time()
    assert info.claims["jti"].startswith("jti-")
    assert endpoint.hits == 1


async def test_ec_signed_token_is_accepted(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    info = await verifier(uri).verify(sign(EC, alg="ES256", kid="ec-1"))
    assert info.subject == "user-1"


async def test_static_pem_and_jwk_keys_need_no_endpoint() -> None:
    pem = RSA.as_pem(private=False)
    assert (await JWTVerifier(keys=pem, issuer=ISSUER, audience=RESOURCE).verify(sign(RSA))).subject
    ed = OKPKey.generate_key("Ed25519", parameters={"kid": "ed"})
    v = JWTVerifier(keys={"keys": [ed.as_dict(private=False)]}, issuer=ISSUER, audience=RESOURCE)
    assert (await v.verify(sign(ed, alg="Ed25519", kid="ed"))).client_id == "client-1"


async def test_audience_list_accepts_any_of_its_members(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    v = JWTVerifier(jwks_uri=uri, issuer=ISSUER, audience=["https://other", RESOURCE])
    info = await v.verify(sign(RSA, aud=["https://unrelated", RESOURCE]))
    assert info.resource == RESOURCE


async def test_scopes_from_scope_or_scp_and_client_id_from_azp(
    jwks: tuple[JWKSEndpoint, str],
) -> None:
    _, uri = jwks
    v = verifier(uri)
    listed = await v.verify(sign(RSA, scope=None, scp=["a", "b"], client_id=None, azp="app-2"))
    assert listed.scopes == {"a", "b"}
    assert listed.client_id == "app-2"
    spaced = await v.verify(sign(RSA, scope=None, scp="c d"))
    assert spaced.scopes == {"c", "d"}
    assert (await v.verify(sign(RSA, scope="x"))).scopes == {"x"}


async def test_expiry_within_leeway_is_accepted(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    token = sign(RSA, exp=int(time.time()) - 20)
    assert (await verifier(uri, leeway=60).verify(token)).subject == "user-1"
    assert await refused(verifier(uri, leeway=5), token) == "token expired"


# -- refused tokens --------------------------------------------------------------------------


async def test_expired_token_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    token = sign(RSA, iat=int(time.time()) - 4000, exp=int(time.time()) - 3600)
    assert await refused(verifier(uri), token) == "token expired"


async def test_not_yet_valid_token_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    message = await refused(verifier(uri), sign(RSA, nbf=int(time.time()) + 600))
    assert "not yet valid" in message


async def test_token_issued_in_the_future_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    assert "future" in await refused(verifier(uri), sign(RSA, iat=int(time.time()) + 600))


async def test_wrong_issuer_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    assert await refused(verifier(uri), sign(RSA, iss="https://evil.example.com")) == "wrong issuer"
    # No normalisation: a trailing slash is another issuer.
    assert await refused(verifier(uri), sign(RSA, iss=ISSUER + "/")) == "wrong issuer"


async def test_token_for_another_resource_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    message = await refused(verifier(uri), sign(RSA, aud="https://other.example.com/mcp"))
    assert "wrong audience" in message
    assert "no audience" in await refused(verifier(uri), sign(RSA, aud=None))


async def test_missing_exp_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    assert "no expiry" in await refused(verifier(uri), sign(RSA, exp=None))


async def test_alg_none_is_refused_without_fetching_keys(jwks: tuple[JWKSEndpoint, str]) -> None:
    endpoint, uri = jwks
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "x", "exp": now + 300}
    for alg in ("none", "None", "NONE"):
        token = f"{b64({'alg': alg, 'kid': 'default'})}.{b64(claims)}."
        assert "algorithm not allowed" in await refused(verifier(uri), token)
    assert endpoint.hits == 0
    with pytest.raises(ConfigurationError):
        verifier(uri, algorithms=["RS256", "none"])


async def test_hmac_signed_with_the_public_key_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    pem = RSA.as_pem(private=False)
    forged = forge_hs256(pem)
    # The default allow-list has no HMAC at all ...
    assert "algorithm not allowed" in await refused(verifier(uri), forged)
    # ... and where HMAC is allowed, an RSA public key is never used as its secret.
    lax = JWTVerifier(keys=pem, issuer=ISSUER, audience=RESOURCE, algorithms=["RS256", "HS256"])
    assert "no key" in await refused(lax, forged)
    assert (await lax.verify(sign(RSA))).subject == "user-1"
    # And a JWKS URL can never enable HMAC.
    with pytest.raises(ConfigurationError, match="HMAC"):
        verifier(uri, algorithms=["HS256"])


async def test_rsa_key_id_with_an_ec_algorithm_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    # Signed by the EC key, but naming the RSA key's kid: the key type must fit the alg.
    assert "unknown signing key" in await refused(
        verifier(uri, jwks_refresh_interval=60), sign(EC, alg="ES256", kid="default")
    )


async def test_tampered_token_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    header, payload, signature = sign(RSA).split(".")
    flipped = ("A" if signature[10] != "A" else "B").join((signature[:10], signature[11:]))
    assert await refused(verifier(uri), f"{header}.{payload}.{flipped}") == (
        "invalid token signature"
    )
    now = int(time.time())
    raised = b64({"iss": ISSUER, "aud": RESOURCE, "sub": "admin", "exp": now + 300})
    assert await refused(verifier(uri), f"{header}.{raised}.{signature}") == (
        "invalid token signature"
    )


async def test_token_signed_by_another_key_with_a_known_kid_is_refused(
    jwks: tuple[JWKSEndpoint, str],
) -> None:
    _, uri = jwks
    impostor = RSAKey.generate_key(2048, parameters={"kid": "default"})
    assert await refused(verifier(uri), sign(impostor)) == "invalid token signature"


async def test_malformed_tokens_are_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    endpoint, uri = jwks
    v = verifier(uri)
    for token in ("", "opaque-token", "a.b.c", "a.b.c.d.e", "é.é.é", "x" * 20_000):
        assert "malformed" in await refused(v, token)
    assert endpoint.hits == 0


async def test_typ_of_another_kind_of_jwt_is_refused(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    assert "another kind" in await refused(verifier(uri), sign(RSA, typ="dpop+jwt"))
    assert (await verifier(uri).verify(sign(RSA, typ="JWT"))).subject == "user-1"
    strict = verifier(uri, require_at_jwt=True)
    assert "at+jwt" in await refused(strict, sign(RSA, typ="JWT"))
    assert "at+jwt" in await refused(strict, sign(RSA, typ=None))
    assert (await strict.verify(sign(RSA, typ="application/at+jwt"))).subject == "user-1"


async def test_required_scopes_missing_is_insufficient_scope(
    jwks: tuple[JWKSEndpoint, str],
) -> None:
    _, uri = jwks
    v = verifier(uri, required_scopes=["mcp:admin"])
    with pytest.raises(InsufficientScope) as info:
        await v.verify(sign(RSA))
    assert info.value.scopes == ("mcp:admin",)
    assert (await v.verify(sign(RSA, scope="mcp:admin"))).scopes == {"mcp:admin"}


# -- keys: rotation, rate limit, failures ----------------------------------------------------


async def test_unknown_kid_refetches_and_accepts_the_rotated_key(
    jwks: tuple[JWKSEndpoint, str],
) -> None:
    endpoint, uri = jwks
    v = verifier(uri, jwks_refresh_interval=0.2)
    await v.verify(sign(RSA))
    assert endpoint.hits == 1
    rotated = RSAKey.generate_key(2048, parameters={"kid": "rotated"})
    token = sign(rotated, kid="rotated")
    await asyncio.sleep(0.25)
    endpoint.keys = [rotated]  # the issuer rotates: the old key is gone
    info = await v.verify(token)
    assert info.subject == "user-1"
    assert endpoint.hits == 2
    assert (await v.verify(sign(rotated, kid="rotated"))).subject == "user-1"
    assert "unknown signing key" in await refused(v, sign(RSA))  # old key no longer served
    assert endpoint.hits == 2  # that refusal was inside the refresh interval: no request


async def test_flood_of_unknown_kids_is_rate_limited(jwks: tuple[JWKSEndpoint, str]) -> None:
    endpoint, uri = jwks
    v = verifier(uri, jwks_refresh_interval=0.5)
    await v.verify(sign(RSA))
    await asyncio.sleep(0.55)
    start, hits_before = time.monotonic(), endpoint.hits
    bogus = RSAKey.generate_key(2048)
    while time.monotonic() - start < 1.2:
        for i in range(20):
            assert "unknown signing key" in await refused(v, sign(bogus, kid=f"bogus-{i}"))
        await asyncio.sleep(0.05)
    elapsed = time.monotonic() - start
    # One refresh at most per 0.5 s: at the start, then after each interval.
    assert 1 <= endpoint.hits - hits_before <= 1 + int(elapsed / 0.5)


async def test_concurrent_refreshes_share_one_request(jwks: tuple[JWKSEndpoint, str]) -> None:
    endpoint, uri = jwks
    endpoint.delay = 0.2
    v = verifier(uri)
    tokens = [sign(RSA, sub=f"user-{i}") for i in range(30)]
    infos = await asyncio.gather(*(v.verify(t) for t in tokens))
    assert [i.subject for i in infos] == [f"user-{i}" for i in range(30)]
    assert endpoint.hits == 1


async def test_cached_verification_skips_signature_checks(
    jwks: tuple[JWKSEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, uri = jwks
    calls = 0
    real = jws.validate_compact

    def counting(*args: Any, **kwargs: Any) -> bool:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(jws, "validate_compact", counting)
    v = verifier(uri)
    token = sign(RSA)
    first = await v.verify(token)
    assert calls == 1
    for _ in range(100):
        assert await v.verify(token) is first
    assert calls == 1
    await v.verify(sign(RSA, sub="other"))
    assert calls == 2


async def test_cache_never_outlives_the_token(jwks: tuple[JWKSEndpoint, str]) -> None:
    _, uri = jwks
    v = verifier(uri, leeway=0)
    token = sign(RSA, exp=time.time() + 0.5)  # a NumericDate may have a fraction
    await v.verify(token)
    await asyncio.sleep(0.6)
    assert await refused(v, token) == "token expired"


async def test_old_key_sets_are_refetched(jwks: tuple[JWKSEndpoint, str]) -> None:
    endpoint, uri = jwks
    v = verifier(uri, jwks_max_age=0.2, jwks_refresh_interval=0.0)
    await v.verify(sign(RSA))
    await v.verify(sign(RSA, sub="again"))
    assert endpoint.hits == v.jwks_fetches == 1
    await asyncio.sleep(0.25)
    await v.verify(sign(RSA, sub="later"))
    assert endpoint.hits == 2
    # A failed refresh of an old set keeps the keys it had.
    await asyncio.sleep(0.25)
    endpoint.status = 500
    assert (await v.verify(sign(RSA, sub="during outage"))).subject == "during outage"
    assert endpoint.hits == 3


async def test_jwks_endpoint_down_is_verifier_unavailable(jwks: tuple[JWKSEndpoint, str]) -> None:
    endpoint, uri = jwks
    endpoint.status = 500
    v = verifier(uri, jwks_refresh_interval=0.0)
    with pytest.raises(VerifierUnavailable, match="HTTP 500"):
        await v.verify(sign(RSA))
    # The endpoint comes back: the next token is checked normally.
    endpoint.status = 200
    assert (await v.verify(sign(RSA))).subject == "user-1"


async def test_unreachable_or_slow_jwks_is_verifier_unavailable(
    jwks: tuple[JWKSEndpoint, str],
) -> None:
    endpoint, uri = jwks
    async with run_app(JWKSEndpoint().app()) as other:
        closed = f"{other}/jwks"
    with pytest.raises(VerifierUnavailable, match="could not be reached"):
        await verifier(closed).verify(sign(RSA))
    endpoint.delay = 0.8
    with pytest.raises(VerifierUnavailable, match="did not answer within"):
        await verifier(uri, timeout=0.3).verify(sign(RSA))


async def test_rotation_while_the_endpoint_is_down_is_unavailable_not_invalid(
    jwks: tuple[JWKSEndpoint, str],
) -> None:
    endpoint, uri = jwks
    v = verifier(uri, jwks_refresh_interval=0.0)
    await v.verify(sign(RSA))
    endpoint.status = 503
    new = RSAKey.generate_key(2048, parameters={"kid": "new"})
    with pytest.raises(VerifierUnavailable):
        await v.verify(sign(new, kid="new"))
    # Tokens signed with the keys already known are still checked locally.
    assert (await v.verify(sign(RSA, sub="still-ok"))).subject == "still-ok"


# -- configuration ---------------------------------------------------------------------------


def test_configuration_mistakes_are_refused_early() -> None:
    pem = RSA.as_pem(private=False)
    with pytest.raises(ConfigurationError, match="exactly one"):
        JWTVerifier(issuer=ISSUER, audience=RESOURCE)
    with pytest.raises(ConfigurationError, match="exactly one"):
        JWTVerifier(keys=pem, jwks_uri="https://a/jwks", issuer=ISSUER, audience=RESOURCE)
    with pytest.raises(ConfigurationError, match="audience"):
        JWTVerifier(keys=pem, issuer=ISSUER, audience=[])
    with pytest.raises(ConfigurationError, match="https"):
        JWTVerifier(jwks_uri="http://idp.example.com/jwks", issuer=ISSUER, audience=RESOURCE)
    with pytest.raises(ConfigurationError, match="public key"):
        JWTVerifier(keys=RSA.as_pem(private=True), issuer=ISSUER, audience=RESOURCE)
    with pytest.raises(ConfigurationError, match="unsafe"):
        JWTVerifier(keys=pem, issuer=ISSUER, audience=RESOURCE, algorithms=["XS256"])
