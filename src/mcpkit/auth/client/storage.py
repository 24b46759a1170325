"""Where an OAuth client keeps its tokens and its registration, per protected server.

A store is keyed by the protected resource (the MCP server's URL, as the
``resource`` parameter names it), so one store serves many servers. Everything
in it is a secret: a store must never log what it holds, and the file store
keeps its file readable by its owner only.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["ClientRegistration", "MemoryTokenStorage", "OAuthTokens", "TokenStorage"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthTokens:
    """An access token and what came with it from the token endpoint."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None  # Unix time; None: the server gave no expires_in
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    issuer: str | None = None  # the authorization server that issued them

    def expired(self, *, now: float | None = None, margin: float = 30.0) -> bool:
        """True when the token expires within ``margin`` seconds (refresh before it does)."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - margin

    def to_json(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "expires_at": self.expires_at,
            "refresh_token": self.refresh_token,
            "scope": self.scope,
            "issuer": self.issuer,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OAuthTokens:
        return cls(
            access_token=str(data["access_token"]),
            token_type=str(data.get("token_type") or "Bearer"),
            expires_at=data.get("expires_at"),
            refresh_token=data.get("refresh_token"),
            scope=data.get("scope"),
            issuer=data.get("issuer"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRegistration:
    """How this client is known to one authorization server (``issuer``).

    From pre-registration, a Client ID Metadata Document URL used as
    ``client_id``, or Dynamic Client Registration (RFC 7591; ``metadata`` is the
    server's answer). A registration is good only for its ``issuer``: when the
    protected resource moves to another authorization server, the client
    registers again.
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str = "none"
    issuer: str | None = None
    redirect_uris: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "issuer": self.issuer,
            "redirect_uris": list(self.redirect_uris),
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientRegistration:
        return cls(
            client_id=str(data["client_id"]),
            client_secret=data.get("client_secret"),
            token_endpoint_auth_method=str(data.get("token_endpoint_auth_method") or "none"),
            issuer=data.get("issuer"),
            redirect_uris=tuple(data.get("redirect_uris") or ()),
            metadata=dict(data.get("metadata") or {}),
        )


@runtime_checkable
class TokenStorage(Protocol):
    """Tokens and registrations per protected resource (``key``: the server's URL)."""

    async def load_tokens(self, key: str) -> OAuthTokens | None: ...
    async def save_tokens(self, key: str, tokens: OAuthTokens) -> None: ...
    async def load_registration(self, key: str) -> ClientRegistration | None: ...
    async def save_registration(self, key: str, registration: ClientRegistration) -> None: ...
    async def clear(self, key: str) -> None:
        """Forget tokens and registration of ``key`` (after a refused refresh, a logout)."""
        ...


class MemoryTokenStorage:
    """Kept in this process only: gone when it exits (the default)."""

    def __init__(self) -> None:
        self._tokens: dict[str, OAuthTokens] = {}
        self._registrations: dict[str, ClientRegistration] = {}
        self._lock = asyncio.Lock()

    async def load_tokens(self, key: str) -> OAuthTokens | None:
        return self._tokens.get(key)

    async def save_tokens(self, key: str, tokens: OAuthTokens) -> None:
        async with self._lock:
            self._tokens[key] = tokens

    async def load_registration(self, key: str) -> ClientRegistration | None:
        return self._registrations.get(key)

    async def save_registration(self, key: str, registration: ClientRegistration) -> None:
        async with self._lock:
            self._registrations[key] = registration

    async def clear(self, key: str) -> None:
        async with self._lock:
            self._tokens.pop(key, None)
            self._registrations.pop(key, None)

    def __repr__(self) -> str:
        return f"MemoryTokenStorage({len(self._tokens)} servers)"
