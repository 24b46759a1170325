"""A downstream ``subscriptions/listen`` followed on the upstream: :func:`follow_upstream`.

A 2026-07-28 client hears about changes on a ``subscriptions/listen`` stream
(2026-07-28 basic/patterns/subscriptions). When it listens on a proxy, the
upstream's list changes reach it through the proxy's pool (one connection passes
them on to every live session: :mod:`.upstream`), and the resource URIs it names
are followed on a connection of the stream's own (a :class:`Following`), opened
before the proxy acknowledges the stream and closed when the stream ends:

- a **2026-07-28 upstream** is asked with a ``subscriptions/listen`` of its own,
  for those URIs alone (the upstream ``Client`` keeps one open, and replaces it
  when its filter grows);
- a **handshake-era upstream** is asked with ``resources/subscribe`` for each URI
  on that connection's session.

Either way the updates go down on that downstream stream alone, tagged with its
subscription id. Never more than one upstream listen for a downstream one, nothing
shared between clients (the updates a session subscribed to are that session's;
a pooled connection serves one request at a time, and a stream is long-lived),
and nothing held once the client goes away: closing the connection ends the
upstream's subscriptions and listen with it.

**A lost upstream is followed again.** The upstream may restart or the connection
break while the downstream stream stays open. The connection is watched every
``check`` seconds (``proxy(listen_check=...)``): a connection that closed (a stdio
process that exited) is opened again, and a handshake-era session is pinged, so that
one the upstream forgot (a restart: HTTP 404, basic/transports § session management)
is initialized anew by the ``Client``; either way the URIs are subscribed again.
Failures wait longer each time (doubling up to :data:`MAX_RETRY`, each attempt
bounded by the ``Client``'s timeouts), for as long as the downstream stream is open:
never a busy loop. A 2026-07-28 upstream's listen is reopened by the ``Client`` itself
(``client/stateless/listen.py``, with the same kind of backoff); its new
acknowledgment is the sign it was lost. The stream is then told it may have missed
updates (:meth:`Following.lost`). The list changes come through the pool, which a
stream asking for them has checked the same way (``UpstreamPool.keep_hearing``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final

from ..client.client import Client
from ..errors import MCPError, RemoteError
from ..server.stateless.listen import Listener
from .upstream import Owner

__all__ = ["MAX_RETRY", "Following", "close_quietly", "follow_upstream", "wants_list_changes"]

log = logging.getLogger("mcpkit.compose")

# subscriptions/listen filter keys of list changes (SubscriptionFilter), and their kinds.
LIST_KEYS: Final = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}
# A Client's options that belong to a connection carrying requests, not a listen stream.
_NOT_FOR_LISTENING: Final = frozenset({"on_list_changed", "on_resource_updated", "log_handler"})
#: Longest wait (s) between two attempts to follow a lost upstream again.
MAX_RETRY: Final = 30.0


def wants_list_changes(granted: Mapping[str, Any]) -> bool:
    """Whether a stream was granted any ``list_changed`` notification."""
    return any(granted.get(key) is True for key in LIST_KEYS)


class Following:
    """The connection following a downstream stream's resource URIs on the upstream,
    watched and opened again when it is lost (see the module docstring)."""

    def __init__(
        self,
        source: Owner,
        listener: Listener,
        uris: Mapping[str, str],
        *,
        check: float,
    ) -> None:
        self.source = source
        self.listener = listener
        self.uris = dict(uris)  # upstream URI -> the URI the downstream client knows
        self.check = check
        self.client: Client | None = None
        # The handshake the URIs were subscribed on: another one is a new session.
        self.subscribed_on: object = None
        self.watcher: asyncio.Task[None] | None = None
        self.closed = False

    def updated(self, uri: str) -> None:
        downstream = self.uris.get(uri)
        if downstream is not None:
            self.listener.send("notifications/resources/updated", {"uri": downstream})

    async def open(self) -> bool:
        """Connect and follow the URIs; False when the upstream has no subscriptions
        (nothing to follow, nothing kept). A failure is raised as it came."""
        options = {k: v for k, v in self.source.options.items() if k not in _NOT_FOR_LISTENING}
        client = Client(
            **options,
            # No list_changed callback (nor cache): a 2026-07-28 upstream's Client would
            # open a listen for list changes on connect, which reach the stream through
            # the pool.
            on_resource_updated=self.updated,
            server_logs=False,
            cache=False,
        )
        try:
            await client.connect()
            resources = client.server_capabilities.get("resources")
            if not (isinstance(resources, dict) and resources.get("subscribe") is True):
                await close_quietly(client, self.source.label)
                return False  # an upstream without subscriptions has no updates to send
            await self.subscribe(client)
        except BaseException:
            await close_quietly(client, self.source.label)
            raise
        self.client = client
        if client.session.stateless_version is not None:
            # The Client reopens a broken listen itself; each acknowledgment after this
            # one is a reopened stream, and what changed meanwhile was not heard.
            client.session.on_notification(
                "notifications/subscriptions/acknowledged", lambda _params: self.lost()
            )
        return True

    async def subscribe(self, client: Client) -> None:
        """Follow every URI on ``client``: handshake era, ``resources/subscribe`` on its
        session; 2026-07-28, the URI joins the filter of its one listen (acknowledged
        before this returns)."""
        self.subscribed_on = client.session.initialize_result
        for uri in self.uris:
            try:
                await client.subscribe_resource(uri)
            except RemoteError as exc:  # one it refuses (not its own): no updates of it
                log.debug(
                    "upstream of proxy %r refused to follow %s: %s", self.source.label, uri, exc
                )

    def start(self) -> None:
        """Watch the connection until the stream ends."""
        self.watcher = asyncio.get_running_loop().create_task(self.watch())

    async def watch(self) -> None:
        delay = self.check
        while not self.closed and not self.listener.closed:
            await asyncio.sleep(delay)
            try:
                again = await self.follow_again()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # still unreachable: wait longer (never a busy loop)
                delay = min(delay * 2, max(MAX_RETRY, self.check))
                log.debug("upstream of proxy %r is still lost: %s", self.source.label, exc)
                continue
            delay = self.check
            if again:
                log.info("upstream of proxy %r followed again after a loss", self.source.label)
                self.lost()
                if self.client is None:  # back without subscriptions: nothing to follow
                    return

    async def follow_again(self) -> bool:
        """Check the connection; follow the URIs again if the upstream lost them (True)."""
        client = self.client
        if client is None or not client.connected:  # closed (a stdio process exited)
            self.client = None
            if client is not None:
                await close_quietly(client, self.source.label)
            if self.closed:
                return False
            if not await self.open():  # the restarted upstream no longer has subscriptions
                return True
            if self.closed:  # the stream ended meanwhile
                await self.aclose()
            return True
        if client.session.stateless_version is not None:
            return False  # its Client reopens its listen itself
        # A handshake session the upstream forgot (a restart) is only noticed on a request:
        # the ping's 404 makes the Client initialize a new session, which holds nothing.
        try:
            await client.ping()
        except RemoteError:  # an answer (even a refusal): the session is there
            pass
        if client.session.initialize_result is self.subscribed_on:
            return False
        await self.subscribe(client)
        return True

    def lost(self) -> None:
        """Tell the downstream client what it may have missed while the upstream was lost.

        The stream promises every change made after its acknowledgment (2026-07-28
        basic/patterns/subscriptions § acknowledgment), and a restarted upstream may well
        have changed: each followed resource is announced updated (the client reads it
        again, a cheap read rather than a missed change). Only the URIs the stream was
        granted: a server MUST NOT send notification types the client did not ask for
        (§ opening a stream). Its list changes are the pool's to announce
        (``UpstreamPool.keep_hearing``).
        """
        if self.closed:
            return
        for downstream in self.uris.values():
            self.listener.send("notifications/resources/updated", {"uri": downstream})

    async def aclose(self) -> None:
        """Stop watching and close the connection (the stream ended, or the proxy did)."""
        self.closed = True
        watcher, self.watcher = self.watcher, None
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
        client, self.client = self.client, None
        if client is not None:
            await close_quietly(client, self.source.label)


async def follow_upstream(
    source: Owner,
    listener: Listener,
    *,
    uris: Mapping[str, str],
    following: set[Following],
    closing: set[asyncio.Task[None]],
    check: float,
) -> None:
    """Follow ``uris`` (upstream URI -> downstream URI) on a connection of ``listener``'s
    own, held in ``following`` (which the proxy closes with its lifespan, should a stream
    outlive it) and closed (a task in ``closing``) when the stream ends.

    Returns once the upstream is following them (its listen acknowledged, its
    subscriptions answered); an upstream that cannot be reached is ``source.failure``.
    """
    if not uris:
        return
    follow = Following(source, listener, uris, check=check)
    try:
        if not await follow.open():
            return
    except BaseException as exc:
        # An answer of the upstream (a RemoteError) or a cancellation is passed on as it
        # is; a failure of the upstream itself (refused, gone, no answer) names it.
        if isinstance(exc, MCPError) or not isinstance(exc, Exception):
            raise
        raise source.failure(exc) from exc
    following.add(follow)
    follow.start()

    def ended() -> None:
        following.discard(follow)
        task = asyncio.get_running_loop().create_task(follow.aclose())
        closing.add(task)
        task.add_done_callback(closing.discard)

    listener.on_close(ended)


async def close_quietly(client: Client, label: str) -> None:
    """Close ``client``, a connection going away anyway: a failure is only logged."""
    try:
        await client.aclose()
    except Exception as exc:  # it is going away anyway
        log.debug("closing a listening upstream of proxy %r: %s", label, exc)
