"""DPoP: proof-of-possession for access tokens (RFC 9449), the client half.

A DPoP client holds one key pair for the life of its tokens. With every token
request and every request to the protected resource it sends a fresh proof: a
JWT signed with that key whose header carries the public key (``jwk``) and whose
claims bind it to one HTTP request (``htm``, ``htu``), one moment (``iat``), one
use (``jti``) and, at the resource, the access token it accompanies (``ath``).
The authorization server binds the token to the key's thumbprint (``cnf.jkt``,
RFC 7638), so a stolen token is useless without the private key.

Servers may demand a nonce (RFC 9449 § 8 for the authorization server, § 9 for
the resource server): they answer ``use_dpop_nonce`` with a ``DPoP-Nonce``
header, and the client signs a new proof with that nonce and retries once.
:class:`DPoPSigner` remembers the last nonce each server (origin) gave, so
later requests carry it from the start. Nothing here does I/O: the OAuth flow
calls it around its own requests.

Proofs and keys are secrets: nothing here logs them, and reprs leave them out.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.dpop)"):
    import httpx
    from joserfc import jwk, jwt

from ..challenge import parse_www_authenticate
from .assertions import SIGNING_ALGORITHMS, import_private_key
from .hooks import RequestPurpose
from .storage import OAuthTokens

__all__ = ["DPOP_ALGORITHMS", "DPoPKey", "DPoPSigner", "ath", "htu"]

# Asymmetric algorithms only (RFC 9449 § 4.2: "MUST NOT be none or an identifier
# for a symmetric algorithm"), the same table as for client assertions.
DPOP_ALGORITHMS: Final[Mapping[str, str]] = SIGNING_ALGORITHMS
_CURVES: Final[Mapping[str, str]] = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def htu(url: str) -> str:
    """The ``htu`` claim for ``url``: the URI without query and fragment (RFC 9449 § 4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def ath(access_token: str) -> str:
    """``base64url(SHA-256(ASCII(access_token)))``, the ``ath`` claim (RFC 9449 § 4.2)."""
    return _b64url(hashlib.sha256(access_token.encode("ascii")).digest())


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class DPoPKey:
    """The key pair proofs are signed with; ES256 on a fresh P-256 key by default.

    ``private_key`` may be a PEM string/bytes or a JWK dict (for a key kept
    between runs, so stored DPoP-bound tokens stay usable); ``algorithm`` one of
    :data:`DPOP_ALGORITHMS`.
    """

    __slots__ = ("_key", "algorithm")

    def __init__(
        self,
        private_key: str | bytes | dict[str, Any] | None = None,
        *,
        algorithm: str = "ES256",
    ) -> None:
        if algorithm not in DPOP_ALGORITHMS:
            raise ValueError(f"DPoP needs an asymmetric algorithm, not {algorithm!r}")
        self.algorithm = algorithm
        if private_key is None:
            if algorithm not in _CURVES:
                raise ValueError(
                    f"pass the private key for {algorithm}; only ES* keys are generated"
                )
            self._key: Any = jwk.ECKey.generate_key(_CURVES[algorithm])
        else:
            self._key = import_private_key(private_key, algorithm)

    @property
    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK (the proof's ``jwk`` header; never the private part)."""
        data: dict[str, Any] = dict(self._key.as_dict(private=False))
        for extra in ("kid", "use", "key_ops", "alg"):
            data.pop(extra, None)
        return data

    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 thumbprint: the ``jkt`` a bound token carries in ``cnf``."""
        return str(self._key.thumbprint())

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        now: float | None = None,
    ) -> str:
        """A new proof for one request (a fresh ``jti`` each call: RFC 9449 § 4.2, § 11.1)."""
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time() if now is None else now),
        }
        if access_token is not None:
            claims["ath"] = ath(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": self.algorithm, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self._key, algorithms=[self.algorithm])

    def __repr__(self) -> str:
        return f"DPoPKey({self.algorithm}, jkt={self.thumbprint()[:8]}...)"


class DPoPSigner:
    """Proofs for an OAuth client's requests, with the nonces each server asked for.

    It is a request hook of the OAuth flow (:meth:`before`, :meth:`retry`):
    before a token request it adds a proof, before a request to the MCP server
    carrying a DPoP-bound token (``token_type`` ``DPoP``) it sends the token as
    ``Authorization: DPoP <token>`` with a proof whose ``ath`` is the token's
    hash; on a ``use_dpop_nonce`` answer it asks for one more try, whose proof
    then carries the nonce. Lower level: :meth:`headers_for_token_request`,
    :meth:`headers_for_resource`, :meth:`observe` (a ``DPoP-Nonce`` header may
    come on any answer, RFC 9449 § 8.2) and :meth:`needs_nonce_retry`.
    """

    def __init__(self, key: DPoPKey | None = None) -> None:
        self.key = key if key is not None else DPoPKey()
        self._nonces: dict[str, str] = {}
        self._lock = threading.Lock()

    def nonce_for(self, url: str) -> str | None:
        """The last nonce the server at ``url``'s origin supplied, if any."""
        return self._nonces.get(_origin(url))

    def headers_for_token_request(self, url: str) -> dict[str, str]:
        """The ``DPoP`` header for a token request to ``url`` (RFC 9449 § 5)."""
        return {"DPoP": self.key.proof("POST", url, nonce=self.nonce_for(url))}

    def headers_for_resource(self, method: str, url: str, access_token: str) -> dict[str, str]:
        """``Authorization: DPoP <token>`` and its proof with ``ath`` (RFC 9449 § 7.1)."""
        proof = self.key.proof(method, url, access_token=access_token, nonce=self.nonce_for(url))
        return {"Authorization": f"DPoP {access_token}", "DPoP": proof}

    def observe(self, url: str, headers: Mapping[str, str]) -> str | None:
        """Remember a ``DPoP-Nonce`` the answer from ``url`` carries; returns it."""
        nonce = _header(headers, "dpop-nonce")
        if nonce:
            with self._lock:
                self._nonces[_origin(url)] = nonce
            return nonce
        return None

    def needs_nonce_retry(
        self, url: str, status: int, headers: Mapping[str, str], body: bytes | None = None
    ) -> bool:
        """True when the answer asks for a proof with a (new) nonce and supplies one.

        The authorization server answers ``400`` with ``{"error": "use_dpop_nonce"}``
        (RFC 9449 § 8); the resource server ``401`` with ``WWW-Authenticate: DPoP
        error="use_dpop_nonce"`` (§ 9). Either must carry ``DPoP-Nonce``; without
        one a retry could not succeed, so none is made.
        """
        nonce = self.observe(url, headers)
        if nonce is None:
            return False
        if status == 401:
            challenge = parse_www_authenticate(
                _header(headers, "www-authenticate") or "", scheme="DPoP"
            )
            return challenge is not None and challenge.get("error") == "use_dpop_nonce"
        if status == 400 and body:
            try:
                data = json.loads(body)
            except ValueError:
                return False
            return isinstance(data, dict) and data.get("error") == "use_dpop_nonce"
        return False

    # -- the OAuth flow's request hook ---------------------------------------------------
    async def before(
        self, request: httpx.Request, *, purpose: RequestPurpose, tokens: OAuthTokens | None
    ) -> None:
        """Add the proof (and the DPoP scheme) to an ``httpx.Request`` about to be sent."""
        url = str(request.url)
        if purpose == "token":
            request.headers.update(self.headers_for_token_request(url))
            return
        if tokens is None or tokens.token_type.lower() != "dpop":
            # RFC 9449 § 7.1: a token issued as Bearer is not bound; it goes as Bearer.
            return
        request.headers.update(self.headers_for_resource(request.method, url, tokens.access_token))

    async def retry(
        self, request: httpx.Request, response: httpx.Response, *, purpose: RequestPurpose
    ) -> bool:
        """True for a ``use_dpop_nonce`` answer that supplies a nonce (the flow retries once)."""
        try:
            body: bytes | None = response.content
        except httpx.ResponseNotRead:  # a streamed answer: the RS challenge is in the headers
            body = None
        return self.needs_nonce_retry(
            str(request.url), response.status_code, response.headers, body
        )

    def __repr__(self) -> str:
        return f"DPoPSigner({self.key!r}, {len(self._nonces)} nonces)"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:  # a plain dict from a test or a hook
        for key, item in headers.items():
            if key.lower() == name:
                return item
    return value
