"""Signed JWT assertions a client sends to a token endpoint (RFC 7521, RFC 7523).

Two uses share one signer:

* client authentication with ``private_key_jwt`` (RFC 7523 § 2.2, OpenID
  Connect Core § 9): ``client_assertion_type=urn:ietf:params:oauth:client-
  assertion-type:jwt-bearer`` and ``client_assertion=<JWT>``, where the JWT says
  ``iss = sub = client_id``;
* the JWT bearer *grant* (RFC 7523 § 2.1) takes an assertion the client did not
  sign (an ID-JAG from an enterprise IdP, a workload identity token); that one is
  passed through as it is, see :mod:`.grants_ext`.

The audience is the authorization server's issuer identifier: RFC 7523 § 3
allows the token endpoint URL too, but the update of RFC 7523
(draft-ietf-oauth-rfc7523bis) requires the issuer alone, to close the
audience-confusion attack between authorization servers, and the MCP client
credentials extension verifies against the issuer. ``audience=`` overrides it.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Final

from joserfc import jwk, jwt

__all__ = ["CLIENT_ASSERTION_TYPE", "SIGNING_ALGORITHMS", "PrivateKeyJWT", "import_private_key"]

CLIENT_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

# Asymmetric algorithms and the key type each needs (HMAC ``client_secret_jwt``
# is not offered: a shared secret is better sent with client_secret_basic).
SIGNING_ALGORITHMS: Final[dict[str, str]] = {
    "ES256": "EC",
    "ES384": "EC",
    "ES512": "EC",
    "RS256": "RSA",
    "RS384": "RSA",
    "RS512": "RSA",
    "PS256": "RSA",
    "PS384": "RSA",
    "PS512": "RSA",
    "EdDSA": "OKP",
}


def import_private_key(data: str | bytes | dict[str, Any], algorithm: str) -> Any:
    """The joserfc key for ``data`` (PEM or JWK), of the type ``algorithm`` needs.

    Raises ValueError for an unknown algorithm or a key without its private part.
    """
    key_type: Any = SIGNING_ALGORITHMS.get(algorithm)
    if key_type is None:
        raise ValueError(
            f"unsupported signing algorithm {algorithm!r}; use one of {', '.join(SIGNING_ALGORITHMS)}"
        )
    raw: Any = data
    key = jwk.import_key(raw, key_type)
    if not key.is_private:
        raise ValueError("signing needs the private key, not the public one")
    return key


@dataclass(frozen=True, slots=True)
class PrivateKeyJWT:
    """``private_key_jwt`` client authentication: assertions signed with a private key.

    ``private_key`` is a PEM (string or bytes) or a private JWK dict; ``key_id``
    goes in the ``kid`` header when the authorization server knows several keys
    of this client. Each assertion lives ``lifetime`` seconds and has a fresh
    ``jti`` (RFC 7523 § 3: the server may refuse a replayed one).
    """

    private_key: str | bytes | dict[str, Any] = field(repr=False)
    algorithm: str = "RS256"
    key_id: str | None = None
    lifetime: float = 60.0
    audience: str | None = None  # None: the authorization server's issuer

    def __post_init__(self) -> None:
        import_private_key(self.private_key, self.algorithm)  # fail at construction, not at use

    def assertion(self, client_id: str, audience: str, *, now: float | None = None) -> str:
        """A signed assertion: ``iss = sub = client_id``, ``aud``, ``iat``, ``exp``, ``jti``."""
        issued = int(time.time() if now is None else now)
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": self.audience or audience,
            "iat": issued,
            "exp": issued + int(self.lifetime),
            "jti": secrets.token_urlsafe(24),
        }
        header: dict[str, Any] = {"alg": self.algorithm, "typ": "JWT"}
        if self.key_id is not None:
            header["kid"] = self.key_id
        key = import_private_key(self.private_key, self.algorithm)
        return jwt.encode(header, claims, key, algorithms=[self.algorithm])

    def form(self, client_id: str, audience: str) -> dict[str, str]:
        """The token-request fields that authenticate the client (RFC 7523 § 2.2)."""
        return {
            "client_id": client_id,
            "client_assertion_type": CLIENT_ASSERTION_TYPE,
            "client_assertion": self.assertion(client_id, audience),
        }
