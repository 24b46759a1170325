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

Every notification of a subscription carries its id (the listen request's id) in
``_meta``, and on stdio the client MUST demultiplex by it (subscriptions § receiving
notifications). While a new filter replaces an old one both requests are briefly
open, so the listener keeps one subscription *live*, the newest acknowledged, and
the session drops what older ones still send: a change is never delivered twice.
:meth:`Listener.update` returns once the new filter is acknowledged, so that, as
with the handshake era's ``resources/subscribe``, a subscription holds when the
call returns.

Extensions add keys of their own to the filter (:meth:`Listener.set_filter`; the tasks
extension's ``taskIds``, SEP-2663) and read what the server granted in
:attr:`Listener.acknowledged`; their notifications reach ``session.on_notification``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any, Final

from ...errors import METHOD_NOT_FOUND, PeerTimeout, RemoteError
from ...protocol.envelope import SUBSCRIPTION_ID

if TYPE_CHECKING:
    from ..session import ClientSession

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
        # Extension keys of the filter (set_filter), sent as they are.
        self.extra: dict[str, Any] = {}
        self.acknowledged: dict[str, Any] | None = None
        # The newest acknowledged subscription (its listen request's id); notifications
        # tagged with any other id come from a replaced subscription.
        self.live: Any = None
        self._wanted: dict[str, Any] = {}
        self._task: asyncio.Task[None] | None = None
        self._acked = asyncio.Event()
        # Set when the current request's first attempt was answered with an error (a
        # refusal, not a broken stream): :meth:`update` stops waiting, raises `failure`.
        self._tried = asyncio.Event()
        self.failure: BaseException | None = None
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
        out.update(self.extra)
        return out

    def set_filter(self, key: str, value: Any) -> None:
        """Set an extension's own ``key`` of the filter (None: remove it); the next
        :meth:`update` sends it (nothing is sent now)."""
        if value is None:
            self.extra.pop(key, None)
        else:
            self.extra[key] = value

    def restart(self) -> None:
        """Replace the open request by one with the current filter (none if it is empty).

        The replaced subscription stays live until the new one is acknowledged.
        """
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._acked = asyncio.Event()
        self._tried = asyncio.Event()
        self.failure = None
        self._wanted = self.wanted()
        if self._wanted:
            self._task = self.session.handlers.spawn(self._run(self._wanted))
        else:
            self.live = None
            self.acknowledged = None

    async def update(self, timeout: float) -> None:
        """Apply a changed filter and wait (at most ``timeout`` s) for the acknowledgment.

        Nothing is sent when the filter did not change; nothing is awaited when the
        server has no ``subscriptions/listen`` (the request then ends at once). When the
        server answers the request with an error before acknowledging it (a proxy whose
        upstream is down, say), that error is raised at once rather than the wait running
        out; the request is tried again in the background all the same. A stream that
        breaks is reopened within the wait, as before.
        """
        if self.wanted() == self._wanted and (self._task is None or not self._task.done()):
            return
        self.restart()
        task = self._task
        if task is None:
            return
        acked = asyncio.ensure_future(self._acked.wait())
        tried = asyncio.ensure_future(self._tried.wait())
        try:
            done, _ = await asyncio.wait(
                {acked, tried, task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            acked.cancel()
            tried.cancel()
        if not done:
            raise PeerTimeout(
                f"MCP server {self.session.name!r} did not acknowledge subscriptions/listen "
                f"within {timeout:g} s"
            )
        if not self._acked.is_set() and self.failure is not None:
            raise self.failure

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._wanted = {}
        self.live = None
        self.acknowledged = None

    def stale(self, params: dict[str, Any]) -> bool:
        """Does this notification come from a subscription that was replaced or stopped?"""
        meta = params.get("_meta")
        sub = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        # Untagged: not from a subscription (or a server that does not tag): delivered.
        return sub is not None and sub != self.live

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
                self._failed(exc)
            except Exception as exc:  # the stream broke: reopen it (update waits on)
                log.debug("subscriptions/listen on %r broke: %s", self.session.name, exc)
            if self.session.closed:
                return
            if loop.time() - opened > _MAX_DELAY:
                delay = self.retry_delay  # it had been working: reopen soon
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)

    def _failed(self, exc: RemoteError) -> None:
        if not self._acked.is_set() and not self._tried.is_set():
            self.failure = exc
            self._tried.set()

    def _acknowledged(self, params: dict[str, Any]) -> None:
        meta = params.get("_meta")
        sub = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if not self._newer(sub):
            return  # a replaced request acknowledged late: it stays dead
        self.live = sub
        granted = params.get("notifications")
        self.acknowledged = granted if isinstance(granted, dict) else {}
        self._acked.set()

    def _newer(self, sub: Any) -> bool:
        """Is ``sub`` a later subscription than the live one? The session numbers its
        requests upwards, so a later listen request has a larger id."""
        if self._task is None:
            return False  # stopped: nothing is live
        live = self.live
        if isinstance(sub, int) and isinstance(live, int):
            return sub > live
        return True
