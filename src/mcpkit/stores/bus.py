"""The message bus between the processes (*nodes*) of one cluster sharing a store.

Several mcpkit HTTP servers behind one load balancer share their sessions
through a shared store (:class:`mcpkit.stores.redis.RedisStore`); what cannot be
stored, because only one process can act on it, travels between them as small
messages: a client's answer to a request another node issued, "close your GET
stream", a cancellation, a broadcast notification, the live events of a
session's standalone stream (``docs/design/scale-out.md`` § 3.4, § 5).

A :class:`Bus` is fire-and-forget publish/subscribe: a message reaches the
nodes subscribed to its channel *now*, or nobody (``publish`` says how many
received it); nothing is stored. The channels, named without the store's key
prefix:

``"n:<node id>"``
    one node's own channel, subscribed by :meth:`Bus.start`;
``"bc"``
    every node (the sender too: the caller filters its own messages by a field);
``"c:<session id>"``
    the live standalone-stream events of a session, subscribed with
    :meth:`Bus.join` by the node holding its GET stream.

Every node has an id (:data:`Bus.node_id`), 8 random characters of lowercase
base32 made when the bus is, and says it is alive with a key that it refreshes
and that expires when it stops doing so (:meth:`Bus.node_alive`).

The handler given to :meth:`Bus.start` is called for every message on any
subscribed channel, synchronously, from the bus's one reader task: it must not
block (queue puts, future results), and what it raises is logged, never kills
the reader. The Redis implementation is :class:`mcpkit.stores.redis_bus.RedisBus`
(``RedisStore.bus``); this module imports no client library.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, Final, Protocol, runtime_checkable

__all__ = ["Bus", "BusHandler", "new_node_id"]

#: ``(channel, message)``: the channel without the store's prefix, the decoded message.
BusHandler = Callable[[str, dict[str, Any]], None]

_BASE32: Final = "abcdefghijklmnopqrstuvwxyz234567"


def new_node_id() -> str:
    """A fresh node id: 8 random lowercase base32 characters (40 bits)."""
    return "".join(secrets.choice(_BASE32) for _ in range(8))


@runtime_checkable
class Bus(Protocol):
    """Publish/subscribe between the nodes of a cluster (see the module docstring)."""

    node_id: str

    async def start(self, handler: BusHandler) -> None:
        """Connect, subscribe ``"n:<node_id>"`` and ``"bc"``, start reading and the
        heartbeat; :class:`~mcpkit.errors.StoreUnavailable` when the server is
        unreachable. Messages go to ``handler`` from then on."""
        ...

    async def aclose(self) -> None:
        """Stop reading and the heartbeat, unsubscribe, say this node is gone."""
        ...

    async def publish(self, channel: str, message: dict[str, Any]) -> int:
        """Send ``message`` on ``channel``; the number of subscribers that received it
        (0: nobody is listening there now). ``StoreUnavailable`` on failure."""
        ...

    async def join(self, channel: str) -> None:
        """Subscribe one more channel (e.g. ``"c:<session id>"``); once it returns,
        messages published there reach the handler. Idempotent."""
        ...

    async def leave(self, channel: str) -> None:
        """Unsubscribe a channel joined before; no message of it reaches the handler
        once it returns. Idempotent."""
        ...

    async def node_alive(self, node_id: str) -> bool:
        """Whether the node with that id is running (its heartbeat has not expired)."""
        ...

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the event loop) each time the bus got its connection
        back after losing it and subscribed every channel again: messages published
        while it was away are lost, so the caller catches up from the store."""
        ...
