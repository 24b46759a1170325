"""The authorization server's rate limits (registration, authorization), per client address.

Registration is open to anyone (RFC 7591 § 3 allows it without authentication, and MCP
clients rely on that), so each registration costs the store a record, as does each
client metadata document fetched: ``limit`` of them per ``window`` seconds per address
keeps one address from filling it (the same class bounds authorization requests, each of
which starts a flow record) (MCP security best practices; OAuth 2.1 § 7).

Counted as token buckets (:mod:`mcpkit._buckets`, the code the rate-limit middleware
uses): a burst of ``limit``, then one more every ``window / limit`` seconds. In this
process by default; with a storage that offers shared buckets
(:class:`~.redis_storage.RedisAuthServerStorage`) the buckets live in Redis, so every node
of a cluster counts against the same budget. Behind a reverse proxy the address is the
one the ASGI server reports, so let it read the forwarding headers (uvicorn
``--proxy-headers`` with ``--forwarded-allow-ips``), or every client shares the proxy's
address.
"""

from __future__ import annotations

from typing import Final, Protocol, runtime_checkable

from ..._buckets import BucketStore, MemoryBuckets

__all__ = ["RegistrationLimiter", "SharedBuckets"]

_MAX_ADDRESSES: Final = 10_000


@runtime_checkable
class SharedBuckets(Protocol):
    """A storage whose nodes share rate-limit buckets (Redis): the limits use them."""

    def rate_buckets(self) -> BucketStore:
        """The buckets every node of the cluster draws on."""
        ...


class RegistrationLimiter:
    """At most ``limit`` registrations per ``window`` seconds for each address.

    ``name`` keeps this limit's buckets apart from another's in the same ``buckets``
    (default: this process's memory, at most 10,000 addresses).
    """

    def __init__(
        self,
        *,
        limit: int = 20,
        window: float = 3600.0,
        name: str = "register",
        buckets: BucketStore | None = None,
    ) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"the limit must be a positive integer, not {limit!r}")
        if not window > 0:
            raise ValueError(f"the window must be a positive number of seconds, not {window!r}")
        self.limit = limit
        self.window = window
        self.buckets: BucketStore = buckets or MemoryBuckets(max_keys=_MAX_ADDRESSES)
        self._prefix = name + ":"
        self._rate = limit / window

    async def allow(self, address: str) -> float | None:
        """None when ``address`` may go on now (and counts it), else the seconds to wait."""
        wait = await self.buckets.take(
            self._prefix + address, rate=self._rate, burst=float(self.limit), cost=1.0
        )
        return None if wait <= 0.0 else max(wait, 1.0)
