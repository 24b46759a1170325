"""JWTVerifier edge cases: time claims that are not finite numbers, and the bound on the
keys a token without ``kid`` is tried against (a 2,500-key set served by a real JWKS
endpoint)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from joserfc import jws
from joserfc.jwk import ECKey, Key, RSAKey

from mcpkit.auth import JWTVerifier
from mcpkit.auth.jwt import DEFAULT_MAX_KEYS_TRIED
from mcpkit.errors import ConfigurationError, InvalidToken
from tests.auth.verifier_endpoints import ISSUER, RESOURCE, JWKSEndpoint, claims_for, sign
from tests.transports.conftest import run_app

RSA = RSAKey.generate_key(2048, parameters={"kid": "default"})


def signed_raw(key: Key, payload: str, *, alg: str = "RS256", kid: str | None = "default") -> str:
    """A token whose payload is ``payload`` verbatim: JSON with NaN or Infinity, which no
    JSON library writes on purpose (an issuer's bug, or an attacker's own key)."""
    header: dict[str, Any] = {"alg": alg, "typ": "at+jwt"}
    if kid is not None:
        header["kid"] = kid
    return jws.serialize_compact(header, payload.encode(), key, algorithms=[alg])


def payload_with(name: str, raw: str) -> str:
    """Valid claims as JSON text, with claim ``name`` written as ``raw``."""
    body = json.dumps({k: v for k, v in claims_for().items() if k != name})
    return body[:-1] + f', "{name}": {raw}}}'


async def refused(v: JWTVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as info:
        await v.verify(token)
    return str(info.value)


# -- time claims -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["NaN", "Infinity", "-Infinity", "1e400", pytest.param("1" + "0" * 400, id="10**400")]
)
async def test_an_exp_that_is_not_a_finite_number_is_refused(raw: str) -> None:
    v = JWTVerifier(keys=RSA.as_pem(private=False), issuer=ISSUER, audience=RESOURCE)
    token = signed_raw(RSA, payload_with("exp", raw))
    assert await refused(v, token) == "token claim 'exp' is not a finite number"
    assert len(v._cache) == 0


@pytest.mark.parametrize("name", ["nbf", "iat"])
@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity"])
async def test_nbf_and_iat_that_are_not_finite_numbers_are_refused(name: str, raw: str) -> None:
    v = JWTVerifier(keys=RSA.as_pem(private=False), issuer=ISSUER, audience=RESOURCE)
    token = signed_raw(RSA, payload_with(name, raw))
    assert await refused(v, token) == f"token claim '{name}' is not a finite number"


@pytest.mark.parametrize("name", ["exp", "nbf", "iat"])
@pytest.mark.parametrize("raw", ["true", "false", '"1999999999"', "[1999999999]", "{}"])
async def test_time_claims_that_are_not_numbers_are_refused(name: str, raw: str) -> None:
    v = JWTVerifier(keys=RSA.as_pem(private=False), issuer=ISSUER, audience=RESOURCE)
    token = signed_raw(RSA, payload_with(name, raw))
    assert await refused(v, token) == f"token claim '{name}' is not a number"


async def test_finite_time_claims_still_verify() -> None:
    v = JWTVerifier(keys=RSA.as_pem(private=False), issuer=ISSUER, audience=RESOURCE)
    now = int(time.time())
    token = signed_raw(RSA, payload_with("exp", f"{now + 300}.5"))
    assert (await v.verify(token)).expires_at == now + 300.5


# -- the keys a token without kid is tried against ---------------------------------------------


class CountingVerifier(JWTVerifier):
    """Counts the signature checks (each one a public-key operation)."""

    checks = 0

    def _signed_by(self, obj: Any, key: Key) -> bool:
        self.checks += 1
        return super()._signed_by(obj, key)


@pytest.fixture(scope="module")
def many_ec_keys() -> list[ECKey]:
    return [ECKey.generate_key("P-256", parameters={"kid": f"k{i}"}) for i in range(2500)]


@pytest.fixture
async def big_jwks(many_ec_keys: list[ECKey]) -> AsyncIterator[str]:
    endpoint = JWKSEndpoint(keys=many_ec_keys)
    async with run_app(endpoint.app()) as url:
        yield f"{url}/jwks"


async def test_a_token_without_kid_is_not_tried_against_2500_keys(
    big_jwks: str, many_ec_keys: list[ECKey]
) -> None:
    v = CountingVerifier(jwks_uri=big_jwks, issuer=ISSUER, audience=RESOURCE)
    forger = ECKey.generate_key("P-256")
    started = time.process_time()
    for _ in range(5):
        message = await refused(v, sign(forger, alg="ES256", kid=None))
    spent = time.process_time() - started
    assert message == (
        "token names no signing key ('kid') and 2500 keys fit it; "
        f"at most {DEFAULT_MAX_KEYS_TRIED} are tried"
    )
    assert v.checks == 0
    # Even a token really signed by one of them: without its kid, it is refused.
    assert "2500 keys" in await refused(v, sign(many_ec_keys[7], alg="ES256", kid=None))
    assert v.checks == 0
    assert spent < 1.0  # was 5 x 2,500 signature checks, over a second
    # With its kid, one check.
    info = await v.verify(sign(many_ec_keys[7], alg="ES256", kid="k7"))
    assert info.subject == "user-1" and v.checks == 1
    await v.aclose()


async def test_a_token_without_kid_still_verifies_against_a_small_key_set() -> None:
    keys = [ECKey.generate_key("P-256", parameters={"kid": f"s{i}"}) for i in range(3)]
    v = CountingVerifier(
        keys={"keys": [k.as_dict(private=False) for k in keys]}, issuer=ISSUER, audience=RESOURCE
    )
    info = await v.verify(sign(keys[2], alg="ES256", kid=None))
    assert info.subject == "user-1"
    assert v.checks <= 3
    # A PEM key has no kid at all: a token naming none is checked against it.
    pem = JWTVerifier(keys=RSA.as_pem(private=False), issuer=ISSUER, audience=RESOURCE)
    assert (await pem.verify(sign(RSA, kid=None))).subject == "user-1"


async def test_the_bound_counts_only_keys_that_fit_the_algorithm_and_is_configurable() -> None:
    ec = [ECKey.generate_key("P-256", parameters={"kid": f"e{i}"}) for i in range(6)]
    rsa_public = RSA.as_dict(private=False)
    jwks = {"keys": [rsa_public, *(k.as_dict(private=False) for k in ec)]}
    v = CountingVerifier(keys=jwks, issuer=ISSUER, audience=RESOURCE)
    # Six EC keys fit ES256: more than the default bound.
    assert "6 keys fit it" in await refused(v, sign(ec[0], alg="ES256", kid=None))
    # One RSA key fits RS256: tried.
    assert (await v.verify(sign(RSA, kid=None))).subject == "user-1"
    assert v.checks == 1
    wider = CountingVerifier(keys=jwks, issuer=ISSUER, audience=RESOURCE, max_keys_tried=6)
    assert (await wider.verify(sign(ec[5], alg="ES256", kid=None))).subject == "user-1"
    assert wider.checks <= 6
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ConfigurationError, match="max_keys_tried"):
            JWTVerifier(keys=jwks, issuer=ISSUER, audience=RESOURCE, max_keys_tried=bad)  # type: ignore[arg-type]
