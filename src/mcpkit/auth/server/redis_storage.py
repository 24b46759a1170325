"""The authorization server's storage on Redis (or Valkey): one state for every node.

A flow that starts on one node (``/authorize``, the consent page) completes on another
(the provider's callback, ``/token``) because nothing the handlers need lives in a
process. Every record is a JSON string under ``{prefix}{kind}:{key}`` with a Redis expiry
at its ``expires_at``, so Redis forgets it on its own; codes and refresh tokens are keyed
by their SHA-256 (a dump of the database holds no usable credential), and taking one is
a single ``GETDEL`` (Redis 6.2+), so two nodes racing for the same code cannot both win.
A grant keeps a set of its refresh tokens' digests so that revoking it finds them all.
The registration and authorization rate limits keep their buckets here too
(``{prefix}rl:...``, :meth:`RedisAuthServerStorage.rate_buckets`).
The only module of this package that imports redis (the ``mcpkit[redis]`` extra).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, TypeVar

from ..._extras import require_extra

with require_extra("redis", feature="the authorization server's Redis storage"):
    from redis.asyncio import Redis
    from redis.exceptions import RedisError

from ..._buckets import ScriptBuckets
from ..claims import token_digest
from .storage import (
    AuthCode,
    Consent,
    FlowTransaction,
    Record,
    RefreshGrant,
    RegisteredClient,
    UpstreamTokens,
)

__all__ = ["RedisAuthServerStorage"]

R = TypeVar("R", bound=Record)


def _ms(expires_at: float | None) -> int | None:
    """Milliseconds until ``expires_at`` (None: no expiry; 0 or less: already gone)."""
    return None if expires_at is None else int((expires_at - time.time()) * 1000)


class RedisAuthServerStorage:
    """``RedisAuthServerStorage("redis://host:6379/0")``, or with a client of your own."""

    def __init__(
        self, url: str | None = None, *, client: Any = None, prefix: str = "mcpkit:as:"
    ) -> None:
        if client is not None:
            if url is not None:
                raise ValueError("RedisAuthServerStorage takes a url or a client, not both")
            self.redis: Any = client
        elif url is not None:
            self.redis = Redis.from_url(url)
        else:
            raise ValueError("RedisAuthServerStorage takes a url or a client")
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"RedisAuthServerStorage(prefix={self.prefix!r})"

    async def aclose(self) -> None:
        await self.redis.aclose()

    def rate_buckets(self) -> ScriptBuckets:
        """The registration and authorization limits' buckets, on this connection
        (:class:`~.limits.SharedBuckets`): every node sharing the store shares them."""
        pool = getattr(self.redis, "connection_pool", None)
        at = getattr(pool, "connection_kwargs", {})  # host and port only: no password
        where = f"redis://{at.get('host', '?')}:{at.get('port', '?')}/{at.get('db', 0)}"
        failures = (RedisError, OSError)
        return ScriptBuckets(self.redis, prefix=f"{self.prefix}rl:", where=where, failures=failures)

    # -- plumbing ---------------------------------------------------------------------------

    def _key(self, kind: str, key: str) -> str:
        return f"{self.prefix}{kind}:{key}"

    async def _put(self, key: str, record: Record, expires_at: float | None) -> None:
        ms = _ms(expires_at)
        if ms is not None and ms <= 0:
            await self.redis.delete(key)  # already expired: nothing to keep
            return
        await self.redis.set(key, json.dumps(record.to_json(), separators=(",", ":")), px=ms)

    async def _get(self, key: str, kind: type[R], *, take: bool = False) -> R | None:
        raw = await (self.redis.getdel(key) if take else self.redis.get(key))
        if raw is None:
            return None
        data = dict(json.loads(raw))
        # Redis expires at millisecond precision, a little after the record's own time.
        expires_at = data.get("expires_at")
        if expires_at is not None and time.time() >= expires_at:
            return None
        return kind.from_json(data)

    # -- the protocol -----------------------------------------------------------------------

    async def save_client(self, client: RegisteredClient) -> None:
        await self._put(self._key("client", client.client_id), client, client.expires_at)

    async def load_client(self, client_id: str) -> RegisteredClient | None:
        return await self._get(self._key("client", client_id), RegisteredClient)

    async def save_transaction(self, key: str, tx: FlowTransaction) -> None:
        await self._put(self._key("tx", key), tx, tx.expires_at)

    async def load_transaction(self, key: str) -> FlowTransaction | None:
        return await self._get(self._key("tx", key), FlowTransaction)

    async def take_transaction(self, key: str) -> FlowTransaction | None:
        return await self._get(self._key("tx", key), FlowTransaction, take=True)

    async def save_code(self, code: str, record: AuthCode) -> None:
        await self._put(self._key("code", token_digest(code).hex()), record, record.expires_at)

    async def take_code(self, code: str) -> AuthCode | None:
        return await self._get(self._key("code", token_digest(code).hex()), AuthCode, take=True)

    async def save_refresh_token(self, token: str, record: RefreshGrant) -> None:
        digest = token_digest(token).hex()
        await self._put(self._key("rt", digest), record, record.expires_at)
        index = self._key("grant-rt", record.grant_id)
        await self.redis.sadd(index, digest)
        ms = _ms(record.expires_at)
        if ms is not None and ms > 0:
            # The index lives as long as its longest-lived token (-1: none set yet).
            if await self.redis.pttl(index) < ms:
                await self.redis.pexpire(index, ms)

    async def take_refresh_token(self, token: str) -> RefreshGrant | None:
        key = self._key("rt", token_digest(token).hex())
        return await self._get(key, RefreshGrant, take=True)

    def _consent_key(self, subject: str, client_id: str) -> str:
        pair = json.dumps([subject, client_id]).encode()
        return self._key("consent", hashlib.sha256(pair).hexdigest())

    async def save_consent(self, consent: Consent) -> None:
        key = self._consent_key(consent.subject, consent.client_id)
        await self._put(key, consent, consent.expires_at)

    async def load_consent(self, subject: str, client_id: str) -> Consent | None:
        return await self._get(self._consent_key(subject, client_id), Consent)

    async def revoke_consent(self, subject: str, client_id: str) -> None:
        await self.redis.delete(self._consent_key(subject, client_id))

    async def save_upstream_tokens(self, tokens: UpstreamTokens) -> None:
        await self._put(self._key("upstream", tokens.grant_id), tokens, tokens.expires_at)

    async def load_upstream_tokens(self, grant_id: str) -> UpstreamTokens | None:
        return await self._get(self._key("upstream", grant_id), UpstreamTokens)

    async def revoke_grant(self, grant_id: str) -> None:
        index = self._key("grant-rt", grant_id)
        digests = [
            d.decode() if isinstance(d, bytes) else d for d in await self.redis.smembers(index)
        ]
        keys = [self._key("rt", d) for d in digests]
        await self.redis.delete(self._key("upstream", grant_id), index, *keys)
