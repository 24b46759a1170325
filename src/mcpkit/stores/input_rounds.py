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
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

from ..errors import ConfigurationError

__all__ = ["InputRoundStore", "MemoryInputRoundStore"]


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
