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

import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, Generic, Protocol, TypeVar, runtime_checkable

from ..errors import ConfigurationError, TooManyInputRounds

__all__ = [
    "DEFAULT_MAX_CLAIMS",
    "DEFAULT_MAX_CLAIMS_PER_PRINCIPAL",
    "DEFAULT_MAX_PARKED",
    "DEFAULT_MAX_PARKED_PER_PRINCIPAL",
    "Claims",
    "InputRoundStore",
    "MemoryInputRoundStore",
    "ParkedTable",
    "check_parked_bounds",
]

#: Parked calls of one process, in all and per principal, unless told otherwise.
DEFAULT_MAX_PARKED: Final = 10_000
DEFAULT_MAX_PARKED_PER_PRINCIPAL: Final = 1_000
#: Claims of used states kept by MemoryInputRoundStore, in all and per principal.
DEFAULT_MAX_CLAIMS: Final = 100_000
DEFAULT_MAX_CLAIMS_PER_PRINCIPAL: Final = 10_000

T = TypeVar("T")

log = logging.getLogger("mcpkit.stores")


@runtime_checkable
class InputRoundStore(Protocol):
    """Single use of ``requestState`` tokens, shared by every worker of a server.

    Two optional extensions, found by name: ``claim`` may take ``owner`` (the
    principal the state was issued to, as :func:`~mcpkit.server.stateless.principal_of`
    gives it, None when unauthenticated) to bound claims per principal, and a
    ``release(token_id)`` coroutine makes a claimed state usable again, which the
    server calls for a round its shutdown stopped (so that the client's retry
    replays the call on another worker). A store without them keeps working.
    """

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

    At most ``max_entries_per_principal`` of them belong to one principal (the
    ``owner`` of :meth:`claim`; None, unauthenticated, is one owner like any
    other): a principal at its bound is refused with :class:`TooManyInputRounds`
    rather than have its own claims (or anyone else's) dropped, so one client's
    flood cannot make the others' states replayable (until ``max_entries /
    max_entries_per_principal`` principals flood at once).
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_CLAIMS,
        max_entries_per_principal: int = DEFAULT_MAX_CLAIMS_PER_PRINCIPAL,
    ) -> None:
        for name, value in (
            ("max_entries", max_entries),
            ("max_entries_per_principal", max_entries_per_principal),
        ):
            if type(value) is not int or value < 1:
                raise ConfigurationError(
                    f"MemoryInputRoundStore: {name} must be a positive integer, got {value!r}"
                )
        self.max_entries = max_entries
        self.max_entries_per_principal = max_entries_per_principal
        # Insertion order is close to expiry order (every state lives the same ttl), so
        # expired claims are purged from the front; the same holds for each owner's own.
        self._claims: dict[str, tuple[float, str | None]] = {}
        self._owned: dict[str | None, dict[str, None]] = {}

    def __len__(self) -> int:
        return len(self._claims)

    def owned(self, owner: str | None) -> int:
        """How many claims ``owner`` holds (expired ones not yet purged included)."""
        return len(self._owned.get(owner, ()))

    async def claim(self, token_id: str, expires_at: float, owner: str | None = None) -> bool:
        now = time.time()
        claims = self._claims
        stale: list[str] = []
        for key, (until, _) in claims.items():  # amortised purge: a few expired claims a time
            if until > now or len(stale) == 8:
                break
            stale.append(key)
        for key in stale:
            self._drop(key)
        known = claims.get(token_id)
        if known is not None and known[0] > now:
            return False
        if known is not None:
            self._drop(token_id)
        own = self._owned.get(owner)
        if own is not None and len(own) >= self.max_entries_per_principal:
            expired: list[str] = []
            for key in own:  # its own expired claims, oldest first (each purged once)
                if claims[key][0] > now:
                    break
                expired.append(key)
            for key in expired:
                self._drop(key)
            own = self._owned.get(owner)
            if own is not None and len(own) >= self.max_entries_per_principal:
                raise TooManyInputRounds(self.max_entries_per_principal)
        claims[token_id] = (expires_at, owner)
        self._owned.setdefault(owner, {})[token_id] = None
        while len(claims) > self.max_entries:
            self._drop(next(iter(claims)))
        return True

    async def release(self, token_id: str) -> None:
        """Forget the claim of ``token_id``: its state may be used (once) again."""
        if token_id in self._claims:
            self._drop(token_id)

    def _drop(self, key: str) -> None:
        _, owner = self._claims.pop(key)
        own = self._owned[owner]
        del own[key]
        if not own:
            del self._owned[owner]


class Claims:
    """How a server uses its :class:`InputRoundStore`: ``claim``, with the optional extensions
    (``owner``, ``release``) when the store has them, found once rather than per call."""

    __slots__ = ("_release", "_takes_owner", "store")

    def __init__(self, store: InputRoundStore) -> None:
        self.store = store
        try:
            names = set(inspect.signature(store.claim).parameters)
        except (TypeError, ValueError):  # a claim inspect cannot read: call it plainly
            names = set()
        self._takes_owner = "owner" in names
        self._release: Callable[[str], Awaitable[None]] | None = getattr(store, "release", None)

    async def claim(self, token_id: str, expires_at: float, owner: str | None) -> bool:
        if self._takes_owner:
            return await self.store.claim(token_id, expires_at, owner=owner)  # type: ignore[call-arg]
        return await self.store.claim(token_id, expires_at)

    async def release(self, token_id: str) -> None:
        """Hand a claimed state back, if the store can (else it stays used)."""
        if self._release is None:
            return
        try:
            await self._release(token_id)
        except Exception as exc:  # the store is unreachable: the state stays used
            log.warning("could not hand back a used requestState (%s): %r", token_id, exc)


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

    def oldest(self) -> T:
        """The call parked first (the table must not be empty)."""
        return self._items[next(iter(self._items))][1]

    def pop(self, key: str) -> T | None:
        return self._drop(key) if key in self._items else None

    def _drop(self, key: str) -> T:
        owner, item = self._items.pop(key)
        own = self._owned[owner]
        del own[key]
        if not own:
            del self._owned[owner]
        return item
