"""``IntrospectionVerifier``: ask the authorization server about each token (RFC 7662).

For opaque tokens, or when revocation must take effect quickly. Each unknown
token is POSTed to the introspection endpoint (with ``token_type_hint=access_token``
and this resource server's client authentication); the answer is then held to the
same rules as a JWT's claims:

* ``active`` must be ``true`` (RFC 7662 § 2.2); anything else refuses the token;
* ``exp`` not past and ``nbf`` not in the future, with ``leeway`` seconds of skew;
* with ``audience`` configured, ``aud`` (or ``resource``) must name this server
  (MCP authorization § token audience binding: no token passthrough);
* with ``issuer`` configured, ``iss`` must be it exactly.

An endpoint that fails or times out makes the token uncheckable:
:class:`~mcpkit.errors.VerifierUnavailable` (HTTP 503), never a pass, never a 401.

Answers are cached, keyed by the token's digest: an active one for ``cache_ttl``
seconds but never past the token's ``exp``, an inactive one only for
``negative_cache_ttl`` (short: a flood of bad tokens should not all reach the
authorization server, but a cache must not outlive what it says). Revocation at
the authorization server therefore takes up to ``cache_ttl`` to be seen here; set
it to 0 to ask every time. Concurrent requests with the same new token share one
introspection call.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Sequence
from typing import Any, Final, Literal
from urllib.parse import quote_plus

from .._extras import require_extra

with require_extra("auth", feature="token introspection (mcpkit.auth.introspection)"):
    import httpx

from ..errors import ConfigurationError, InvalidToken
from .claims import (
    audience_list,
    auth_info_from_claims,
    check_audience,
    check_required_scopes,
    check_times,
    token_digest,
)
from .endpoints import HTTPClientSlot, check_endpoint_url, fetch_json
from .info import AuthInfo
from .token_cache import TokenCache

__all__ = ["ClientAuthMethod", "IntrospectionVerifier"]

ClientAuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]

_MAX_TOKEN_LENGTH: Final = 16 * 1024
_MAX_ANSWER_BYTES: Final = 256 * 1024


def _basic_credentials(client_id: str, client_secret: str) -> str:
    # RFC 6749 § 2.3.1: each part form-urlencoded before the Basic encoding.
    pair = f"{quote_plus(client_id)}:{quote_plus(client_secret)}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


class IntrospectionVerifier:
    """Verifies tokens with the authorization server's RFC 7662 introspection endpoint.

    ::

        IntrospectionVerifier(
            endpoint="https://auth.example.com/oauth2/introspect",
            client_id="mcp-server",
            client_secret=os.environ["INTROSPECTION_SECRET"],
            audience="https://mcp.example.com/mcp",
        )

    ``audience`` must be given: the identifiers this server accepts (a str or a
    list), or None to skip the check, which is only right when the authorization
    server issues tokens for this server alone. ``client_auth`` is how the request
    authenticates (RFC 6749 § 2.3.1): ``client_secret_basic`` (the default with a
    secret), ``client_secret_post`` or ``none`` (``client_id`` alone, if any, in
    the body). ``required_scopes`` makes a token without them a 403
    ``insufficient_scope``.
    """

    def __init__(
        self,
        *,
        endpoint: str,
        audience: str | Sequence[str] | None,
        client_id: str | None = None,
        client_secret: str | None = None,
        client_auth: ClientAuthMethod | None = None,
        issuer: str | None = None,
        required_scopes: Sequence[str] = (),
        leeway: float = 30.0,
        cache_ttl: float = 60.0,
        negative_cache_ttl: float = 5.0,
        cache_size: int = 10_000,
        timeout: float = 5.0,
        http_client: httpx.AsyncClient | None = None,
        allow_insecure_http: bool = False,
    ) -> None:
        self.endpoint = check_endpoint_url(
            endpoint,
            what="IntrospectionVerifier: endpoint",
            allow_insecure_http=allow_insecure_http,
        )
        if client_auth is None:
            client_auth = "client_secret_basic" if client_secret is not None else "none"
        if client_auth not in ("client_secret_basic", "client_secret_post", "none"):
            raise ConfigurationError(
                f"IntrospectionVerifier: unknown client_auth {client_auth!r} "
                "(client_secret_basic, client_secret_post or none)"
            )
        if client_auth != "none" and (not client_id or client_secret is None):
            raise ConfigurationError(
                f"IntrospectionVerifier: {client_auth} needs client_id and client_secret"
            )
        self.audience = (
            None
            if audience is None
            else audience_list(audience, what="IntrospectionVerifier: audience")
        )
        self.client_id = client_id
        self.client_auth: ClientAuthMethod = client_auth
        self.issuer = issuer
        self.required_scopes = tuple(required_scopes)
        self.leeway = leeway
        self.cache_ttl = cache_ttl
        self.negative_cache_ttl = negative_cache_ttl
        self.timeout = timeout
        self._client_secret = client_secret
        self._accepted: TokenCache[AuthInfo] = TokenCache(cache_size)
        # Refusals get their own, smaller cache, so a flood of bad tokens cannot
        # evict the good ones.
        self._refused: TokenCache[str] = TokenCache(max(1, cache_size // 10))
        self._pending: dict[bytes, asyncio.Task[AuthInfo]] = {}
        self._http = HTTPClientSlot(http_client, timeout=timeout)
        self.introspections = 0
        """How many introspection requests were sent (for monitoring and tests)."""

    async def verify(self, token: str) -> AuthInfo:
        """The token's :class:`AuthInfo`; :class:`InvalidToken` when it must be refused.

        :class:`~mcpkit.errors.VerifierUnavailable` when the endpoint cannot answer.
        """
        if not token or len(token) > _MAX_TOKEN_LENGTH:
            raise InvalidToken("malformed token")
        now = time.time()
        digest = token_digest(token)
        info = self._accepted.get(digest, now=now)
        if info is None:
            refused = self._refused.get(digest, now=now)
            if refused is not None:
                raise InvalidToken(refused)
            task = self._pending.get(digest)
            if task is None:
                task = asyncio.get_running_loop().create_task(self._introspect(token, digest))
                self._pending[digest] = task
                task.add_done_callback(lambda t: self._forget(digest, t))
            info = await asyncio.shield(task)
        check_required_scopes(info.scopes, self.required_scopes)
        return info

    async def aclose(self) -> None:
        """Close the HTTP client this verifier made (not one passed in)."""
        await self._http.aclose()

    async def __aenter__(self) -> IntrospectionVerifier:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:  # never the secret
        return f"IntrospectionVerifier(endpoint={self.endpoint!r}, client_id={self.client_id!r})"

    def _forget(self, digest: bytes, task: asyncio.Task[AuthInfo]) -> None:
        if self._pending.get(digest) is task:
            del self._pending[digest]
        if not task.cancelled():
            task.exception()  # retrieved: waiters that went away do not leave it unread

    async def _introspect(self, token: str, digest: bytes) -> AuthInfo:
        client = self._http.get()
        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"Accept": "application/json"}
        if self.client_auth == "client_secret_basic":
            assert self.client_id is not None and self._client_secret is not None
            headers["Authorization"] = _basic_credentials(self.client_id, self._client_secret)
        elif self.client_auth == "client_secret_post":
            assert self.client_id is not None and self._client_secret is not None
            form["client_id"] = self.client_id
            form["client_secret"] = self._client_secret
        elif self.client_id:
            form["client_id"] = self.client_id
        request = client.build_request("POST", self.endpoint, data=form, headers=headers)
        self.introspections += 1
        answer = await fetch_json(
            client,
            request,
            what="introspection endpoint",
            timeout=self.timeout,
            max_bytes=_MAX_ANSWER_BYTES,
        )
        try:
            info = self._check(token, answer)
        except InvalidToken as exc:
            self._refused.put(digest, str(exc), until=time.time() + self.negative_cache_ttl)
            raise
        now = time.time()
        until = now + self.cache_ttl
        if info.expires_at is not None:
            until = min(until, info.expires_at)
        self._accepted.put(digest, info, until=until, now=now)
        return info

    def _check(self, token: str, answer: dict[str, Any]) -> AuthInfo:
        if answer.get("active") is not True:
            raise InvalidToken("token is not active")
        token_type = answer.get("token_type")
        if isinstance(token_type, str) and token_type.lower() == "refresh_token":
            raise InvalidToken("not an access token")
        if self.issuer is not None and answer.get("iss") != self.issuer:
            raise InvalidToken("wrong issuer")
        resource = None
        if self.audience is not None:
            resource = check_audience(answer, self.audience, names=("aud", "resource"))
        exp = check_times(answer, now=time.time(), leeway=self.leeway, require_exp=False)
        return auth_info_from_claims(token, answer, expires_at=exp, resource=resource)
