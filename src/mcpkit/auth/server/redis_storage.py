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
from dataclasses import asdict
from typing import Any

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
    RefreshGrant,
    RegisteredClient,
    UpstreamTokens,
)

__all__ = ["RedisAuthServerStorage"]


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

    async def _put(self, key: str, data: dict[str, Any], expires_at: float | None) -> None:
        ms = _ms(expires_at)
        if ms is not None and ms <= 0:
            await self.redis.delete(key)  # already expired: nothing to keep
            return
        await self.redis.set(key, json.dumps(data, separators=(",", ":")), px=ms)

    async def _get(self, key: str) -> dict[str, Any] | None:
        raw = await self.redis.get(key)
        return None if raw is None else dict(json.loads(raw))

    async def _take(self, key: str) -> dict[str, Any] | None:
        raw = await self.redis.getdel(key)
        return None if raw is None else dict(json.loads(raw))

    @staticmethod
    def _alive(data: dict[str, Any] | None) -> dict[str, Any] | None:
        # Redis expires at millisecond precision, a little after the record's own time.
        if data is None:
            return None
        expires_at = data.get("expires_at")
        return data if expires_at is None or time.time() < expires_at else None

    # -- the protocol -----------------------------------------------------------------------

    async def save_client(self, client: RegisteredClient) -> None:
        await self._put(self._key("client", client.client_id), client.to_json(), client.expires_at)

    async def load_client(self, client_id: str) -> RegisteredClient | None:
        data = self._alive(await self._get(self._key("client", client_id)))
        return None if data is None else RegisteredClient.from_json(data)

    async def save_transaction(self, key: str, tx: FlowTransaction) -> None:
        await self._put(self._key("tx", key), tx.to_json(), tx.expires_at)

    async def load_transaction(self, key: str) -> FlowTransaction | None:
        data = self._alive(await self._get(self._key("tx", key)))
        return None if data is None else FlowTransaction.from_json(data)

    async def take_transaction(self, key: str) -> FlowTransaction | None:
        data = self._alive(await self._take(self._key("tx", key)))
        return None if data is None else FlowTransaction.from_json(data)

    async def save_code(self, code: str, record: AuthCode) -> None:
        await self._put(
            self._key("code", token_digest(code).hex()), record.to_json(), record.expires_at
        )

    async def take_code(self, code: str) -> AuthCode | None:
        data = self._alive(await self._take(self._key("code", token_digest(code).hex())))
        return None if data is None else AuthCode.from_json(data)

    async def save_refresh_token(self, token: str, record: RefreshGrant) -> None:
        digest = token_digest(token).hex()
        await self._put(self._key("rt", digest), record.to_json(), record.expires_at)
        index = self._key("grant-rt", record.grant_id)
        await self.redis.sadd(index, digest)
        ms = _ms(record.expires_at)
        if ms is not None and ms > 0:
            # The index lives as long as its longest-lived token (-1: none set yet).
            if await self.redis.pttl(index) < ms:
                await self.redis.pexpire(index, ms)

    async def take_refresh_token(self, token: str) -> RefreshGrant | None:
        data = self._alive(await self._take(self._key("rt", token_digest(token).hex())))
        return None if data is None else RefreshGrant.from_json(data)

    def _consent_key(self, subject: str, client_id: str) -> str:
        pair = json.dumps([subject, client_id]).encode()
        return self._key("consent", hashlib.sha256(pair).hexdigest())

    async def save_consent(self, consent: Consent) -> None:
        data = asdict(consent)
        data["scopes"] = list(consent.scopes)
        await self._put(
            self._consent_key(consent.subject, consent.client_id), data, consent.expires_at
        )

    async def load_consent(self, subject: str, client_id: str) -> Consent | None:
        data = self._alive(await self._get(self._consent_key(subject, client_id)))
        if data is None:
            return None
        data["scopes"] = tuple(data.get("scopes") or ())
        return Consent(**data)

    async def revoke_consent(self, subject: str, client_id: str) -> None:
        await self.redis.delete(self._consent_key(subject, client_id))

    async def save_upstream_tokens(self, tokens: UpstreamTokens) -> None:
        await self._put(self._key("upstream", tokens.grant_id), asdict(tokens), tokens.expires_at)

    async def load_upstream_tokens(self, grant_id: str) -> UpstreamTokens | None:
        data = self._alive(await self._get(self._key("upstream", grant_id)))
        return None if data is None else UpstreamTokens(**data)

    async def revoke_grant(self, grant_id: str) -> None:
        index = self._key("grant-rt", grant_id)
        digests = [
            d.decode() if isinstance(d, bytes) else d for d in await self.redis.smembers(index)
        ]
        keys = [self._key("rt", d) for d in digests]
        await self.redis.delete(self._key("upstream", grant_id), index, *keys)
