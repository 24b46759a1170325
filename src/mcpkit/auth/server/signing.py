"""The authorization server's access tokens: RFC 9068 JWTs signed with the operator's key.

mcpkit issues its own tokens rather than passing the identity provider's through (MCP
authorization § token passthrough is forbidden): each is audience-bound to the MCP
resource (RFC 8707), short-lived, typed ``at+jwt`` and signed with an asymmetric key, so
the resource server side checks it with the public half only (:meth:`TokenSigner.verifier`
builds the :class:`~mcpkit.auth.JWTVerifier` for it). The key is a private JWK or PEM the
operator provides (every node of a cluster needs the same one), or an EC P-256 key
generated at start-up (one process only: its tokens die with it).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..._extras import require_extra

with require_extra(
    "auth", feature="the MCP authorization server's tokens (mcpkit.auth.server.signing)"
):
    from joserfc import jwt
    from joserfc.errors import JoseError
    from joserfc.jwk import ECKey, Key, OKPKey, RSAKey, import_key

from ...errors import ConfigurationError
from ..jwt import JWTVerifier

__all__ = ["TokenSigner"]

_BROWSER_TYP = "mcpkit-browser+jwt"
_ALGORITHM = {"EC": "ES256", "RSA": "RS256", "OKP": "EdDSA"}


def _load_key(key: Key | Mapping[str, Any] | str | bytes | None) -> Key:
    if key is None:
        return ECKey.generate_key("P-256", auto_kid=True)
    if isinstance(key, ECKey | RSAKey | OKPKey):
        loaded: Key = key
    elif isinstance(key, Mapping):
        loaded = import_key(dict(key))
    elif isinstance(key, str | bytes):
        loaded = _pem(key.encode() if isinstance(key, str) else key)
    else:
        raise ConfigurationError(f"signing_key: cannot use {type(key).__name__} as a key")
    if loaded.key_type not in _ALGORITHM or not loaded.is_private:
        raise ConfigurationError(
            "signing_key must be a private RSA, EC or OKP key: tokens are checked with its "
            "public half, and a shared secret would let every resource forge them"
        )
    if not loaded.kid:
        loaded.ensure_kid()
    return loaded


def _pem(data: bytes) -> Key:
    for kind in (ECKey, RSAKey, OKPKey):
        try:
            return kind.import_key(data)
        except (ValueError, TypeError):
            continue
    raise ConfigurationError("signing_key: not a PEM private key of type EC, RSA or OKP")


class TokenSigner:
    """Signs access tokens for ``issuer``; ``key``: private JWK, PEM or joserfc key (None: generated)."""

    def __init__(
        self,
        *,
        issuer: str,
        key: Key | Mapping[str, Any] | str | bytes | None = None,
        access_token_ttl: float = 900.0,
    ) -> None:
        self.issuer = issuer
        self.key = _load_key(key)
        self.algorithm = _ALGORITHM[self.key.key_type]
        self.access_token_ttl = access_token_ttl

    def jwks(self) -> dict[str, Any]:
        """The public key set (served at the metadata's ``jwks_uri``)."""
        public = self.key.as_dict(private=False)
        public.update(use="sig", alg=self.algorithm)
        return {"keys": [public]}

    def issue(
        self,
        *,
        subject: str,
        client_id: str,
        audience: str,
        scopes: Iterable[str],
        extra: Mapping[str, Any] | None = None,
        now: float | None = None,
    ) -> tuple[str, int]:
        """A signed access token and its lifetime in seconds."""
        issued = int(time.time() if now is None else now)
        ttl = int(self.access_token_ttl)
        claims: dict[str, Any] = dict(extra or {})
        claims.update(
            iss=self.issuer,
            sub=subject,
            aud=audience,
            client_id=client_id,
            iat=issued,
            nbf=issued,
            exp=issued + ttl,
            jti=secrets.token_urlsafe(16),
        )
        scope = " ".join(scopes)
        if scope:
            claims["scope"] = scope
        header = {"alg": self.algorithm, "typ": "at+jwt", "kid": self.key.kid}
        return jwt.encode(header, claims, self.key, algorithms=[self.algorithm]), ttl

    def sign_browser(self, subject: str, *, ttl: float) -> str:
        """A signed note of who signed in, for the browser's remembered-consent cookie.

        Typed ``mcpkit-browser+jwt`` with this issuer as audience: it can never pass as
        an access token (the verifier wants ``at+jwt`` and the MCP resource).
        """
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.issuer, "sub": subject, "iat": now,
                  "exp": now + int(ttl)}  # fmt: skip
        header = {"alg": self.algorithm, "typ": _BROWSER_TYP, "kid": self.key.kid}
        return jwt.encode(header, claims, self.key, algorithms=[self.algorithm])

    def read_browser(self, value: str) -> str | None:
        """The subject of a :meth:`sign_browser` note, or None (forged, expired, other)."""
        if len(value) > 4096:
            return None
        try:
            token = jwt.decode(value, self.key, algorithms=[self.algorithm])
        except (JoseError, ValueError):
            return None
        claims = token.claims
        exp = claims.get("exp")
        if (
            token.header.get("typ") != _BROWSER_TYP
            or claims.get("iss") != self.issuer
            or claims.get("aud") != self.issuer
            or not isinstance(exp, int)
            or exp < time.time()
        ):
            return None
        subject = claims.get("sub")
        return subject if isinstance(subject, str) and subject else None

    def verifier(self, *, audience: str, **options: Any) -> JWTVerifier:
        """A :class:`JWTVerifier` for the tokens this signer issues to ``audience``."""
        return JWTVerifier(
            issuer=self.issuer,
            audience=audience,
            keys=self.jwks(),
            algorithms=[self.algorithm],
            require_at_jwt=True,
            **options,
        )
