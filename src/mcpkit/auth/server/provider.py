"""The authorization server's upstream: the identity provider users sign in with.

An :class:`UpstreamProvider` knows the provider's authorization URL and how to turn the
code it sends to mcpkit's fixed callback into an :class:`UpstreamIdentity` (who signed
in, and the provider's tokens, which stay server-side). mcpkit is the provider's one
pre-registered confidential client; the MCP clients never see it. Presets live in
:mod:`.presets`: generic OIDC discovery, and GitHub, which speaks OAuth 2.0 without
OpenID Connect (no ID token: the ``nonce`` is ignored and the user comes from its API).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..info import UpstreamError

__all__ = ["UpstreamError", "UpstreamGrant", "UpstreamIdentity", "UpstreamProvider"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamIdentity:
    """Who signed in at the provider, with the provider's tokens for that sign-in."""

    subject: str
    claims: Mapping[str, Any] = field(default_factory=dict)
    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    id_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    expires_at: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamGrant:
    """The provider's answer to a refresh: a new access token, maybe a new refresh token."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    expires_at: float | None = None


@runtime_checkable
class UpstreamProvider(Protocol):
    """An identity provider mcpkit sends users to (OAuth 2.0 / OIDC, code flow + PKCE)."""

    @property
    def name(self) -> str:
        """A short human name (shown on the consent page)."""
        ...

    async def authorization_url(
        self, *, redirect_uri: str, state: str, code_challenge: str, nonce: str
    ) -> str:
        """Where to send the browser, asking for a code back at ``redirect_uri``."""
        ...

    async def complete(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        nonce: str,
        iss: str | None,
    ) -> UpstreamIdentity:
        """Exchange the code from the callback; raise :class:`UpstreamError` when refused."""
        ...

    async def refresh(self, refresh_token: str) -> UpstreamGrant:
        """New provider tokens for a refresh token; :class:`UpstreamError` when refused."""
        ...
