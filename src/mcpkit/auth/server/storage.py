"""The authorization server's state: registered clients, flows in progress, codes, consent,
refresh tokens and upstream tokens, behind one storage protocol with a memory implementation.

Shaped like the OAuth client's storage (:mod:`mcpkit.auth.client.storage`): frozen records
with plain-dict forms, and an async protocol that a Redis (or SQL) implementation can
satisfy. Every record carries ``expires_at`` (Unix time, or None for a registration that
does not expire) and a store never returns an expired record. Codes, refresh tokens and
flow transactions are *taken* (read and deleted at once) so that each is single-use even
when two requests race (OAuth 2.1 § 4.1.2: a code is used once). Codes and refresh tokens
are kept under their SHA-256 digest, never the raw value, so a leaked store does not leak
usable credentials.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..claims import token_digest

__all__ = [
    "AuthCode",
    "AuthServerStorage",
    "Consent",
    "FlowTransaction",
    "MemoryAuthServerStorage",
    "RefreshGrant",
    "RegisteredClient",
    "UpstreamTokens",
]


def _alive(expires_at: float | None, now: float | None = None) -> bool:
    return expires_at is None or (time.time() if now is None else now) < expires_at


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisteredClient:
    """An MCP client registered with this server (RFC 7591), by ``client_id``."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    redirect_uris: tuple[str, ...] = ()
    token_endpoint_auth_method: str = "none"
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    client_name: str | None = None
    scope: str | None = None
    issued_at: float = 0.0
    expires_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["redirect_uris"] = list(self.redirect_uris)
        data["grant_types"] = list(self.grant_types)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RegisteredClient:
        data = dict(data)
        data["redirect_uris"] = tuple(data.get("redirect_uris") or ())
        data["grant_types"] = tuple(data.get("grant_types") or ())
        return cls(**data)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowTransaction:
    """An authorization request between ``/authorize`` and the upstream callback.

    Keyed by ``id`` (the consent form's reference) until approved, then by the
    ``upstream_state`` sent to the identity provider. ``csrf`` is the consent form's
    token; ``upstream_verifier`` and ``nonce`` bind the upstream leg (PKCE, OIDC).
    """

    id: str
    client_id: str
    redirect_uri: str
    code_challenge: str
    state: str | None
    scopes: tuple[str, ...]
    resource: str
    csrf: str = field(repr=False)
    expires_at: float
    upstream_state: str | None = None
    upstream_verifier: str | None = field(default=None, repr=False)
    nonce: str | None = field(default=None, repr=False)
    known_subject: str | None = None  # consent was remembered for this user

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["scopes"] = list(self.scopes)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FlowTransaction:
        data = dict(data)
        data["scopes"] = tuple(data.get("scopes") or ())
        return cls(**data)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthCode:
    """An authorization code this server issued to an MCP client (short-lived, single-use).

    ``used``: a redeemed code's tombstone, kept until the code would have expired, so a
    second redemption is recognised as a replay (and ends the grant).
    """

    client_id: str
    redirect_uri: str
    code_challenge: str
    scopes: tuple[str, ...]
    resource: str
    subject: str
    grant_id: str
    expires_at: float
    claims: dict[str, Any] = field(default_factory=dict, repr=False)
    used: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["scopes"] = list(self.scopes)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuthCode:
        data = dict(data)
        data["scopes"] = tuple(data.get("scopes") or ())
        return cls(**data)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshGrant:
    """What a refresh token stands for: the grant it renews (rotated on every use).

    ``used``: a rotated token's tombstone, so its reuse is recognised as a replay.
    """

    client_id: str
    scopes: tuple[str, ...]
    resource: str
    subject: str
    grant_id: str
    expires_at: float
    claims: dict[str, Any] = field(default_factory=dict, repr=False)
    used: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["scopes"] = list(self.scopes)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RefreshGrant:
        data = dict(data)
        data["scopes"] = tuple(data.get("scopes") or ())
        return cls(**data)


@dataclass(frozen=True, slots=True, kw_only=True)
class Consent:
    """A user's approval of a client for some scopes (remembered, revocable)."""

    subject: str
    client_id: str
    scopes: tuple[str, ...]
    expires_at: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamTokens:
    """The identity provider's tokens for one grant, kept server-side only: never passed
    through to MCP clients (MCP authorization § access token privilege restriction)."""

    grant_id: str
    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    id_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    access_expires_at: float | None = None
    expires_at: float | None = None  # of the record (the grant's lifetime)


@runtime_checkable
class AuthServerStorage(Protocol):
    """Where the authorization server keeps its state (memory by default)."""

    async def save_client(self, client: RegisteredClient) -> None: ...
    async def load_client(self, client_id: str) -> RegisteredClient | None: ...
    async def save_transaction(self, key: str, tx: FlowTransaction) -> None: ...
    async def load_transaction(self, key: str) -> FlowTransaction | None: ...
    async def take_transaction(self, key: str) -> FlowTransaction | None:
        """The transaction saved under ``key``, deleted in the same step (single use)."""
        ...

    async def save_code(self, code: str, record: AuthCode) -> None: ...
    async def take_code(self, code: str) -> AuthCode | None: ...
    async def save_refresh_token(self, token: str, record: RefreshGrant) -> None: ...
    async def take_refresh_token(self, token: str) -> RefreshGrant | None: ...
    async def save_consent(self, consent: Consent) -> None: ...
    async def load_consent(self, subject: str, client_id: str) -> Consent | None: ...
    async def revoke_consent(self, subject: str, client_id: str) -> None: ...
    async def save_upstream_tokens(self, tokens: UpstreamTokens) -> None: ...
    async def load_upstream_tokens(self, grant_id: str) -> UpstreamTokens | None: ...
    async def revoke_grant(self, grant_id: str) -> None:
        """Forget the grant's upstream tokens and every refresh token issued for it."""
        ...


def _sweep(table: Any, now: float) -> None:
    for key in [k for k, v in table.items() if not _alive(v.expires_at, now)]:
        del table[key]


class MemoryAuthServerStorage:
    """Kept in this process only (one node; gone when it exits). Expired records are
    dropped when read and swept every ``sweep_every`` writes."""

    def __init__(self, *, sweep_every: int = 256) -> None:
        self._clients: dict[str, RegisteredClient] = {}
        self._transactions: dict[str, FlowTransaction] = {}
        self._codes: dict[bytes, AuthCode] = {}
        self._refresh: dict[bytes, RefreshGrant] = {}
        self._consent: dict[tuple[str, str], Consent] = {}
        self._upstream: dict[str, UpstreamTokens] = {}
        self._lock = asyncio.Lock()
        self._writes = 0
        self._sweep_every = sweep_every

    def _wrote(self) -> None:
        self._writes += 1
        if self._writes % self._sweep_every:
            return
        now = time.time()
        for table in (
            self._clients,
            self._transactions,
            self._codes,
            self._refresh,
            self._consent,
            self._upstream,
        ):
            _sweep(table, now)

    async def save_client(self, client: RegisteredClient) -> None:
        async with self._lock:
            self._clients[client.client_id] = client
            self._wrote()

    async def load_client(self, client_id: str) -> RegisteredClient | None:
        client = self._clients.get(client_id)
        return client if client is not None and _alive(client.expires_at) else None

    async def save_transaction(self, key: str, tx: FlowTransaction) -> None:
        async with self._lock:
            self._transactions[key] = tx
            self._wrote()

    async def load_transaction(self, key: str) -> FlowTransaction | None:
        tx = self._transactions.get(key)
        return tx if tx is not None and _alive(tx.expires_at) else None

    async def take_transaction(self, key: str) -> FlowTransaction | None:
        async with self._lock:
            tx = self._transactions.pop(key, None)
        return tx if tx is not None and _alive(tx.expires_at) else None

    async def save_code(self, code: str, record: AuthCode) -> None:
        async with self._lock:
            self._codes[token_digest(code)] = record
            self._wrote()

    async def take_code(self, code: str) -> AuthCode | None:
        async with self._lock:
            record = self._codes.pop(token_digest(code), None)
        return record if record is not None and _alive(record.expires_at) else None

    async def save_refresh_token(self, token: str, record: RefreshGrant) -> None:
        async with self._lock:
            self._refresh[token_digest(token)] = record
            self._wrote()

    async def take_refresh_token(self, token: str) -> RefreshGrant | None:
        async with self._lock:
            record = self._refresh.pop(token_digest(token), None)
        return record if record is not None and _alive(record.expires_at) else None

    async def save_consent(self, consent: Consent) -> None:
        async with self._lock:
            self._consent[(consent.subject, consent.client_id)] = consent
            self._wrote()

    async def load_consent(self, subject: str, client_id: str) -> Consent | None:
        consent = self._consent.get((subject, client_id))
        return consent if consent is not None and _alive(consent.expires_at) else None

    async def revoke_consent(self, subject: str, client_id: str) -> None:
        async with self._lock:
            self._consent.pop((subject, client_id), None)

    async def save_upstream_tokens(self, tokens: UpstreamTokens) -> None:
        async with self._lock:
            self._upstream[tokens.grant_id] = tokens
            self._wrote()

    async def load_upstream_tokens(self, grant_id: str) -> UpstreamTokens | None:
        tokens = self._upstream.get(grant_id)
        return tokens if tokens is not None and _alive(tokens.expires_at) else None

    async def revoke_grant(self, grant_id: str) -> None:
        async with self._lock:
            self._upstream.pop(grant_id, None)
            for key in [k for k, v in self._refresh.items() if v.grant_id == grant_id]:
                del self._refresh[key]

    def __len__(self) -> int:
        """Records held, expired ones not yet swept included (for monitoring and tests)."""
        tables: tuple[dict[Any, Any], ...] = (
            self._clients,
            self._transactions,
            self._codes,
            self._refresh,
            self._consent,
            self._upstream,
        )
        return sum(map(len, tables))

    def __repr__(self) -> str:
        return f"MemoryAuthServerStorage({len(self._clients)} clients)"
