"""Secrets sealed at rest: the encrypted storage passes the conformance class, keeps no
plaintext secret in the store it wraps, binds each value to its record, and rotates keys."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mcpkit.auth.server.encryption import EncryptedStorage, new_key
from mcpkit.auth.server.storage import (
    AuthServerStorage,
    MemoryAuthServerStorage,
    RegisteredClient,
    UpstreamTokens,
)
from mcpkit.errors import ConfigurationError
from tests.auth.server.asgi_support import make_proxy
from tests.auth.server.storage_conformance import AuthServerStorageConformance


class TestEncryptedStorage(AuthServerStorageConformance):
    @pytest.fixture
    def storage(self) -> AuthServerStorage:
        return EncryptedStorage(MemoryAuthServerStorage(), key=new_key())


TOKENS = UpstreamTokens(grant_id="g1", access_token="UP-ACCESS", refresh_token="UP-REFRESH",
                        id_token="UP-ID")  # fmt: skip
CLIENT = RegisteredClient(client_id="c1", client_secret="CLIENT-SECRET", issued_at=0.0)


async def test_the_wrapped_store_holds_no_plaintext_secret() -> None:
    inner = MemoryAuthServerStorage()
    sealed = EncryptedStorage(inner, key=new_key())
    await sealed.save_upstream_tokens(TOKENS)
    await sealed.save_client(CLIENT)
    raw_tokens = await inner.load_upstream_tokens("g1")
    raw_client = await inner.load_client("c1")
    assert raw_tokens is not None and raw_client is not None
    stored = repr((raw_tokens.access_token, raw_tokens.refresh_token, raw_tokens.id_token,
                   raw_client.client_secret))  # fmt: skip
    assert "UP-" not in stored and "CLIENT-SECRET" not in stored
    assert await sealed.load_upstream_tokens("g1") == TOKENS
    assert await sealed.load_client("c1") == CLIENT


async def test_a_sealed_value_moved_to_another_record_does_not_open() -> None:
    inner = MemoryAuthServerStorage()
    sealed = EncryptedStorage(inner, key=new_key())
    await sealed.save_upstream_tokens(TOKENS)
    stolen = await inner.load_upstream_tokens("g1")
    assert stolen is not None
    await inner.save_upstream_tokens(replace(stolen, grant_id="g2"))
    assert await sealed.load_upstream_tokens("g2") is None


async def test_keys_rotate_and_a_wrong_key_opens_nothing() -> None:
    inner = MemoryAuthServerStorage()
    old, new = new_key(), new_key()
    await EncryptedStorage(inner, key=old).save_upstream_tokens(TOKENS)
    rotated = EncryptedStorage(inner, key=new, previous_keys=[old])
    assert await rotated.load_upstream_tokens("g1") == TOKENS
    assert await EncryptedStorage(inner, key=new).load_upstream_tokens("g1") is None


def test_bad_keys_are_refused_and_the_proxy_seals_with_its_key() -> None:
    for key in ("short", b"x" * 31, "!!!"):
        with pytest.raises(ConfigurationError):
            EncryptedStorage(MemoryAuthServerStorage(), key=key)
    assert isinstance(make_proxy(encryption_key=new_key()).storage, EncryptedStorage)
