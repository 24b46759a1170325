"""A downstream ``subscriptions/listen`` followed on the upstream: :func:`follow_upstream`.

A 2026-07-28 client hears about changes on a ``subscriptions/listen`` stream
(2026-07-28 basic/patterns/subscriptions). When it listens on a proxy, the
upstream's list changes reach it through the proxy's pool (one connection passes
them on to every live session: :mod:`.upstream`), and the resource URIs it names
are followed on a connection of the stream's own, opened before the proxy
acknowledges the stream and closed when the stream ends:

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

__all__ = ["close_quietly", "follow_upstream", "wants_list_changes"]

log = logging.getLogger("mcpkit.compose")

# subscriptions/listen filter keys of list changes (SubscriptionFilter).
_LIST_KEYS: Final = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
# A Client's options that belong to a connection carrying requests, not a listen stream.
_NOT_FOR_LISTENING: Final = frozenset({"on_list_changed", "on_resource_updated", "log_handler"})


def wants_list_changes(granted: Mapping[str, Any]) -> bool:
    """Whether a stream was granted any ``list_changed`` notification."""
    return any(granted.get(key) is True for key in _LIST_KEYS)


async def follow_upstream(
    source: Owner,
    listener: Listener,
    *,
    uris: Mapping[str, str],
    following: set[Client],
    closing: set[asyncio.Task[None]],
) -> None:
    """Follow ``uris`` (upstream URI -> downstream URI) on a connection of ``listener``'s
    own, held in ``following`` (which the proxy closes with its lifespan, should a stream
    outlive it) and closed (a task in ``closing``) when the stream ends.

    Returns once the upstream is following them (its listen acknowledged, its
    subscriptions answered); an upstream that cannot be reached is ``source.failure``.
    """
    if not uris:
        return

    def updated(uri: str) -> None:
        downstream = uris.get(uri)
        if downstream is not None:
            listener.send("notifications/resources/updated", {"uri": downstream})

    options = {k: v for k, v in source.options.items() if k not in _NOT_FOR_LISTENING}
    client = Client(
        **options,
        # No list_changed callback (nor cache): a 2026-07-28 upstream's Client would open
        # a listen for list changes on connect, which reach the stream through the pool.
        on_resource_updated=updated,
        server_logs=False,
        cache=False,
    )
    try:
        await client.connect()
        resources = client.server_capabilities.get("resources")
        follows = isinstance(resources, dict) and resources.get("subscribe") is True
        if follows:
            for uri in uris:
                # Handshake era: resources/subscribe on this connection's session; 2026-07-28:
                # the URI joins the filter of the connection's one listen (acknowledged
                # before this returns).
                try:
                    await client.subscribe_resource(uri)
                except RemoteError as exc:  # one it refuses (not its own): no updates of it
                    log.debug(
                        "upstream of proxy %r refused to follow %s: %s", source.label, uri, exc
                    )
    except BaseException as exc:
        await close_quietly(client, source.label)
        # An answer of the upstream (a RemoteError) or a cancellation is passed on as it
        # is; a failure of the upstream itself (refused, gone, no answer) names it.
        if isinstance(exc, MCPError) or not isinstance(exc, Exception):
            raise
        raise source.failure(exc) from exc
    if not follows:  # an upstream without subscriptions has no updates to send
        await close_quietly(client, source.label)
        return

    following.add(client)

    def ended() -> None:
        following.discard(client)
        task = asyncio.get_running_loop().create_task(close_quietly(client, source.label))
        closing.add(task)
        task.add_done_callback(closing.discard)

    listener.on_close(ended)


async def close_quietly(client: Client, label: str) -> None:
    """Close ``client``, a connection going away anyway: a failure is only logged."""
    try:
        await client.aclose()
    except Exception as exc:  # it is going away anyway
        log.debug("closing a listening upstream of proxy %r: %s", label, exc)
