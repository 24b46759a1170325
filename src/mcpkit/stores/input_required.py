"""The input-round store: what the workers of one server share about input-required rounds.

A ``requestState`` is good for one retry (2026-07-28 basic/patterns/mrtr,
server requirements: "servers for which a given ``requestState`` must be
consumed at most once ... **MUST** enforce that invariant server-side"). The
HMAC and the expiry travel in the state itself; *used* cannot, so it lives in
an :class:`InputRoundStore` every worker consults before it honours a state.
(The answers and the ``ctx.once`` journal travel in the state too: the store
only makes each state single-use, which is what makes the ``ctx.once`` steps
run exactly once across workers.)

The interface is one set-if-absent call, so a shared store is a few lines:
:class:`mcpkit.stores.redis.RedisInputRoundStore` is one ``SET NX PXAT``.

:class:`MemoryInputRoundStore` is the default: enough for one process (or for
tests that stand several servers in one process). ``tests/stores/conformance.py``
is the behaviour every implementation must pass.

The calls *parked* between rounds stay in the process that runs them (a task cannot
move): :class:`ParkedTable` is their bounded table, in all and per principal.
"""

from __future__ import annotations

import time
from typing import Final, Generic, Protocol, TypeVar, runtime_checkable

from ..errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_PARKED",
    "DEFAULT_MAX_PARKED_PER_PRINCIPAL",
    "InputRoundStore",
    "MemoryInputRoundStore",
    "ParkedTable",
    "check_parked_bounds",
]

#: Parked calls of one process, in all and per principal, unless told otherwise.
DEFAULT_MAX_PARKED: Final = 10_000
DEFAULT_MAX_PARKED_PER_PRINCIPAL: Final = 1_000

T = TypeVar("T")


@runtime_checkable
class InputRoundStore(Protocol):
    """Single use of ``requestState`` tokens, shared by every worker of a server."""

    async def claim(self, token_id: str, expires_at: float) -> bool:
        """Mark ``token_id`` used; True for the first claim, False if it was claimed before.

        ``expires_at`` is the state's own expiry (seconds since the epoch, as
        ``time.time()``): after it the state is refused anyway, so the store may
        forget the claim then. Must be atomic across workers (set-if-absent).
        """
        ...


class MemoryInputRoundStore:
    """An in-process :class:`InputRoundStore`: a dict of claims, purged as they expire.

    At most ``max_entries`` claims are kept; past that the oldest claim is
    dropped early (its state could then be replayed until it expires), which
    bounds memory under a flood of rounds. Size the bound above the number of
    rounds served within one state lifetime.
    """

    def __init__(self, *, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ConfigurationError("MemoryInputRoundStore: max_entries must be at least 1")
        self.max_entries = max_entries
        # Insertion order is close to expiry order (every state lives the same ttl), so
        # expired claims are purged from the front.
        self._claims: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._claims)

    async def claim(self, token_id: str, expires_at: float) -> bool:
        now = time.time()
        claims = self._claims
        stale: list[str] = []
        for key, until in claims.items():  # amortised purge: a few expired claims each time
            if until > now or len(stale) == 8:
                break
            stale.append(key)
        for key in stale:
            del claims[key]
        known = claims.get(token_id)
        if known is not None and known > now:
            return False
        claims.pop(token_id, None)
        claims[token_id] = expires_at
        while len(claims) > self.max_entries:
            del claims[next(iter(claims))]
        return True


def check_parked_bounds(max_total: object, max_per_owner: object) -> None:
    """Refuse bounds of a :class:`ParkedTable` that are not positive integers."""
    for name, value in (
        ("max_parked_calls", max_total),
        ("max_parked_per_principal", max_per_owner),
    ):
        if type(value) is not int or value < 1:
            raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")


class ParkedTable(Generic[T]):
    """Parked calls by id, oldest first, at most ``max_total`` in all and ``max_per_owner``
    per owner (the principal; None, unauthenticated, is one owner like any other).

    :meth:`add` makes room first and returns what gave way, for the caller to end: the
    owner's own oldest call when the owner is at its bound, then the oldest of all when
    the table is full. One owner's flood thus only displaces its own calls (until
    ``max_total / max_per_owner`` owners flood at once). Memory: a principal without
    calls has no entry.
    """

    def __init__(
        self,
        *,
        max_total: int = DEFAULT_MAX_PARKED,
        max_per_owner: int = DEFAULT_MAX_PARKED_PER_PRINCIPAL,
    ) -> None:
        check_parked_bounds(max_total, max_per_owner)
        self.max_total = max_total
        self.max_per_owner = max_per_owner
        self._items: dict[str, tuple[str | None, T]] = {}
        self._owned: dict[str | None, dict[str, None]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def owned(self, owner: str | None) -> int:
        """How many calls ``owner`` has parked."""
        return len(self._owned.get(owner, ()))

    def get(self, key: str) -> T | None:
        found = self._items.get(key)
        return None if found is None else found[1]

    def add(self, key: str, owner: str | None, item: T) -> list[tuple[T, str]]:
        """Park ``item``; returns the calls that gave way, each with the bound that made it."""
        gone: list[tuple[T, str]] = []
        own = self._owned.get(owner)
        if own is not None and len(own) >= self.max_per_owner:
            oldest = next(iter(own))
            gone.append((self._drop(oldest), "max_parked_per_principal"))
        if len(self._items) >= self.max_total:
            oldest = next(iter(self._items))
            gone.append((self._drop(oldest), "max_parked_calls"))
        self._items[key] = (owner, item)
        self._owned.setdefault(owner, {})[key] = None
        return gone

    def pop(self, key: str) -> T | None:
        return self._drop(key) if key in self._items else None

    def _drop(self, key: str) -> T:
        owner, item = self._items.pop(key)
        own = self._owned[owner]
        del own[key]
        if not own:
            del self._owned[owner]
        return item
