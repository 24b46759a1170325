"""``AuthInfo``: what a verified access token says about the request that carried it.

A verifier builds one from a token (JWT claims, an introspection answer, a static
table); the HTTP layer puts it in the ASGI scope under :data:`AUTH_SCOPE_KEY`;
handlers read it as ``ctx.auth`` (also ``ctx.extra.auth_info``, Mastra's
spelling). Any ASGI middleware in front of mcpkit's app may supply it the same
way: set ``scope["mcpkit.auth"]`` to an ``AuthInfo`` (or any object with
``subject``/``client_id`` attributes) before calling the app.

An ``AuthInfo`` for a token that mcpkit's own authorization server issued (the OAuth
proxy, :mod:`mcpkit.auth.server`) also reaches the identity provider's token for that
user, :meth:`AuthInfo.upstream_token`, through the accessor that server's verifier sets:
nothing here knows the authorization server.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..errors import UpstreamError

__all__ = [
    "AUTH_SCOPE_KEY",
    "RESOURCE_METADATA_SCOPE_KEY",
    "AuthInfo",
    "UpstreamError",
    "UpstreamTokenSource",
]

AUTH_SCOPE_KEY: Final = "mcpkit.auth"
"""ASGI scope key of the request's :class:`AuthInfo` (absent or None: unauthenticated)."""

RESOURCE_METADATA_SCOPE_KEY: Final = "mcpkit.auth.resource_metadata"
"""ASGI scope key of the protected resource metadata URL, for ``WWW-Authenticate``
challenges raised after the token was accepted (403 ``insufficient_scope``)."""


class UpstreamTokenSource(Protocol):
    """Where :meth:`AuthInfo.upstream_token` gets the provider's token for a user
    (``OAuthProxy.upstream_token`` is one): refreshed when it ends within ``margin`` s."""

    def __call__(self, auth: AuthInfo, /, *, margin: float) -> Awaitable[str]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthInfo:
    """A verified access token and who it speaks for.

    ``token`` is the raw bearer token (never printed: it is left out of ``repr``);
    ``subject`` the user or workload (``sub``), ``client_id`` the OAuth client,
    ``issuer`` the authorization server, ``scopes`` what was granted,
    ``expires_at`` a Unix time or None, ``resource`` the audience the token was
    issued for (RFC 8707), ``claims`` every claim or introspection field as given.
    ``upstream``: set by mcpkit's authorization server on its own tokens, for
    :meth:`upstream_token` (None elsewhere).
    """

    token: str = field(repr=False)
    subject: str | None = None
    client_id: str | None = None
    issuer: str | None = None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    resource: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # principal's memo: verifiers hand out one AuthInfo per cached token, so a
    # request costs an attribute read, not a JSON dump (sessions check it each request).
    _principal: str | None = field(default=None, init=False, repr=False, compare=False)
    upstream: UpstreamTokenSource | None = field(default=None, repr=False, compare=False)

    @property
    def principal(self) -> str:
        """Who this token speaks for, as sessions and ``requestState`` are bound to it.

        With a subject (a non-empty string), the issuer with the subject and client
        id: a refreshed token of the same subject is the same principal. Without one
        (a client-credentials token that carries no ``sub``), the token is its own
        principal, by its SHA-256 digest (never the token itself: principals are
        stored in session records). Never the client id or the issuer alone: every
        user of one client would share it.
        """
        principal = self._principal
        if principal is None:
            subject = self.subject
            who: dict[str, Any]
            if isinstance(subject, str) and subject:
                who = {
                    k: v
                    for k, v in (
                        ("iss", self.issuer),
                        ("sub", subject),
                        ("client_id", self.client_id),
                    )
                    if v is not None
                }
            else:
                digest = hashlib.sha256(self.token.encode("utf-8", "surrogatepass")).hexdigest()
                who = {"token_sha256": digest}
            principal = json.dumps(who, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            object.__setattr__(self, "_principal", principal)
        return principal

    async def upstream_token(self, *, margin: float = 30.0) -> str:
        """The identity provider's access token for this user (``await ctx.auth.upstream_token()``).

        For a token of mcpkit's authorization server (:class:`~mcpkit.auth.server.OAuthProxy`),
        which keeps the provider's tokens server-side: a tool calls the provider's APIs
        on the user's behalf with it. Refreshed at the provider first when it ends within
        ``margin`` seconds. :class:`UpstreamError` for any other token, or
        when the grant was revoked, expired or cannot be refreshed.
        """
        source = self.upstream
        if source is None:
            raise UpstreamError(
                "this token was not issued by an mcpkit authorization server: "
                "no identity provider token is kept for it"
            )
        return await source(self, margin=margin)

    def has_scopes(self, needed: Iterable[str]) -> bool:
        """True when every scope in ``needed`` was granted."""
        return self.scopes.issuperset(needed)

    def missing_scopes(self, needed: Iterable[str]) -> frozenset[str]:
        """The scopes of ``needed`` that were not granted."""
        return frozenset(needed) - self.scopes

    def expired(self, *, now: float | None = None, leeway: float = 0.0) -> bool:
        """True when the token has an expiry and it is past (with ``leeway`` seconds).

        An expiry that is not a finite number counts as past: every comparison with
        NaN is false, so it would otherwise never expire.
        """
        expires_at = self.expires_at
        if expires_at is None:
            return False
        if type(expires_at) not in (int, float) or not math.isfinite(expires_at):
            return True
        return (time.time() if now is None else now) > expires_at + leeway
