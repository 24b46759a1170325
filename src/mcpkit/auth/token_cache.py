"""A small, size-bounded cache of verification results, each with its own deadline.

The verifiers keep what they learnt about a token (a JWT's checked claims, an
introspection answer) so a client that sends the same token on every request costs
one dictionary lookup, not a signature check or an HTTP round trip. Entries are
keyed by the token's SHA-256 digest (:func:`~mcpkit.auth.claims.token_digest`) or,
where the cached value holds the token anyway (a JWT's ``AuthInfo``), by the token,
expire at a deadline the caller chooses (never past the token's own ``exp``) and
the least recently used entry goes first when the cache is full, so a flood of
distinct tokens cannot grow memory.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["TokenCache"]

V = TypeVar("V")


class TokenCache(Generic[V]):
    """``digest -> value`` with a per-entry deadline (``time.time()`` seconds) and LRU eviction."""

    __slots__ = ("_entries", "max_size")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._entries: OrderedDict[bytes | str, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes | str, *, now: float | None = None) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        deadline, value = entry
        if (time.time() if now is None else now) >= deadline:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: bytes | str, value: V, *, until: float, now: float | None = None) -> None:
        """Keep ``value`` until ``until``; nothing is kept when that is not in the future."""
        if self.max_size <= 0 or until <= (time.time() if now is None else now):
            return
        self._entries[key] = (until, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
