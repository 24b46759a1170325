"""The event store's former home; it lives in :mod:`mcpkit.stores.events` now.

Kept because the documentation of earlier releases imported
``InMemoryEventStore`` from here; new code imports from :mod:`mcpkit.stores`.
"""

from __future__ import annotations

from ..stores.events import (
    DEFAULT_MAX_BYTES,
    EventCallback,
    EventStore,
    InMemoryEventStore,
    MemoryEventStore,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "EventCallback",
    "EventStore",
    "InMemoryEventStore",
    "MemoryEventStore",
]
