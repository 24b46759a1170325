"""The live sessions of a server and what reaches them all: broadcasts, here and across a cluster.

``MCPServer`` mixes :class:`LiveSessions` in. A session counts as live once its
handshake completes (or while a ``subscriptions/listen`` stream is open); the
list_changed and resources/updated notifications go to every live session this
process delivers broadcasts to (``ServerSession.broadcast_here``). When several
processes serve the server's sessions (a cluster sharing a Redis store,
:mod:`mcpkit.transports.cluster`), the cluster node connects a *fanout*, and each
broadcast also goes to the other processes, which deliver it to theirs with
:meth:`LiveSessions.deliver_broadcast`. These methods are the hooks the
transports use instead of reaching into the server's attributes
(rule 2 of the capability rules; ``docs/architecture.md``, "The core's public hooks").
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .client_requests import send_elicitation_complete

if TYPE_CHECKING:
    from .session import ServerSession

__all__ = ["BroadcastListener", "Fanout", "LiveSessions"]

#: Sends one small JSON message to the other processes serving the server's sessions.
Fanout = Callable[[dict[str, Any]], Awaitable[Any]]
#: ``await listener(method, params)``: a broadcast this process raised.
BroadcastListener = Callable[[str, "dict[str, Any] | None"], Awaitable[None]]


class LiveSessions:
    """Mixed into ``MCPServer``: its live sessions, broadcasts and cluster fanout."""

    # Set in MCPServer.__init__: the sessions, weakly (a session no transport holds is
    # gone), and the fanout of the cluster node serving them, if any.
    _sessions: weakref.WeakSet[ServerSession]
    _fanout: Fanout | None
    # Replaced (never mutated) by add_broadcast_listener: a broadcast iterates a snapshot.
    _broadcast_listeners: tuple[BroadcastListener, ...] = ()

    def sessions(self) -> list[ServerSession]:
        """The live, initialized sessions."""
        return list(self._sessions)

    def add_session(self, session: ServerSession) -> None:
        """Count ``session`` among the live ones, so broadcasts reach it: the session
        calls this when it is initialized, ``subscriptions/listen`` while its stream is
        open, a cluster node when it rebuilds a session another node created."""
        self._sessions.add(session)

    def discard_session(self, session: ServerSession) -> None:
        """``session`` is no longer live (closed, or its listen stream ended)."""
        self._sessions.discard(session)

    async def close(self) -> None:
        """Close every live session."""
        for session in self.sessions():
            session.close()

    async def complete_elicitation(self, elicitation_id: str, *, session_id: str | None) -> bool:
        """Send ``notifications/elicitation/complete`` for ``elicitation_id`` to the live
        session ``session_id`` of this process (2025-11-25 client/elicitation § completion
        notifications): call it from the route that finished the URL-mode interaction.

        True when such a session is live here and can get the notification (a
        2025-11-25 session whose client declared URL-mode elicitation); False otherwise
        (gone, on another process, or a revision without the notification).
        """
        for session in self.sessions():
            if session.session_id == session_id:
                return await send_elicitation_complete(session, elicitation_id)
        return False

    # -- broadcasts ------------------------------------------------------------------------
    async def broadcast(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the notification ``method`` to every live session, on every process
        serving them (the list_changed notifications of the tool, prompt and resource
        managers)."""
        await self.deliver_broadcast(method, params)
        if self._fanout is not None:
            await self._fanout({"k": "b", "m": method, "p": params})
        for listener in self._broadcast_listeners:
            await listener(method, params)

    def add_broadcast_listener(self, listener: BroadcastListener) -> None:
        """Await ``listener(method, params)`` after each :meth:`broadcast` this process
        raises (the list_changed notifications), once it has reached the sessions: a
        response cache drops the listings it kept (:mod:`mcpkit.middleware.cache`).
        A listener that raises makes the broadcast raise."""
        self._broadcast_listeners = (*self._broadcast_listeners, listener)

    async def deliver_broadcast(self, method: str, params: dict[str, Any] | None) -> None:
        """Deliver a broadcast to the sessions this process delivers broadcasts to: for
        one raised here (:meth:`broadcast`) or, in a cluster, by another node."""
        sessions = [s for s in self.sessions() if s.broadcast_here]
        if sessions:
            await asyncio.gather(*(s.notify(method, params) for s in sessions))

    async def fan_out(self, message: dict[str, Any]) -> None:
        """Send ``message`` to the other processes serving this server's sessions (the
        cluster's bus); nothing without a cluster. ``ResourceManager.notify_updated``
        sends its resources/updated this way."""
        if self._fanout is not None:
            await self._fanout(message)

    def connect_fanout(self, fanout: Fanout) -> None:
        """A cluster node joined its bus: send broadcasts to the other nodes with
        ``fanout`` too (:mod:`mcpkit.transports.cluster`)."""
        self._fanout = fanout

    def disconnect_fanout(self, fanout: Fanout) -> None:
        """The cluster node that connected ``fanout`` left its bus (another one may have
        connected its own since: that one stays)."""
        if self._fanout == fanout:
            self._fanout = None
