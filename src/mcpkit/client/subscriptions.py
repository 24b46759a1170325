"""``subscriptions/listen``: the stateless era's channel for change notifications.

2026-07-28 basic/patterns/subscriptions: the GET stream and ``resources/subscribe``
are gone; a client that wants ``notifications/*/list_changed`` or
``notifications/resources/updated`` keeps one long-lived ``subscriptions/listen``
request open with a filter. Its notifications reach the session like any other
(the session's callbacks and the result cache see them unchanged).

One :class:`Listener` per session keeps at most one such request open: the filter
asks for the list changes the server declares ``listChanged`` for (when anyone
listens to them) and the resources subscribed with ``subscribe_resource``. A new
filter replaces the request (the old one is cancelled: on HTTP its stream is
closed). A stream that breaks is reopened after a growing delay.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any, Final

from ..errors import METHOD_NOT_FOUND, RemoteError

if TYPE_CHECKING:
    from .session import ClientSession

__all__ = ["Listener"]

log = logging.getLogger("mcpkit.client")

_LIST_FILTERS: Final = (
    ("tools", "toolsListChanged"),
    ("prompts", "promptsListChanged"),
    ("resources", "resourcesListChanged"),
)
_MAX_DELAY: Final = 30.0


class Listener:
    """Keeps the session's ``subscriptions/listen`` request open while it has a filter."""

    def __init__(self, session: ClientSession, *, retry_delay: float = 1.0) -> None:
        self.session = session
        self.retry_delay = retry_delay
        self.uris: set[str] = set()
        self.acknowledged: dict[str, Any] | None = None
        self._task: asyncio.Task[None] | None = None
        session.on_notification("notifications/subscriptions/acknowledged", self._acknowledged)

    def wanted(self) -> dict[str, Any]:
        """The filter: what the server can send and this client wants."""
        caps = self.session.server_capabilities
        out: dict[str, Any] = {}
        if self.session.handlers.list_changed:
            for kind, key in _LIST_FILTERS:
                cap = caps.get(kind)
                if isinstance(cap, dict) and cap.get("listChanged"):
                    out[key] = True
        resources = caps.get("resources")
        if self.uris and isinstance(resources, dict) and resources.get("subscribe"):
            out["resourceSubscriptions"] = sorted(self.uris)
        return out

    def restart(self) -> None:
        """Replace the open request by one with the current filter (none if it is empty)."""
        self.stop()
        wanted = self.wanted()
        if wanted:
            self._task = self.session.handlers.spawn(self._run(wanted))

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self.acknowledged = None

    async def _run(self, wanted: dict[str, Any]) -> None:
        delay = self.retry_delay
        loop = asyncio.get_running_loop()
        while not self.session.closed:
            opened = loop.time()
            try:
                # Long-lived by design: no deadline; a graceful end is a result.
                await self.session.request(
                    "subscriptions/listen", {"notifications": wanted}, timeout=math.inf
                )
                log.debug("MCP server %r ended the subscription", self.session.name)
            except RemoteError as exc:
                if exc.code == METHOD_NOT_FOUND:
                    log.info("MCP server %r has no subscriptions/listen", self.session.name)
                    return
                log.debug("subscriptions/listen on %r failed: %s", self.session.name, exc)
            except Exception as exc:  # the stream broke: reopen it
                log.debug("subscriptions/listen on %r broke: %s", self.session.name, exc)
            if self.session.closed:
                return
            if loop.time() - opened > _MAX_DELAY:
                delay = self.retry_delay  # it had been working: reopen soon
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)

    def _acknowledged(self, params: dict[str, Any]) -> None:
        granted = params.get("notifications")
        self.acknowledged = granted if isinstance(granted, dict) else {}
