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
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from ..claims import token_digest

__all__ = [
    "AuthCode",
    "AuthServerStorage",
    "Consent",
    "ExpiringMap",
    "FlowTransaction",
    "MemoryAuthServerStorage",
    "Record",
    "RefreshGrant",
    "RegisteredClient",
    "UpstreamTokens",
]


def _alive(expires_at: float | None, now: float | None = None) -> bool:
    return expires_at is None or (time.time() if now is None else now) < expires_at


class Record:
    """A stored record's plain-dict form (JSON: tuples as lists), for every record kind.

    ``TUPLES`` names the fields held as tuples, turned back into tuples when read.
    """

    __slots__ = ()
    TUPLES: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)  # type: ignore[call-overload]  # subclasses are dataclasses
        for name in self.TUPLES:
            data[name] = list(data[name])
        return data

    @classmethod
    def from_json(cls: type[R], data: dict[str, Any]) -> R:
        data = dict(data)
        for name in cls.TUPLES:
            data[name] = tuple(data.get(name) or ())
        return cls(**data)


R = TypeVar("R", bound=Record)


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisteredClient(Record):
    """An MCP client registered with this server (RFC 7591), by ``client_id``."""

    TUPLES = ("redirect_uris", "grant_types")

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


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowTransaction(Record):
    """An authorization request between ``/authorize`` and the upstream callback.

    Keyed by ``id`` (the consent form's reference) until approved, then by the
    ``upstream_state`` sent to the identity provider. ``csrf`` is the consent form's
    token; ``upstream_verifier`` and ``nonce`` bind the upstream leg (PKCE, OIDC).
    """

    TUPLES = ("scopes",)

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


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthCode(Record):
    """An authorization code this server issued to an MCP client (short-lived, single-use).

    ``used``: a redeemed code's tombstone, kept until the code would have expired, so a
    second redemption is recognised as a replay (and ends the grant).
    """

    TUPLES = ("scopes",)

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


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshGrant(Record):
    """What a refresh token stands for: the grant it renews (rotated on every use).

    ``used``: a rotated token's tombstone, so its reuse is recognised as a replay.
    """

    TUPLES = ("scopes",)

    client_id: str
    scopes: tuple[str, ...]
    resource: str
    subject: str
    grant_id: str
    expires_at: float
    claims: dict[str, Any] = field(default_factory=dict, repr=False)
    used: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Consent(Record):
    """A user's approval of a client for some scopes (remembered, revocable)."""

    TUPLES = ("scopes",)

    subject: str
    client_id: str
    scopes: tuple[str, ...]
    expires_at: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamTokens(Record):
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


K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound="_Expiring")


class _Expiring(Protocol):
    @property
    def expires_at(self) -> float | None: ...


class ExpiringMap(Generic[K, V]):
    """``key -> record`` where a record past its ``expires_at`` is never handed out
    (dropped when read, or by :meth:`sweep`)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[K, V] = {}

    def put(self, key: K, value: V) -> None:
        self._items[key] = value

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        return value if value is not None and _alive(value.expires_at) else None

    def take(self, key: K) -> V | None:
        """The record under ``key``, removed in the same step (single use)."""
        value = self._items.pop(key, None)
        return value if value is not None and _alive(value.expires_at) else None

    def drop(self, key: K) -> None:
        self._items.pop(key, None)

    def drop_where(self, doomed: Callable[[V], bool]) -> None:
        for key in [k for k, v in self._items.items() if doomed(v)]:
            del self._items[key]

    def sweep(self, now: float) -> None:
        """Forget the records expired at ``now``."""
        self.drop_where(lambda value: not _alive(value.expires_at, now))

    def __len__(self) -> int:
        return len(self._items)


class MemoryAuthServerStorage:
    """Kept in this process only (one node; gone when it exits). Expired records are
    dropped when read and swept every ``sweep_every`` writes."""

    def __init__(self, *, sweep_every: int = 256) -> None:
        self._clients: ExpiringMap[str, RegisteredClient] = ExpiringMap()
        self._transactions: ExpiringMap[str, FlowTransaction] = ExpiringMap()
        self._codes: ExpiringMap[bytes, AuthCode] = ExpiringMap()
        self._refresh: ExpiringMap[bytes, RefreshGrant] = ExpiringMap()
        self._consent: ExpiringMap[tuple[str, str], Consent] = ExpiringMap()
        self._upstream: ExpiringMap[str, UpstreamTokens] = ExpiringMap()
        self._tables: tuple[ExpiringMap[Any, Any], ...] = (
            self._clients, self._transactions, self._codes, self._refresh, self._consent,
            self._upstream,
        )  # fmt: skip
        self._lock = asyncio.Lock()
        self._writes = 0
        self._sweep_every = sweep_every

    async def _put(self, table: ExpiringMap[K, V], key: K, value: V) -> None:
        async with self._lock:
            table.put(key, value)
            self._writes += 1
            if not self._writes % self._sweep_every:
                now = time.time()
                for each in self._tables:
                    each.sweep(now)

    async def _take(self, table: ExpiringMap[K, V], key: K) -> V | None:
        async with self._lock:
            return table.take(key)

    async def save_client(self, client: RegisteredClient) -> None:
        await self._put(self._clients, client.client_id, client)

    async def load_client(self, client_id: str) -> RegisteredClient | None:
        return self._clients.get(client_id)

    async def save_transaction(self, key: str, tx: FlowTransaction) -> None:
        await self._put(self._transactions, key, tx)

    async def load_transaction(self, key: str) -> FlowTransaction | None:
        return self._transactions.get(key)

    async def take_transaction(self, key: str) -> FlowTransaction | None:
        return await self._take(self._transactions, key)

    async def save_code(self, code: str, record: AuthCode) -> None:
        await self._put(self._codes, token_digest(code), record)

    async def take_code(self, code: str) -> AuthCode | None:
        return await self._take(self._codes, token_digest(code))

    async def save_refresh_token(self, token: str, record: RefreshGrant) -> None:
        await self._put(self._refresh, token_digest(token), record)

    async def take_refresh_token(self, token: str) -> RefreshGrant | None:
        return await self._take(self._refresh, token_digest(token))

    async def save_consent(self, consent: Consent) -> None:
        await self._put(self._consent, (consent.subject, consent.client_id), consent)

    async def load_consent(self, subject: str, client_id: str) -> Consent | None:
        return self._consent.get((subject, client_id))

    async def revoke_consent(self, subject: str, client_id: str) -> None:
        async with self._lock:
            self._consent.drop((subject, client_id))

    async def save_upstream_tokens(self, tokens: UpstreamTokens) -> None:
        await self._put(self._upstream, tokens.grant_id, tokens)

    async def load_upstream_tokens(self, grant_id: str) -> UpstreamTokens | None:
        return self._upstream.get(grant_id)

    async def revoke_grant(self, grant_id: str) -> None:
        async with self._lock:
            self._upstream.drop(grant_id)
            self._refresh.drop_where(lambda record: record.grant_id == grant_id)

    def __len__(self) -> int:
        """Records held, expired ones not yet swept included (for monitoring and tests)."""
        return sum(map(len, self._tables))

    def __repr__(self) -> str:
        return f"MemoryAuthServerStorage({len(self._clients)} clients)"
