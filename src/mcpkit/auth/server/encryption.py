"""The authorization server's secrets sealed at rest: a storage wrapper with AES-256-GCM.

``EncryptedStorage(inner, key=...)`` keeps the identity provider's tokens (access,
refresh, ID) and the registered clients' secrets encrypted in ``inner`` (memory or
Redis), with a 32-byte key the operator provides: a dump of the store, or a read-only
foothold in Redis, yields nothing usable. Each value is bound to its record (the grant
id or client id as associated data), so a ciphertext moved onto another record does not
open. Codes and refresh tokens need no sealing: the stores keep only their digests.
``previous_keys`` still open what older keys sealed, for a key rotation.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from ..._extras import require_extra

with require_extra("auth", feature="the authorization server's encryption at rest"):
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ...errors import ConfigurationError
from .storage import (
    AuthCode,
    AuthServerStorage,
    Consent,
    FlowTransaction,
    RefreshGrant,
    RegisteredClient,
    UpstreamTokens,
)

__all__ = ["EncryptedStorage", "new_key"]

log = logging.getLogger("mcpkit.auth.server")

_PREFIX: Final = "sealed:v1:"


def new_key() -> str:
    """A fresh key, base64url-encoded (store it in your secret manager)."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def _load_key(key: bytes | str) -> AESGCM:
    raw: bytes = b""
    if isinstance(key, bytes):
        raw = key
    else:
        try:
            raw = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
        except (ValueError, binascii.Error):
            pass
    if len(raw) != 32:
        raise ConfigurationError(
            "the encryption key must be 32 bytes, or their base64url text (see new_key())"
        )
    return AESGCM(raw)


class EncryptedStorage:
    """``inner`` with the upstream tokens and client secrets sealed (AES-256-GCM)."""

    def __init__(
        self,
        inner: AuthServerStorage,
        *,
        key: bytes | str,
        previous_keys: Sequence[bytes | str] = (),
    ) -> None:
        self.inner = inner
        self._seal_with = _load_key(key)
        self._open_with = [self._seal_with, *(_load_key(k) for k in previous_keys)]

    def __repr__(self) -> str:
        return f"EncryptedStorage({self.inner!r})"

    def seal(self, value: str | None, *, bound_to: str) -> str | None:
        if value is None:
            return None
        nonce = os.urandom(12)
        sealed = self._seal_with.encrypt(nonce, value.encode(), bound_to.encode())
        return _PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()

    def open(self, value: str | None, *, bound_to: str) -> str | None:
        """The plaintext; ``ValueError`` when no key opens it (tampered, wrong key)."""
        if value is None:
            return None
        if not value.startswith(_PREFIX):
            raise ValueError("the value is not sealed")
        blob = base64.urlsafe_b64decode(value[len(_PREFIX) :])
        for aead in self._open_with:
            try:
                return aead.decrypt(blob[:12], blob[12:], bound_to.encode()).decode()
            except InvalidTag:
                continue
        raise ValueError("no key opens the value")

    # -- sealed records ---------------------------------------------------------------------

    async def save_client(self, client: RegisteredClient) -> None:
        sealed = self.seal(client.client_secret, bound_to="client:" + client.client_id)
        await self.inner.save_client(replace(client, client_secret=sealed))

    async def load_client(self, client_id: str) -> RegisteredClient | None:
        client = await self.inner.load_client(client_id)
        if client is None:
            return None
        try:
            secret = self.open(client.client_secret, bound_to="client:" + client_id)
        except ValueError:
            log.warning("a client's sealed secret does not open: treated as unknown")
            return None
        return replace(client, client_secret=secret)

    async def save_upstream_tokens(self, tokens: UpstreamTokens) -> None:
        bound = "grant:" + tokens.grant_id
        await self.inner.save_upstream_tokens(
            replace(
                tokens,
                access_token=self.seal(tokens.access_token, bound_to=bound) or "",
                refresh_token=self.seal(tokens.refresh_token, bound_to=bound),
                id_token=self.seal(tokens.id_token, bound_to=bound),
            )
        )

    async def load_upstream_tokens(self, grant_id: str) -> UpstreamTokens | None:
        tokens = await self.inner.load_upstream_tokens(grant_id)
        if tokens is None:
            return None
        bound = "grant:" + grant_id
        try:
            return replace(
                tokens,
                access_token=self.open(tokens.access_token, bound_to=bound) or "",
                refresh_token=self.open(tokens.refresh_token, bound_to=bound),
                id_token=self.open(tokens.id_token, bound_to=bound),
            )
        except ValueError:
            log.warning("a grant's sealed provider tokens do not open: treated as revoked")
            return None

    # -- the rest passes through ------------------------------------------------------------

    async def save_transaction(self, key: str, tx: FlowTransaction) -> None:
        await self.inner.save_transaction(key, tx)

    async def load_transaction(self, key: str) -> FlowTransaction | None:
        return await self.inner.load_transaction(key)

    async def take_transaction(self, key: str) -> FlowTransaction | None:
        return await self.inner.take_transaction(key)

    async def save_code(self, code: str, record: AuthCode) -> None:
        await self.inner.save_code(code, record)

    async def take_code(self, code: str) -> AuthCode | None:
        return await self.inner.take_code(code)

    async def save_refresh_token(self, token: str, record: RefreshGrant) -> None:
        await self.inner.save_refresh_token(token, record)

    async def take_refresh_token(self, token: str) -> RefreshGrant | None:
        return await self.inner.take_refresh_token(token)

    async def save_consent(self, consent: Consent) -> None:
        await self.inner.save_consent(consent)

    async def load_consent(self, subject: str, client_id: str) -> Consent | None:
        return await self.inner.load_consent(subject, client_id)

    async def revoke_consent(self, subject: str, client_id: str) -> None:
        await self.inner.revoke_consent(subject, client_id)

    async def revoke_grant(self, grant_id: str) -> None:
        await self.inner.revoke_grant(grant_id)
