"""Per-principal visibility rules: :class:`VisibilityStore` and its in-memory implementation.

On 2026-07-28 there is no session to hold what one caller enabled or disabled
(``ctx.enable_components``), so the rules are kept per principal, in the store,
where every process serving the server reads the same (``RedisStore.visibility``).
The rules are a small JSON object the server builds and reads
(:class:`mcpkit.server.visibility.VisibilityRules`); the store only keeps it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

__all__ = ["MemoryVisibilityStore", "VisibilityStore"]


@runtime_checkable
class VisibilityStore(Protocol):
    """The visibility rules of each principal, as JSON-ready dicts."""

    async def get(self, principal: str) -> dict[str, Any] | None:
        """The rules stored for ``principal``; None: it has none of its own."""
        ...

    async def put(self, principal: str, rules: dict[str, Any] | None) -> None:
        """Store ``rules`` for ``principal``, or forget its rules (None)."""
        ...


class MemoryVisibilityStore:
    """One process's rules per principal, the ``max_entries`` most recently written."""

    __slots__ = ("_rules", "max_entries")

    def __init__(self, *, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._rules: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def get(self, principal: str) -> dict[str, Any] | None:
        return self._rules.get(principal)

    async def put(self, principal: str, rules: dict[str, Any] | None) -> None:
        self._rules.pop(principal, None)
        if rules is None:
            return
        self._rules[principal] = rules
        while len(self._rules) > self.max_entries:
            self._rules.popitem(last=False)
