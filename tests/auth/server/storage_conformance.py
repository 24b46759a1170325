"""What every authorization server storage must do, as a class to subclass.

A storage implementation plugs in by subclassing with a ``storage`` fixture::

    class TestRedisAuthServerStorage(AuthServerStorageConformance):
        @pytest.fixture
        async def storage(self, redis_url: str) -> AsyncIterator[AuthServerStorage]:
            ...

Covered: round trips of every record kind, single use of codes, flows and refresh
tokens (also when two takers race), expiry of every kind, consent revocation, and a
grant's revocation taking its refresh tokens and upstream tokens with it.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from mcpkit.auth.server.storage import (
    AuthCode,
    AuthServerStorage,
    Consent,
    FlowTransaction,
    MemoryAuthServerStorage,
    RefreshGrant,
    RegisteredClient,
    UpstreamTokens,
)


def code_record(*, expires_in: float = 60.0, grant_id: str = "g1") -> AuthCode:
    return AuthCode(client_id="c1", redirect_uri="http://127.0.0.1/cb", code_challenge="x" * 43,
                    scopes=("mcp:tools",), resource="https://mcp.example/mcp", subject="alice",
                    grant_id=grant_id, expires_at=time.time() + expires_in,
                    claims={"email": "alice@example.com"})  # fmt: skip


def refresh_record(*, expires_in: float = 600.0, grant_id: str = "g1") -> RefreshGrant:
    return RefreshGrant(client_id="c1", scopes=("mcp:tools",), resource="https://mcp.example/mcp",
                        subject="alice", grant_id=grant_id,
                        expires_at=time.time() + expires_in)  # fmt: skip


def flow(*, expires_in: float = 600.0) -> FlowTransaction:
    return FlowTransaction(id="f1", client_id="c1", redirect_uri="http://127.0.0.1/cb",
                           code_challenge="x" * 43, state="s", scopes=("a", "b"),
                           resource="https://mcp.example/mcp", csrf="token",
                           expires_at=time.time() + expires_in)  # fmt: skip


class AuthServerStorageConformance:
    @pytest.fixture
    def storage(self) -> AuthServerStorage:
        return MemoryAuthServerStorage()

    async def test_clients_round_trip_and_expire(self, storage: AuthServerStorage) -> None:
        client = RegisteredClient(client_id="c1", redirect_uris=("http://127.0.0.1/cb",),
                                  client_name="Agent", issued_at=time.time())  # fmt: skip
        await storage.save_client(client)
        assert await storage.load_client("c1") == client
        assert await storage.load_client("c2") is None
        await storage.save_client(
            RegisteredClient(client_id="old", expires_at=time.time() - 1, issued_at=0.0)
        )
        assert await storage.load_client("old") is None

    async def test_a_code_is_taken_once(self, storage: AuthServerStorage) -> None:
        record = code_record()
        await storage.save_code("the-code", record)
        assert await storage.take_code("the-code") == record
        assert await storage.take_code("the-code") is None
        assert await storage.take_code("another") is None

    async def test_racing_takers_get_a_code_once(self, storage: AuthServerStorage) -> None:
        await storage.save_code("the-code", code_record())
        results = await asyncio.gather(*(storage.take_code("the-code") for _ in range(10)))
        assert sum(r is not None for r in results) == 1

    async def test_expired_records_are_never_returned(self, storage: AuthServerStorage) -> None:
        await storage.save_code("c", code_record(expires_in=-1))
        await storage.save_refresh_token("r", refresh_record(expires_in=-1))
        await storage.save_transaction("t", flow(expires_in=-1))
        await storage.save_consent(
            Consent(subject="a", client_id="c1", scopes=(), expires_at=time.time() - 1)
        )
        await storage.save_upstream_tokens(
            UpstreamTokens(grant_id="g", access_token="at", expires_at=time.time() - 1)
        )
        assert await storage.take_code("c") is None
        assert await storage.take_refresh_token("r") is None
        assert await storage.load_transaction("t") is None
        assert await storage.take_transaction("t") is None
        assert await storage.load_consent("a", "c1") is None
        assert await storage.load_upstream_tokens("g") is None

    async def test_a_flow_is_loaded_many_times_but_taken_once(
        self, storage: AuthServerStorage
    ) -> None:
        saved = flow()
        await storage.save_transaction("flow:f1", saved)
        assert await storage.load_transaction("flow:f1") == saved
        assert await storage.load_transaction("flow:f1") == saved
        assert await storage.take_transaction("flow:f1") is not None
        assert await storage.take_transaction("flow:f1") is None
        assert await storage.load_transaction("flow:f1") is None

    async def test_refresh_tokens_are_taken_once(self, storage: AuthServerStorage) -> None:
        record = refresh_record()
        await storage.save_refresh_token("rt", record)
        assert await storage.take_refresh_token("rt") == record
        assert await storage.take_refresh_token("rt") is None

    async def test_consent_is_remembered_per_user_and_client_and_revocable(
        self, storage: AuthServerStorage
    ) -> None:
        consent = Consent(subject="alice", client_id="c1", scopes=("mcp:tools",))
        await storage.save_consent(consent)
        assert await storage.load_consent("alice", "c1") == consent
        assert await storage.load_consent("alice", "c2") is None
        assert await storage.load_consent("bob", "c1") is None
        await storage.revoke_consent("alice", "c1")
        assert await storage.load_consent("alice", "c1") is None

    async def test_revoking_a_grant_takes_its_refresh_and_upstream_tokens(
        self, storage: AuthServerStorage
    ) -> None:
        await storage.save_upstream_tokens(UpstreamTokens(grant_id="g1", access_token="up1"))
        await storage.save_upstream_tokens(UpstreamTokens(grant_id="g2", access_token="up2"))
        await storage.save_refresh_token("r1", refresh_record(grant_id="g1"))
        await storage.save_refresh_token("r1b", refresh_record(grant_id="g1"))
        await storage.save_refresh_token("r2", refresh_record(grant_id="g2"))
        loaded = await storage.load_upstream_tokens("g1")
        assert loaded is not None and loaded.access_token == "up1"
        await storage.revoke_grant("g1")
        assert await storage.load_upstream_tokens("g1") is None
        assert await storage.take_refresh_token("r1") is None
        assert await storage.take_refresh_token("r1b") is None
        assert await storage.take_refresh_token("r2") is not None
        assert await storage.load_upstream_tokens("g2") is not None

    def test_records_survive_their_plain_dict_forms(self) -> None:
        client = RegisteredClient(client_id="c", redirect_uris=("https://a/cb",), issued_at=1.0)
        assert RegisteredClient.from_json(client.to_json()) == client
        code = code_record()
        assert AuthCode.from_json(code.to_json()) == code
        refresh = refresh_record()
        assert RefreshGrant.from_json(refresh.to_json()) == refresh
        tx = flow()
        assert FlowTransaction.from_json(tx.to_json()) == tx

    def test_secrets_stay_out_of_reprs(self) -> None:
        text = repr(
            UpstreamTokens(grant_id="g", access_token="SECRET-AT", refresh_token="SECRET-RT")
        )
        text += repr(RegisteredClient(client_id="c", client_secret="SECRET-CS", issued_at=0.0))
        assert "SECRET" not in text
