"""``private_key_jwt`` at the authorization server: client assertions checked (RFC 7523).

A client described by a metadata document may authenticate at ``/token`` and
``/revoke`` with a JWT it signed (RFC 7523 § 2.2; MCP authorization § client ID metadata
documents): ``client_assertion_type`` ``urn:ietf:params:oauth:client-assertion-type:
jwt-bearer`` and ``client_assertion``. It is checked with :class:`~mcpkit.auth.jwt.JWTVerifier`
against the keys kept with the client's record: ``iss`` and ``sub`` are the client id,
``aud`` names this server's issuer or its token endpoint (RFC 7523 § 3; the update of
RFC 7523 asks for the issuer alone, and both are accepted here), ``exp`` is present and
not past, the signature is asymmetric. A client that rotated its keys is read again
(its document and ``jwks_uri``) once the kept copy is a minute old.

Each assertion is single use (RFC 7523 § 3, item 7): its ``jti`` is spent in the same
token buckets the rate limits use, a bucket of one token per assertion that refills once
the assertion has expired, so a replay is refused on every node that shares Redis.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import TYPE_CHECKING, Any, Final

from ...errors import InvalidToken, MCPKitError, VerifierUnavailable
from ..jwt import DEFAULT_ALGORITHMS, JWTVerifier
from .client_documents import DocumentRefused, is_document_url
from .http import OAuthError

if TYPE_CHECKING:
    from .context import ServerContext
    from .storage import RegisteredClient

__all__ = [
    "ASSERTION_TYPE",
    "asserted_client",
    "assertion_metadata",
    "document_client",
    "verify_assertion",
]

ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# draft-ietf-oauth-rfc7523bis § 4: the explicit type of a client authentication JWT.
_ASSERTION_TYP: Final = "client-authentication+jwt"
_REREAD_AFTER: Final = 60.0
_LEEWAY: Final = 60.0
_MAX_ASSERTION: Final = 16 * 1024


def _segment(assertion: str, index: int) -> dict[str, Any]:
    """A compact JWS's header (0) or payload (1) as JSON, unverified; {} when malformed."""
    parts = assertion.split(".")
    if len(parts) != 3 or len(assertion) > _MAX_ASSERTION:
        return {}
    part = parts[index]
    try:
        data = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def asserted_client(assertion: str) -> str | None:
    """The ``sub`` an assertion claims, unverified: which client's keys to check it with."""
    sub = _segment(assertion, 1).get("sub")
    return sub if isinstance(sub, str) and sub else None


def _invalid_client(description: str) -> OAuthError:
    return OAuthError("invalid_client", description, status=401)


async def document_client(
    proxy: ServerContext, client_id: str, address: str
) -> RegisteredClient | None:
    """The client a metadata document describes, fetched again (its record expired, or
    its keys changed); None when ``client_id`` names no document or documents are off."""
    documents = proxy.client_documents
    if documents is None or not is_document_url(client_id):
        return None
    # A fetch becomes a client record, as a registration does: the same limit.
    wait = await proxy.registration_limiter.allow(address)
    if wait is not None:
        raise OAuthError(
            "temporarily_unavailable",
            "too many client metadata documents fetched from this address; retry later",
            status=429,
            headers=[(b"retry-after", str(int(wait)).encode())],
        )
    try:
        client = await documents.fetch(client_id)
    except DocumentRefused as exc:
        raise _invalid_client(f"the client metadata document was refused: {exc}") from None
    await proxy.storage.save_client(client)
    return client


async def verify_assertion(
    proxy: ServerContext, client: RegisteredClient, assertion: str, address: str
) -> RegisteredClient:
    """``client`` when ``assertion`` authenticates it (re-read when its keys changed),
    else ``invalid_client``."""
    try:
        await _check(proxy, client, assertion)
        return client
    except InvalidToken as exc:
        stale = time.time() - client.issued_at >= _REREAD_AFTER
        if not stale or not ("key" in str(exc) or "signature" in str(exc)):
            raise _invalid_client(f"the client assertion was refused: {exc}") from None
    # An unknown key, or none that fits: the client may have rotated its keys.
    fresh = await document_client(proxy, client.client_id, address)
    if fresh is None or fresh.token_endpoint_auth_method != "private_key_jwt":
        raise _invalid_client("the client no longer authenticates with private_key_jwt")
    try:
        await _check(proxy, fresh, assertion)
    except InvalidToken as exc:
        raise _invalid_client(f"the client assertion was refused: {exc}") from None
    return fresh


async def _check(proxy: ServerContext, client: RegisteredClient, assertion: str) -> None:
    jwks = client.metadata.get("jwks")
    if not isinstance(jwks, dict):
        raise _invalid_client("the client has no keys for private_key_jwt")
    alg = client.metadata.get("token_endpoint_auth_signing_alg")
    token_endpoint = proxy.metadata()["token_endpoint"]
    try:
        verifier = JWTVerifier(
            issuer=client.client_id,
            audience=[proxy.issuer, token_endpoint],
            keys=jwks,
            algorithms=(alg,) if isinstance(alg, str) else DEFAULT_ALGORITHMS,
            leeway=_LEEWAY,
            accept_types=(_ASSERTION_TYP,),
            cache_size=1,
        )
    except MCPKitError:
        raise _invalid_client("the client's keys cannot be used") from None
    try:
        info = await verifier.verify(assertion)
    except VerifierUnavailable as exc:  # static keys: not expected, but never a 500
        raise InvalidToken(str(exc)) from None
    # The header is signed, so read after the check: an access token is no assertion
    # (RFC 8725 § 3.11, explicit typing), whoever signed it.
    typ = _segment(assertion, 0).get("typ")
    if isinstance(typ, str) and typ.lower() in ("at+jwt", "application/at+jwt"):
        raise InvalidToken("an access token is not a client assertion")
    claims = info.claims
    if claims.get("sub") != client.client_id:
        raise InvalidToken("sub must be the client id (RFC 7523 § 3)")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti or len(jti) > 256:
        raise InvalidToken("jti is required (each assertion is used once)")
    exp = claims["exp"]
    ttl = max(float(exp) - time.time() + _LEEWAY, 1.0)
    key = "jti:" + hashlib.sha256(f"{client.client_id}\n{jti}".encode()).hexdigest()
    # One token, refilled after the assertion expired: taken once, refused after that.
    wait = await proxy.replay_buckets.take(key, rate=1.0 / ttl, burst=1.0, cost=1.0)
    if wait > 0.0:
        raise _invalid_client("the client assertion was used before")


def assertion_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The RFC 8414 entries that announce ``private_key_jwt`` (§ 2: with its algorithms)."""
    extra: dict[str, Any] = {}
    for name in ("token_endpoint", "revocation_endpoint"):
        methods = list(metadata.get(f"{name}_auth_methods_supported", ()))
        extra[f"{name}_auth_methods_supported"] = [*methods, "private_key_jwt"]
        extra[f"{name}_auth_signing_alg_values_supported"] = list(DEFAULT_ALGORITHMS)
    return extra
