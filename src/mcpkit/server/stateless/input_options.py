"""``InputRoundOptions``: how a server runs the input-required rounds of the stateless era.

One value object groups what :mod:`.input_required` needs to know
(``MCPServer(input_rounds=InputRoundOptions(...))``): the keys that sign
``requestState``, the store of used states, and the bounds on a state's size and
on the calls parked between rounds. The defaults suit one process; several
workers share the keys and the store (see :mod:`.input_required`). Each value is
checked when the object is made, with the message the server would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ConfigurationError
from ...stores.input_required import (
    DEFAULT_MAX_PARKED,
    DEFAULT_MAX_PARKED_PER_PRINCIPAL,
    InputRoundStore,
    check_parked_bounds,
)
from .input_required import DEFAULT_MAX_STATE
from .request_state import check_keys

__all__ = ["InputRoundOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRoundOptions:
    """The input-required rounds of a server (2026-07-28 basic/patterns/mrtr).

    ``request_state_keys``
        keys (32 bytes or more each) that sign ``requestState``: the first signs,
        all verify (rotation). Default ``None``: a random key per process, or the
        cluster's shared key when the server runs on a shared store.
    ``store``
        the :class:`~mcpkit.stores.InputRoundStore` that makes each state
        single-use; share one between workers. Default: one in memory (or the
        ``input_rounds`` store of ``MCPServer(store=...)``; give one or the other).
    ``request_state_limit``
        bytes a ``requestState`` may grow to (at least 1024; default 1 MiB).
    ``max_parked_calls`` / ``max_parked_per_principal``
        calls kept waiting for their client's answers, in all and per principal
        (defaults 10,000 and 1,000); past either bound the oldest gives way.
    """

    request_state_keys: Sequence[bytes] | None = None
    store: InputRoundStore | None = None
    request_state_limit: int = DEFAULT_MAX_STATE
    max_parked_calls: int = DEFAULT_MAX_PARKED
    max_parked_per_principal: int = DEFAULT_MAX_PARKED_PER_PRINCIPAL

    def __post_init__(self) -> None:
        if self.request_state_keys is not None:
            # A tuple: the caller's list changing later must not change the keys.
            object.__setattr__(self, "request_state_keys", tuple(self.request_state_keys))
            if self.request_state_keys:
                check_keys(self.request_state_keys)
        limit = self.request_state_limit
        if type(limit) is not int or limit < 1024:
            raise ConfigurationError(
                f"request_state_limit must be an integer >= 1024 (bytes), got {limit!r}"
            )
        check_parked_bounds(self.max_parked_calls, self.max_parked_per_principal)
