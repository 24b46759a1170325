"""State that may outlive a request, behind small protocols: sessions, events, input rounds.

Three stores, each a :class:`typing.Protocol` with an in-memory
implementation (bounded, process-local) and room for a shared one (Redis) so
that any number of workers can serve the same clients:

==============================  ==========================  =================================
protocol                        in memory                   holds
==============================  ==========================  =================================
:class:`SessionStore`           :class:`MemorySessionStore`  handshake-era session records
:class:`EventStore`             :class:`MemoryEventStore`    SSE events, for resumable streams
:class:`InputRoundStore`        :class:`MemoryInputRoundStore`  used 2026-07-28 ``requestState``
:class:`StateStore`             :class:`MemoryStateStore`    ``ctx.state`` values (optional)
==============================  ==========================  =================================

:class:`Store` groups one of each, so a deployment names its state once::

    server = MCPServer(name="Shop", version="1.0.0", store=MemoryStore())

The shared implementation is :class:`mcpkit.stores.redis.RedisStore` (the
``mcpkit[redis]`` extra); it is not imported from here, so ``import mcpkit.stores``
never loads ``redis``.

Layering: this package imports only :mod:`mcpkit.errors`, :mod:`mcpkit.protocol`,
the standard library and orjson (and, in :mod:`mcpkit.stores.redis` and the
``redis_*`` modules it loads, ``redis``); the server and the transports use it.
:class:`Bus` (:mod:`mcpkit.stores.bus`) is how the processes of a cluster sharing
a store talk to each other.
"""

from __future__ import annotations

from typing import Final, Protocol, runtime_checkable

from .bus import Bus, BusHandler, new_node_id
from .events import (
    DEFAULT_MAX_BYTES,
    EventCallback,
    EventStore,
    InMemoryEventStore,
    MemoryEventStore,
)
from .input_required import InputRoundStore, MemoryInputRoundStore
from .sessions import MemorySessionStore, SessionRecord, SessionStore
from .state import MemoryStateStore, StateStore

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Bus",
    "BusHandler",
    "EventCallback",
    "EventStore",
    "InMemoryEventStore",
    "InputRoundStore",
    "MemoryEventStore",
    "MemoryInputRoundStore",
    "MemorySessionStore",
    "MemoryStateStore",
    "MemoryStore",
    "SessionRecord",
    "SessionStore",
    "StateStore",
    "Store",
    "new_node_id",
]


@runtime_checkable
class Store(Protocol):
    """One of each store, for ``MCPServer(store=...)``.

    A store that talks to a server may also have ``async def connect()``: the HTTP
    apps await it at startup (ASGI lifespan), so an unreachable store fails the
    start with its own message (``RedisStore`` raises ``StoreUnavailable``).

    Optional attribute ``state``: a :class:`~mcpkit.stores.state.StateStore` for
    ``ctx.state`` (both mcpkit stores have one; a store without it leaves ``ctx.state``
    in a memory store of the server's own). Optional attribute ``shared: bool``: True when other processes see the same
    state (``RedisStore``), so several server processes form a cluster and talk
    over its :class:`~mcpkit.stores.bus.Bus`; read it with
    ``getattr(store, "shared", False)``.
    """

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def events(self) -> EventStore: ...

    @property
    def input_rounds(self) -> InputRoundStore: ...


class MemoryStore:
    """The in-memory :class:`Store`: one process's sessions, events, input rounds and state.

    Each part may be given (for example a ``MemoryEventStore(max_bytes=...)``
    with other bounds); the others get their defaults.
    """

    __slots__ = ("events", "input_rounds", "sessions", "state")

    #: Process-local state: no other process sees it (see :class:`Store`).
    shared: Final = False

    def __init__(
        self,
        *,
        sessions: SessionStore | None = None,
        events: EventStore | None = None,
        input_rounds: InputRoundStore | None = None,
        state: StateStore | None = None,
    ) -> None:
        self.sessions: SessionStore = sessions if sessions is not None else MemorySessionStore()
        self.events: EventStore = events if events is not None else MemoryEventStore()
        self.input_rounds: InputRoundStore = (
            input_rounds if input_rounds is not None else MemoryInputRoundStore()
        )
        self.state: StateStore = state if state is not None else MemoryStateStore()
