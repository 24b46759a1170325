"""``JWTVerifier``: JWT access tokens (RFC 9068) checked locally against the issuer's keys.

What is checked, in order, before a token is accepted:

1. the compact JWS parses; its ``alg`` is in the allow-list (asymmetric algorithms by
   default; ``none`` can never be allowed) and its ``typ`` is an access token's;
2. a key of the right type for ``alg`` signs it: the key is chosen by ``kid`` among
   keys whose ``kty`` (and curve) fits the algorithm, so an RSA or EC public key is
   never used as an HMAC secret (the classic algorithm-confusion attack), and joserfc
   checks the signature (no signature code here). A token without ``kid`` may be
   signed by any key that fits; more than ``max_keys_tried`` such keys and it is
   refused rather than tried against each (a key set of thousands would make every
   forged token cost thousands of signature checks);
3. ``iss`` is the configured issuer, ``aud`` names this resource (MCP authorization §
   token audience binding: tokens for another resource are refused, never passed
   through), ``exp`` is present and not past, ``nbf`` and ``iat`` not in the future,
   each with ``leeway`` seconds for clock skew; each is a finite JSON number (NaN,
   Infinity, a bool or a string is refused: a NaN ``exp`` would never expire).

Keys come from static configuration or a ``jwks_uri``. The key set is fetched on
first use, again when older than ``jwks_max_age``, and again when a token names an
unknown ``kid`` (the issuer rotated its keys), at most once per
``jwks_refresh_interval`` so a flood of made-up ``kid`` values cannot turn into a
flood of requests to the issuer; concurrent refreshes share one request.

An accepted token is remembered (bounded LRU keyed by the token) until its ``exp``
or ``cache_ttl``, whichever comes first, so a client repeating its token costs a
dictionary lookup per request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from .._extras import require_extra

with require_extra("auth", feature="JWT access token verification (mcpkit.auth.jwt)"):
    import httpx
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from joserfc import jws
    from joserfc.errors import JoseError
    from joserfc.jwk import ECKey, Key, OctKey, OKPKey, RSAKey, import_key

from ..errors import ConfigurationError, InvalidToken, VerifierUnavailable
from .claims import (
    audience_list,
    auth_info_from_claims,
    check_audience,
    check_required_scopes,
    check_times,
    scopes_from,
)
from .endpoints import HTTPClientSlot, check_endpoint_url, fetch_json
from .info import AuthInfo
from .token_cache import TokenCache

__all__ = ["DEFAULT_ALGORITHMS", "DEFAULT_MAX_KEYS_TRIED", "JWTVerifier", "StaticKeys"]

log = logging.getLogger("mcpkit.auth")

DEFAULT_ALGORITHMS: Final = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
    "ES256", "ES384", "ES512", "EdDSA", "Ed25519",
)  # fmt: skip
"""Asymmetric signatures only: the resource server holds no secret a token could be signed with."""

DEFAULT_MAX_KEYS_TRIED: Final = 4
"""Keys one token's signature is checked against, at most (a rotation overlap fits)."""

# JWA (RFC 7518 § 3.1, RFC 8037, RFC 9864): the key type (and curve) each algorithm
# needs. An algorithm not listed here cannot be configured.
_KEY_TYPE: Final[dict[str, tuple[str, str | None]]] = {
    **{f"HS{n}": ("oct", None) for n in (256, 384, 512)},
    **{f"RS{n}": ("RSA", None) for n in (256, 384, 512)},
    **{f"PS{n}": ("RSA", None) for n in (256, 384, 512)},
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "ES256K": ("EC", "secp256k1"),
    "EdDSA": ("OKP", None),
    "Ed25519": ("OKP", "Ed25519"),
    "Ed448": ("OKP", "Ed448"),
}

# RFC 9068 § 2.1: "at+jwt"; RFC 8725 § 3.11 lets the media type be written in full.
_ACCESS_TOKEN_TYPES: Final = frozenset({"at+jwt", "application/at+jwt"})

_MAX_TOKEN_LENGTH: Final = 16 * 1024
_MAX_JWKS_BYTES: Final = 512 * 1024

StaticKeys: TypeAlias = (
    Mapping[str, Any] | str | bytes | Key | Sequence[Mapping[str, Any] | str | bytes | Key]
)
"""A JWKS (``{"keys": [...]}``), one JWK dict, a PEM public key, a joserfc key, or a list of them."""


def _pem_key(data: str | bytes) -> Key:
    raw = data.encode() if isinstance(data, str) else data
    try:
        public = load_pem_public_key(raw)
    except ValueError:
        raise ConfigurationError(
            "JWTVerifier keys: a PEM string must be a public key ('BEGIN PUBLIC KEY')"
        ) from None
    if isinstance(public, rsa.RSAPublicKey):
        return RSAKey.import_key(raw)
    if isinstance(public, ec.EllipticCurvePublicKey):
        return ECKey.import_key(raw)
    if isinstance(public, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return OKPKey.import_key(raw)
    raise ConfigurationError(f"JWTVerifier keys: unsupported PEM key type {type(public).__name__}")


def _import_jwk(data: Mapping[str, Any], *, from_network: bool) -> Key | None:
    """One JWK; None (skipped) when it is unusable for signatures here."""
    use = data.get("use")
    if use is not None and use != "sig":
        return None
    kty = data.get("kty")
    # A JWKS URL publishes public keys; a symmetric key found there would be a shared
    # secret anyone can read, so it is never trusted (RFC 8725 § 3.1).
    if kty == "oct" and from_network:
        return None
    try:
        return import_key(dict(data))
    except (JoseError, ValueError, TypeError, KeyError):
        if from_network:
            log.warning("JWKS: skipping a key that cannot be imported (kty=%r)", kty)
            return None
        raise ConfigurationError(
            f"JWTVerifier keys: cannot import a JWK with kty={kty!r}"
        ) from None


def _static_keys(keys: StaticKeys) -> list[Key]:
    items: Iterable[Any]
    if isinstance(keys, Mapping) and "keys" in keys:
        items = keys["keys"]
    elif isinstance(keys, Mapping | str | bytes | RSAKey | ECKey | OKPKey | OctKey):
        items = [keys]
    else:
        items = keys
    out: list[Key] = []
    for item in items:
        if isinstance(item, RSAKey | ECKey | OKPKey | OctKey):
            out.append(item)
        elif isinstance(item, str | bytes):
            out.append(_pem_key(item))
        elif isinstance(item, Mapping):
            key = _import_jwk(item, from_network=False)
            if key is not None:
                out.append(key)
        else:
            raise ConfigurationError(f"JWTVerifier keys: cannot use {type(item).__name__} as a key")
    if not out:
        raise ConfigurationError("JWTVerifier keys: no usable signing key")
    return out


def _fits(key: Key, alg: str) -> bool:
    kty, curve = _KEY_TYPE[alg]
    if key.key_type != kty:
        return False
    if curve is not None and getattr(key, "curve_name", None) != curve:
        return False
    if alg == "EdDSA" and getattr(key, "curve_name", None) not in ("Ed25519", "Ed448"):
        return False
    use, key_alg = key.get("use"), key.get("alg")
    return use in (None, "sig") and key_alg in (None, alg)


class JWTVerifier:
    """Verifies RFC 9068 JWT access tokens issued by ``issuer`` for ``audience``.

    ::

        JWTVerifier(
            jwks_uri="https://auth.example.com/.well-known/jwks.json",
            issuer="https://auth.example.com",
            audience="https://mcp.example.com/mcp",
        )

    Exactly one of ``jwks_uri`` and ``keys`` (a JWKS dict, a JWK, a PEM public key
    or a list of them). ``audience`` is required: a str or a list, and the token's
    ``aud`` must contain one of them. ``algorithms`` is the allow-list (default
    :data:`DEFAULT_ALGORITHMS`; HMAC algorithms only with static ``oct`` keys).
    ``require_at_jwt`` asks for the RFC 9068 ``typ`` header ``at+jwt``; it is off by
    default because many providers still issue access tokens typed ``JWT`` (the
    audience check is what keeps ID tokens and tokens for other resources out);
    a token typed as another kind of JWT (``dpop+jwt``, ``logout+jwt``, ...) is
    refused either way. ``required_scopes`` makes a token without them a 403
    ``insufficient_scope``. ``max_keys_tried`` bounds the keys one token's signature
    is checked against: a token without ``kid`` (or with one several keys share)
    against more candidate keys than that is refused. ``accept_types``: more ``typ``
    values accepted beside an access token's, for a verifier of other JWTs (the
    authorization server checks client assertions, ``client-authentication+jwt``).
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Sequence[str],
        jwks_uri: str | None = None,
        keys: StaticKeys | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: float = 60.0,
        require_at_jwt: bool = False,
        required_scopes: Sequence[str] = (),
        cache_size: int = 10_000,
        cache_ttl: float = 300.0,
        jwks_max_age: float = 3600.0,
        jwks_refresh_interval: float = 10.0,
        timeout: float = 5.0,
        http_client: httpx.AsyncClient | None = None,
        allow_insecure_http: bool = False,
        max_keys_tried: int = DEFAULT_MAX_KEYS_TRIED,
        accept_types: Sequence[str] = (),
    ) -> None:
        if not isinstance(issuer, str) or not issuer:
            raise ConfigurationError("JWTVerifier: issuer is required")
        if (jwks_uri is None) == (keys is None):
            raise ConfigurationError("JWTVerifier: give exactly one of jwks_uri and keys")
        problems = [a for a in algorithms if a not in _KEY_TYPE]
        if problems:
            raise ConfigurationError(
                f"JWTVerifier: unsupported or unsafe algorithm(s) {', '.join(map(repr, problems))}"
            )
        if not algorithms:
            raise ConfigurationError("JWTVerifier: algorithms must not be empty")
        if jwks_uri is not None and any(a.startswith("HS") for a in algorithms):
            raise ConfigurationError(
                "JWTVerifier: HMAC algorithms need a shared secret, which a JWKS URL cannot "
                "publish; pass the secret as a static 'oct' key instead"
            )
        if isinstance(max_keys_tried, bool) or not isinstance(max_keys_tried, int):
            raise ConfigurationError("JWTVerifier: max_keys_tried must be an int")
        if max_keys_tried < 1:
            raise ConfigurationError("JWTVerifier: max_keys_tried must be at least 1")
        self.max_keys_tried = max_keys_tried
        self.accept_types = frozenset(t.lower() for t in accept_types)
        self.issuer = issuer
        self.audience = audience_list(audience, what="JWTVerifier: audience")
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.require_at_jwt = require_at_jwt
        self.required_scopes = tuple(required_scopes)
        self.jwks_uri = (
            None
            if jwks_uri is None
            else check_endpoint_url(
                jwks_uri, what="JWTVerifier: jwks_uri", allow_insecure_http=allow_insecure_http
            )
        )
        self.jwks_max_age = jwks_max_age
        self.jwks_refresh_interval = jwks_refresh_interval
        self.timeout = timeout
        self.cache_ttl = cache_ttl
        self._registry = jws.JWSRegistry(algorithms=list(self.algorithms))
        self._cache: TokenCache[AuthInfo] = TokenCache(cache_size)
        self._keys: list[Key] = [] if keys is None else _static_keys(keys)
        self._keys_fetched_at: float | None = None  # monotonic; None: never fetched
        self._last_fetch_attempt: float | None = None
        self._last_fetch_failed = False
        self._inflight: asyncio.Task[None] | None = None
        self._http = HTTPClientSlot(http_client, timeout=timeout)
        self.jwks_fetches = 0
        """How many times the key set was requested (for monitoring and tests)."""

    # -- the public contract --------------------------------------------------------------

    async def verify(self, token: str) -> AuthInfo:
        """The token's :class:`AuthInfo`; :class:`InvalidToken` when it must be refused.

        :class:`VerifierUnavailable` when the key set cannot be fetched and the token
        cannot be checked without it.
        """
        now = time.time()
        # Keyed by the token itself: the cached AuthInfo holds it anyway, and a str key
        # costs a hash, where a digest costs a SHA-256 on every request.
        cached = self._cache.get(token, now=now)
        if cached is not None:
            return cached
        obj, alg, kid = self._parse(token)
        keys = await self._keys_for(kid, alg)
        if len(keys) > self.max_keys_tried:
            # RFC 7515 § 4.1.4: the kid is how a verifier picks the key; without it a
            # forged token would cost one signature check per key in the set.
            which = "names no signing key ('kid')" if kid is None else "names a shared 'kid'"
            raise InvalidToken(
                f"token {which} and {len(keys)} keys fit it; "
                f"at most {self.max_keys_tried} are tried"
            )
        if not any(self._signed_by(obj, key) for key in keys):
            raise InvalidToken("invalid token signature")
        info = self._check_claims(token, obj.payload)
        if info.expires_at is not None:
            until = min(info.expires_at, time.time() + self.cache_ttl)
            self._cache.put(token, info, until=until)
        return info

    async def aclose(self) -> None:
        """Close the HTTP client this verifier made (not one passed in)."""
        await self._http.aclose()

    async def __aenter__(self) -> JWTVerifier:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        source = self.jwks_uri or f"<{len(self._keys)} static keys>"
        return (
            f"JWTVerifier(issuer={self.issuer!r}, audience={list(self.audience)!r}, keys={source})"
        )

    # -- steps ----------------------------------------------------------------------------

    def _parse(self, token: str) -> tuple[Any, str, str | None]:
        if not token or len(token) > _MAX_TOKEN_LENGTH or token.count(".") != 2:
            raise InvalidToken("malformed token: not a signed JWT")
        try:
            obj = jws.extract_compact(token.encode("ascii"), registry=self._registry)
            header = obj.headers()
        except (JoseError, ValueError, TypeError, UnicodeError):
            raise InvalidToken("malformed token: not a signed JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            # "none" is never in the allow-list (__init__ refuses it), nor is an HMAC
            # algorithm unless configured with a shared secret.
            raise InvalidToken("token signing algorithm not allowed")
        typ = header.get("typ")
        if typ is not None and not isinstance(typ, str):
            raise InvalidToken("malformed token: bad 'typ' header")
        typ_l = typ.lower() if typ is not None else None
        if self.require_at_jwt:
            if typ_l not in _ACCESS_TOKEN_TYPES:
                raise InvalidToken("not an access token: 'typ' header must be 'at+jwt'")
        elif (
            typ_l is not None
            and typ_l.endswith("+jwt")
            and typ_l not in _ACCESS_TOKEN_TYPES
            and typ_l not in self.accept_types
        ):
            raise InvalidToken("not an access token: the 'typ' header names another kind of JWT")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("malformed token: bad 'kid' header")
        return obj, alg, kid

    def _signed_by(self, obj: Any, key: Key) -> bool:
        try:
            return bool(jws.validate_compact(obj, key, registry=self._registry))
        except (JoseError, ValueError, TypeError):
            return False

    def _check_claims(self, token: str, payload: bytes | None) -> AuthInfo:
        try:
            claims = json.loads(payload or b"")
        except ValueError:
            raise InvalidToken("malformed token: the payload is not JSON") from None
        if not isinstance(claims, dict):
            raise InvalidToken("malformed token: the payload is not a JSON object")
        if claims.get("iss") != self.issuer:
            raise InvalidToken("wrong issuer")
        resource = check_audience(claims, self.audience)
        exp = check_times(claims, now=time.time(), leeway=self.leeway, require_exp=True)
        check_required_scopes(scopes_from(claims), self.required_scopes)
        return auth_info_from_claims(token, claims, expires_at=exp, resource=resource)

    # -- keys -----------------------------------------------------------------------------

    def _matching(self, kid: str | None, alg: str) -> list[Key]:
        keys = [k for k in self._keys if _fits(k, alg)]
        if kid is not None:
            # RFC 7515 § 4.1.4: with a kid, only that key. Static keys without a kid
            # still serve tokens that name one (a PEM key has no kid).
            named = [k for k in keys if k.kid == kid]
            if named or self.jwks_uri is not None:
                return named
            return [k for k in keys if k.kid is None]
        return keys

    async def _keys_for(self, kid: str | None, alg: str) -> list[Key]:
        if self.jwks_uri is None:
            keys = self._matching(kid, alg)
            if not keys:
                raise InvalidToken("no key for the token's signing algorithm or key id")
            return keys
        now = time.monotonic()
        if self._keys_fetched_at is None or now - self._keys_fetched_at > self.jwks_max_age:
            if self._may_fetch(now):
                await self._refresh()
            elif self._keys_fetched_at is None:
                raise VerifierUnavailable("JWKS endpoint unavailable (retrying later)")
        keys = self._matching(kid, alg)
        if keys:
            return keys
        # An unknown kid: the issuer may have rotated its keys. Look again, but not
        # more often than jwks_refresh_interval, whatever the tokens claim.
        if self._may_fetch(time.monotonic()):
            await self._refresh()
            keys = self._matching(kid, alg)
            if keys:
                return keys
        if self._last_fetch_failed:
            raise VerifierUnavailable("JWKS endpoint unavailable (retrying later)")
        raise InvalidToken("unknown signing key")

    def _may_fetch(self, now: float) -> bool:
        if self._inflight is not None:
            return True  # joining a fetch under way costs nothing
        last = self._last_fetch_attempt
        return last is None or now - last >= self.jwks_refresh_interval

    async def _refresh(self) -> None:
        """Fetch the key set once for every caller waiting now (one request in flight)."""
        task = self._inflight
        if task is None:
            self._last_fetch_attempt = time.monotonic()
            task = asyncio.get_running_loop().create_task(self._fetch_keys())
            self._inflight = task
            task.add_done_callback(self._fetch_done)
        # shield: one waiter cancelled (its client went away) does not cancel the
        # fetch the others wait for.
        await asyncio.shield(task)

    def _fetch_done(self, task: asyncio.Task[None]) -> None:
        if self._inflight is task:
            self._inflight = None
        if not task.cancelled():
            task.exception()  # retrieved here so a fetch nobody awaits is not "never retrieved"

    async def _fetch_keys(self) -> None:
        assert self.jwks_uri is not None
        client = self._http.get()
        self.jwks_fetches += 1
        request = client.build_request("GET", self.jwks_uri, headers={"Accept": "application/json"})
        try:
            document = await fetch_json(
                client,
                request,
                what="JWKS endpoint",
                timeout=self.timeout,
                max_bytes=_MAX_JWKS_BYTES,
            )
            entries = document.get("keys")
            if not isinstance(entries, list):
                raise VerifierUnavailable("JWKS endpoint answered without a 'keys' list")
        except VerifierUnavailable as exc:
            self._last_fetch_failed = True
            if self._keys:
                # Keep serving with the keys we have; a rotated key waits for the next try.
                log.warning("%s; keeping the %d cached keys", exc, len(self._keys))
                return
            raise
        keys: list[Key] = []
        for entry in entries:
            key = _import_jwk(entry, from_network=True) if isinstance(entry, Mapping) else None
            if key is not None:
                keys.append(key)
        self._keys = keys
        self._keys_fetched_at = time.monotonic()
        self._last_fetch_failed = False
