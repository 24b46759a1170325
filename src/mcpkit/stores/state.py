"""The state store: small JSON values that tools keep between requests (``ctx.state``).

A :class:`StateStore` maps a key to bytes with an optional time to live; what a key
names (a session, a principal) and how values are encoded is the server's business
(:mod:`mcpkit.server.state`). The interface is three calls, each one round trip on a
shared store (:class:`mcpkit.stores.redis.RedisStateStore`: ``GET``, ``SET [PX]``,
``DEL``), so that a value set on one node of a cluster is what the next request reads
on any other.

:class:`MemoryStateStore` is the default: one process's values, bounded in entries
(the least recently written goes first) and in bytes per value by its caller.
``tests/stores/conformance.py`` is the behaviour every implementation must pass.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Final, Protocol, runtime_checkable

from ..errors import ConfigurationError

__all__ = ["DEFAULT_MAX_STATE_ENTRIES", "MemoryStateStore", "StateStore"]

#: Values kept by a MemoryStateStore, unless told otherwise.
DEFAULT_MAX_STATE_ENTRIES: Final = 100_000


@runtime_checkable
class StateStore(Protocol):
    """Bytes under string keys, each with an optional time to live (seconds)."""

    async def get(self, key: str) -> bytes | None:
        """The value of ``key``; None when it was never set, was deleted or expired."""
        ...

    async def set(self, key: str, value: bytes, ttl: float | None) -> None:
        """Set ``key`` to ``value``, expiring after ``ttl`` seconds (None: never)."""
        ...

    async def delete(self, key: str) -> bool:
        """Forget ``key``; True when it had a value."""
        ...


class MemoryStateStore:
    """The in-memory :class:`StateStore`: one process's values, at most ``max_entries``."""

    __slots__ = ("_values", "max_entries")

    def __init__(self, *, max_entries: int = DEFAULT_MAX_STATE_ENTRIES) -> None:
        if type(max_entries) is not int or max_entries < 1:
            raise ConfigurationError(
                f"MemoryStateStore: max_entries must be a positive integer, not {max_entries!r}"
            )
        self.max_entries = max_entries
        # key -> (expires at on the monotonic clock, or None; value), oldest write first.
        self._values: OrderedDict[str, tuple[float | None, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._values)

    async def get(self, key: str) -> bytes | None:
        entry = self._values.get(key)
        if entry is None:
            return None
        expires, value = entry
        if expires is not None and expires <= time.monotonic():
            del self._values[key]
            return None
        return value

    async def set(self, key: str, value: bytes, ttl: float | None) -> None:
        expires = None if ttl is None else time.monotonic() + ttl
        values = self._values
        values.pop(key, None)
        values[key] = (expires, bytes(value))
        while len(values) > self.max_entries:
            values.popitem(last=False)

    async def delete(self, key: str) -> bool:
        return self._values.pop(key, None) is not None
