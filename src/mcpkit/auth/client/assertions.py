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
from typing import TYPE_CHECKING, Any, Final

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.assertions)"):
    from joserfc import jwk, jwt

if TYPE_CHECKING:
    from .token_endpoint import ClientAuthRequest

__all__ = [
    "CLIENT_ASSERTION_TYPE",
    "SIGNING_ALGORITHMS",
    "PrivateKeyJWT",
    "default_algorithm",
    "import_private_key",
]

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

_EC_ALGORITHMS: Final[dict[str, str]] = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}


def default_algorithm(data: str | bytes | dict[str, Any]) -> str:
    """The usual algorithm for a private key: ES256/384/512 by curve, RS256, or EdDSA."""
    if isinstance(data, dict):
        kty, crv = data.get("kty"), data.get("crv")
    else:
        from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        raw = data.encode() if isinstance(data, str) else data
        try:
            key = load_pem_private_key(raw, password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not an unencrypted PEM private key ({type(exc).__name__})") from None
        if isinstance(key, ec.EllipticCurvePrivateKey):
            kty, crv = (
                "EC",
                {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}.get(
                    key.curve.name
                ),
            )
        elif isinstance(key, rsa.RSAPrivateKey):
            kty, crv = "RSA", None
        elif isinstance(key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)):
            kty, crv = "OKP", None
        else:
            kty, crv = None, None
    if kty == "EC" and crv in _EC_ALGORITHMS:
        return _EC_ALGORITHMS[str(crv)]
    if kty == "RSA":
        return "RS256"
    if kty == "OKP":
        return "EdDSA"
    raise ValueError("cannot tell the signing algorithm of this key; pass algorithm=")


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
    algorithm: str = ""  # empty: the key's usual one (default_algorithm)
    key_id: str | None = None
    lifetime: float = 60.0
    audience: str | None = None  # None: the authorization server's issuer

    def __post_init__(self) -> None:
        if not self.algorithm:
            object.__setattr__(self, "algorithm", default_algorithm(self.private_key))
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

    async def authenticate(self, req: ClientAuthRequest) -> None:
        """The ``private_key_jwt`` method of the OAuth flow's token endpoint.

        ``OAuth(client_auth_methods={"private_key_jwt": signer.authenticate})``;
        the audience is the authorization server's issuer (see the module docstring).
        """
        req.form.update(self.form(req.registration.client_id, req.server.issuer))
