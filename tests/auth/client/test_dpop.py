"""DPoP proofs (RFC 9449) and private_key_jwt assertions (RFC 7523), checked as a server would."""

from __future__ import annotations

import base64
import hashlib
import json
import time

import httpx
import pytest
from joserfc import jwk, jwt
from joserfc.jwk import ECKey, RSAKey

from mcpkit.auth.client.assertions import CLIENT_ASSERTION_TYPE, PrivateKeyJWT
from mcpkit.auth.client.dpop import DPoPKey, DPoPSigner, ath, htu
from tests.auth.client.oauth_peers import verify_dpop_proof


def _header(token: str) -> dict[str, object]:
    return dict(json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "==")))


def test_a_proof_verifies_with_the_key_in_its_header_and_binds_the_request() -> None:
    key = DPoPKey()
    proof = key.proof("post", "https://as.example/token?x=1#frag", nonce="n-1")
    header = _header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    public = header["jwk"]
    assert isinstance(public, dict) and "d" not in public
    claims = jwt.decode(proof, jwk.import_key(public, "EC"), algorithms=["ES256"]).claims
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://as.example/token"  # no query, no fragment (§ 4.2)
    assert claims["nonce"] == "n-1"
    assert abs(claims["iat"] - time.time()) < 5
    assert "ath" not in claims
    # The thumbprint is RFC 7638's, the one the server puts in cnf.jkt.
    assert key.thumbprint() == jwk.import_key(public, "EC").thumbprint()


def test_every_proof_has_a_fresh_jti_and_ath_is_the_token_hash() -> None:
    key = DPoPKey()
    seen: set[str] = set()
    for _ in range(3):
        proof = key.proof("GET", "https://rs.example/mcp", access_token="tok-123")
        problem, jkt, _ = verify_dpop_proof(
            proof,
            method="GET",
            url="https://rs.example/mcp",
            seen_jtis=seen,
            access_token="tok-123",
        )
        assert problem is None and jkt == key.thumbprint()
    assert len(seen) == 3
    digest = hashlib.sha256(b"tok-123").digest()
    assert ath("tok-123") == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert htu("https://a.example:8443/p/q?z#f") == "https://a.example:8443/p/q"


def test_a_kept_key_gives_the_same_thumbprint_and_symmetric_algorithms_are_refused() -> None:
    pem = ECKey.generate_key("P-256").as_pem(private=True)
    assert DPoPKey(pem).thumbprint() == DPoPKey(pem.decode()).thumbprint()
    with pytest.raises(ValueError):
        DPoPKey(algorithm="HS256")
    public_only = ECKey.generate_key("P-256").as_pem(private=False)
    with pytest.raises(ValueError):
        DPoPKey(public_only)
    assert "BEGIN" not in repr(DPoPKey(pem))


def test_nonces_are_remembered_per_server_and_only_a_real_challenge_is_retried() -> None:
    signer = DPoPSigner()
    as_url, rs_url = "http://127.0.0.1:1/token", "http://127.0.0.1:2/mcp"
    # AS: 400 {"error": "use_dpop_nonce"} with DPoP-Nonce (§ 8).
    assert signer.needs_nonce_retry(
        as_url, 400, {"DPoP-Nonce": "as-n"}, b'{"error":"use_dpop_nonce"}'
    )
    # RS: 401 with WWW-Authenticate DPoP error="use_dpop_nonce" (§ 9).
    headers = httpx.Headers(
        {"WWW-Authenticate": 'DPoP error="use_dpop_nonce", algs="ES256"', "DPoP-Nonce": "rs-n"}
    )
    assert signer.needs_nonce_retry(rs_url, 401, headers)
    assert signer.nonce_for(as_url) == "as-n" and signer.nonce_for(rs_url) == "rs-n"
    proof = signer.headers_for_resource("POST", rs_url, "tok")["DPoP"]
    assert jwt.decode(proof, jwk.import_key(_header(proof)["jwk"], "EC")).claims["nonce"] == "rs-n"
    # Other errors, or a challenge without a nonce, are not retried.
    assert not signer.needs_nonce_retry(as_url, 400, {}, b'{"error":"use_dpop_nonce"}')
    assert not signer.needs_nonce_retry(
        as_url, 400, {"DPoP-Nonce": "x"}, b'{"error":"invalid_grant"}'
    )
    assert not signer.needs_nonce_retry(
        rs_url, 401, {"DPoP-Nonce": "y", "WWW-Authenticate": "DPoP"}
    )


@pytest.mark.parametrize("algorithm", ["ES256", "RS256"])
def test_a_client_assertion_is_signed_for_the_issuer_with_a_fresh_jti(algorithm: str) -> None:
    key = ECKey.generate_key("P-256") if algorithm == "ES256" else RSAKey.generate_key(2048)
    signer = PrivateKeyJWT(key.as_pem(private=True).decode(), algorithm=algorithm, key_id="k1")
    form = signer.form("svc", "https://as.example")
    assert form["client_assertion_type"] == CLIENT_ASSERTION_TYPE
    public = jwk.import_key(key.as_dict(private=False), "EC" if algorithm == "ES256" else "RSA")
    token = jwt.decode(form["client_assertion"], public, algorithms=[algorithm])
    assert token.header["kid"] == "k1"
    claims = token.claims
    assert claims["iss"] == claims["sub"] == "svc"
    assert claims["aud"] == "https://as.example"
    assert 0 < claims["exp"] - claims["iat"] <= 60
    other = jwt.decode(signer.assertion("svc", "https://as.example"), public).claims
    assert other["jti"] != claims["jti"]
    assert "PRIVATE" not in repr(signer)


def test_a_public_key_or_an_hmac_algorithm_is_refused_for_private_key_jwt() -> None:
    key = ECKey.generate_key("P-256")
    with pytest.raises(ValueError):
        PrivateKeyJWT(key.as_pem(private=False).decode(), algorithm="ES256")
    with pytest.raises(ValueError):
        PrivateKeyJWT(key.as_pem(private=True).decode(), algorithm="HS256")
