"""A generic OpenID Connect identity provider for the authorization server, by discovery.

The provider's metadata comes from ``{issuer}/.well-known/openid-configuration`` (OpenID
Connect Discovery 1.0 § 4), fetched on first use and checked: its ``issuer`` must be the
configured one (§ 4.3, a mix-up defence) and every endpoint https (or loopback). The
sign-in is the code flow with PKCE S256 and a nonce; the ID token is checked with
:class:`~mcpkit.auth.JWTVerifier` against the provider's ``jwks_uri`` (audience: mcpkit's
client id), then its ``nonce`` (OIDC Core § 3.1.3.7). The ``iss`` of the callback, when
present, must be the issuer (RFC 9207).
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

from ...._extras import require_extra

# The same text in every preset module: importing any of them loads the package, whose
# first import (not the module asked for) meets the missing extra.
with require_extra("auth", feature="identity provider support (mcpkit.auth.server.presets)"):
    import httpx

from ....errors import ConfigurationError, InvalidToken, VerifierUnavailable
from ...endpoints import HTTPClientSlot, check_endpoint_url, fetch_json
from ...jwt import DEFAULT_ALGORITHMS, JWTVerifier
from ..provider import UpstreamError, UpstreamGrant, UpstreamIdentity

__all__ = ["OIDCProvider", "expires_at_of"]

_MAX_BYTES = 256 * 1024


def expires_at_of(answer: dict[str, Any]) -> float | None:
    """The Unix time a token answer's ``expires_in`` ends (None: not said, or no number)."""
    expires_in = answer.get("expires_in")
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
        return time.time() + float(expires_in)
    return None


class OIDCProvider:
    """Any OpenID Connect provider: ``OIDCProvider(issuer=..., client_id=..., client_secret=...)``.

    ``client_id``/``client_secret`` are mcpkit's own registration at the provider, whose
    redirect URI is ``{public_url}/auth/callback``. ``scopes`` are asked of the provider
    (``openid`` always). The secret is sent with HTTP Basic (``client_secret_basic``) or
    in the form (``token_endpoint_auth_method="client_secret_post"``).
    """

    def __init__(
        self,
        *,
        issuer: str,
        client_id: str,
        client_secret: str,
        scopes: Sequence[str] = ("openid", "email", "profile"),
        token_endpoint_auth_method: str = "client_secret_basic",
        name: str | None = None,
        timeout: float = 10.0,
        http_client: httpx.AsyncClient | None = None,
        allow_insecure_http: bool = False,
    ) -> None:
        self.issuer = check_endpoint_url(
            issuer, what="OIDC issuer", allow_insecure_http=allow_insecure_http
        ).rstrip("/")
        if not client_id or not client_secret:
            raise ConfigurationError("OIDCProvider: client_id and client_secret are required")
        if token_endpoint_auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ConfigurationError(
                "OIDCProvider: token_endpoint_auth_method must be client_secret_basic or "
                "client_secret_post"
            )
        self.client_id = client_id
        self._secret = client_secret
        self.scopes = tuple(dict.fromkeys(("openid", *scopes)))
        self.auth_method = token_endpoint_auth_method
        self._name = name or self.issuer
        self.timeout = timeout
        self._allow_http = allow_insecure_http
        self._http = HTTPClientSlot(http_client, timeout=timeout)
        self._metadata: dict[str, Any] | None = None
        self._verifier: JWTVerifier | None = None
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"OIDCProvider(issuer={self.issuer!r}, client_id={self.client_id!r})"

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (fetched once)."""
        async with self._lock:
            if self._metadata is None:
                self._metadata = await self._discover()
            return self._metadata

    async def _discover(self) -> dict[str, Any]:
        url = f"{self.issuer}/.well-known/openid-configuration"
        http = self._http.get()
        try:
            data = await fetch_json(
                http,
                http.build_request("GET", url),
                what="the OIDC discovery document",
                timeout=self.timeout,
                max_bytes=_MAX_BYTES,
            )
        except VerifierUnavailable as exc:
            raise UpstreamError(str(exc), error="temporarily_unavailable") from None
        if data.get("issuer", "").rstrip("/") != self.issuer:
            raise UpstreamError("the OIDC discovery document names another issuer")
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            value = data.get(key)
            if not isinstance(value, str):
                raise UpstreamError(f"the OIDC discovery document has no {key}")
            try:
                check_endpoint_url(value, what=key, allow_insecure_http=self._allow_http)
            except ConfigurationError as exc:
                raise UpstreamError(str(exc)) from None
        offered = data.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = [a for a in DEFAULT_ALGORITHMS if a in offered] or ["RS256"]
        self._verifier = JWTVerifier(
            issuer=str(data["issuer"]),
            audience=self.client_id,
            jwks_uri=data["jwks_uri"],
            algorithms=algorithms,
            http_client=http,
            allow_insecure_http=self._allow_http,
        )
        return data

    async def authorization_url(
        self, *, redirect_uri: str, state: str, code_challenge: str, nonce: str
    ) -> str:
        meta = await self.metadata()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.scopes),
                "state": state,
                "nonce": nonce,
                "code_challenge": code_challenge,
                "code_challenge_method": "S256",
            }
        )
        endpoint: str = meta["authorization_endpoint"]
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    async def complete(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        nonce: str,
        iss: str | None,
    ) -> UpstreamIdentity:
        meta = await self.metadata()
        if iss is not None and iss != meta["issuer"]:
            raise UpstreamError("the callback names another issuer (RFC 9207)")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        answer = await self._token_request(meta, form)
        access = answer.get("access_token")
        id_token = answer.get("id_token")
        if not isinstance(access, str) or not isinstance(id_token, str):
            raise UpstreamError("the provider's token answer lacks an access or ID token")
        verifier = self._verifier
        if verifier is None:  # set by discovery, which metadata() ran
            raise UpstreamError("the provider was not discovered")
        try:
            info = await verifier.verify(id_token)
        except InvalidToken as exc:
            raise UpstreamError(f"the provider's ID token was refused: {exc}") from None
        except VerifierUnavailable as exc:
            raise UpstreamError(str(exc), error="temporarily_unavailable") from None
        if info.claims.get("nonce") != nonce:
            raise UpstreamError("the provider's ID token does not carry this sign-in's nonce")
        if not info.subject:
            raise UpstreamError("the provider's ID token has no subject")
        claims = dict(info.claims)
        userinfo = meta.get("userinfo_endpoint")
        if isinstance(userinfo, str):
            claims.update(await self._userinfo(userinfo, access, info.subject))
        refresh = answer.get("refresh_token")
        scope = answer.get("scope")
        return UpstreamIdentity(
            subject=info.subject,
            claims=claims,
            access_token=access,
            refresh_token=refresh if isinstance(refresh, str) else None,
            id_token=id_token,
            scope=scope if isinstance(scope, str) else None,
            expires_at=expires_at_of(answer),
        )

    async def _token_request(self, meta: dict[str, Any], form: dict[str, str]) -> dict[str, Any]:
        headers = {"accept": "application/json"}
        if self.auth_method == "client_secret_post":
            form = {**form, "client_id": self.client_id, "client_secret": self._secret}
        else:
            # RFC 6749 § 2.3.1: both halves form-encoded before the Basic encoding.
            pair = f"{quote(self.client_id, safe='')}:{quote(self._secret, safe='')}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        http = self._http.get()
        request = http.build_request("POST", meta["token_endpoint"], data=form, headers=headers)
        try:
            return await fetch_json(
                http,
                request,
                what="the provider's token endpoint",
                timeout=self.timeout,
                max_bytes=_MAX_BYTES,
            )
        except VerifierUnavailable as exc:
            raise UpstreamError(str(exc), error="access_denied") from None

    async def refresh(self, refresh_token: str) -> UpstreamGrant:
        meta = await self.metadata()
        answer = await self._token_request(
            meta, {"grant_type": "refresh_token", "refresh_token": refresh_token}
        )
        access = answer.get("access_token")
        if not isinstance(access, str):
            raise UpstreamError("the provider's refresh answer lacks an access token")
        refresh = answer.get("refresh_token")
        scope = answer.get("scope")
        return UpstreamGrant(
            access_token=access,
            # RFC 6749 § 6: without a new one, the old refresh token stays good.
            refresh_token=refresh if isinstance(refresh, str) else refresh_token,
            scope=scope if isinstance(scope, str) else None,
            expires_at=expires_at_of(answer),
        )

    async def _userinfo(self, url: str, access_token: str, subject: str) -> dict[str, Any]:
        """The UserInfo claims (OIDC Core § 5.3): providers that conform put only ``sub``
        in the code flow's ID token and the profile and email claims here."""
        try:
            check_endpoint_url(url, what="userinfo_endpoint", allow_insecure_http=self._allow_http)
        except ConfigurationError:
            return {}
        http = self._http.get()
        request = http.build_request(
            "GET",
            url,
            headers={"authorization": f"Bearer {access_token}", "accept": "application/json"},
        )
        try:
            data = await fetch_json(
                http,
                request,
                what="the UserInfo endpoint",
                timeout=self.timeout,
                max_bytes=_MAX_BYTES,
            )
        except VerifierUnavailable:
            return {}  # the ID token alone still says who signed in
        if data.get("sub") != subject:
            # OIDC Core § 5.3.4: a different sub means the answer is not about this user.
            raise UpstreamError("the UserInfo answer is about another subject")
        # Identity claims only: the token claims of the ID token are not overwritten.
        return {k: v for k, v in data.items() if k not in ("iss", "aud", "exp", "iat", "nonce")}

    async def aclose(self) -> None:
        await self._http.aclose()
