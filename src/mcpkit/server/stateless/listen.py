"""``subscriptions/listen``: the 2026-07-28 era's one long-lived request.

2026-07-28 has no sessions to push notifications on; a client that wants to hear
about changes opens ``subscriptions/listen`` with a filter, and the server
acknowledges, then forwards the list-changed and resource-updated notifications
the filter asked for on that request's stream, each tagged with the subscription
id, until the client goes away or the server ends it (2026-07-28
basic/patterns/subscriptions). Each listener has its own bounded queue, so a
client that does not read never holds up the others; one that lets too much pile
up is dropped with an error that says so.

Extensions add filter keys of their own (``Extension(listen_filters={key: grant})``;
the tasks extension's ``taskIds``, SEP-2663 "Task Status Notifications"): for each
key the client asked for, ``await grant(value, listener)`` returns what to
acknowledge under that key (None: left out) or raises to refuse the request, and
sends its notifications with :meth:`Listener.send` for as long as the stream is open.
A component source (:mod:`mcpkit.server.sources`) that is a :class:`ListeningSource`
is offered the whole grant the same way: a proxy follows it on its upstream.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from ...errors import INTERNAL_ERROR, InvalidParams, MCPError, MethodNotFound
from ...protocol import jsonrpc
from ...protocol.envelope import SUBSCRIPTION_ID
from ...protocol.jsonrpc import json_type
from ..context import Context
from ..heard_updates import UPDATED, hidden_uris, hides_update
from ..scopes import granted_scopes

if TYPE_CHECKING:
    from ..server import MCPServer
    from ..session import Request, ServerSession

log = logging.getLogger("mcpkit.server")

__all__ = [
    "CORE_FILTER_KEYS",
    "DEFAULT_LISTEN_QUEUE_BYTES",
    "ListenGrant",
    "Listener",
    "ListeningSource",
    "end_subscriptions",
    "listen",
]

#: Bytes of notifications that may wait for one subscriptions/listen stream.
DEFAULT_LISTEN_QUEUE_BYTES: Final = 1024 * 1024

# subscriptions/listen filter key -> the notification it lets through (SubscriptionFilter).
_FILTERS: Final = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}
#: The filter keys of the specification's own (SubscriptionFilter): no extension adds these.
CORE_FILTER_KEYS: Final = frozenset({*_FILTERS, "resourceSubscriptions"})


class Listener:
    """One open ``subscriptions/listen`` stream, as an extension's filter sees it.

    ``ctx`` is the listen request's context (its auth, session and client
    capabilities); ``subscription_id`` the JSON-RPC id that tags every notification
    of the stream. :meth:`send` queues a notification on the stream (after the
    acknowledgment, whenever it is called); :meth:`on_close` runs a callback once
    the stream has ended, however it ended.
    """

    __slots__ = ("_closers", "_deliver", "_outbox", "ctx", "subscription_id")

    def __init__(
        self,
        ctx: Context,
        subscription_id: Any,
        outbox: _Outbox,
        deliver: Callable[[dict[str, Any]], None],
        closers: list[Callable[[], object]],
    ) -> None:
        self.ctx = ctx
        self.subscription_id = subscription_id
        self._outbox = outbox
        self._deliver = deliver
        self._closers = closers  # run by the listen request when the stream ends

    @property
    def closed(self) -> bool:
        """Whether the stream has ended (nothing sent reaches the client any more)."""
        return self._outbox.closed

    def send(self, method: str, params: dict[str, Any] | None = None) -> bool:
        """Queue the notification ``method`` on this stream, tagged with the subscription
        id; False when the stream has ended (or was just dropped for piling up)."""
        if self._outbox.closed:
            return False
        self._deliver(jsonrpc.notification(method, dict(params or {})))
        return not self._outbox.closed

    def on_close(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` once the stream ends (at once if it has already)."""
        if self._outbox.closed:
            callback()
        else:
            self._closers.append(callback)


def _run_closers(closers: list[Callable[[], object]]) -> None:
    while closers:
        try:
            closers.pop(0)()
        except Exception:
            log.exception("a subscriptions/listen close callback failed")


#: ``await grant(value, listener)``: what an extension acknowledges under its filter key
#: for the client's ``value`` (None: the key is left out of the acknowledgment); raising
#: an :class:`~mcpkit.errors.MCPError` refuses the whole request.
ListenGrant = Callable[[Any, Listener], Awaitable[Any]]


@runtime_checkable
class ListeningSource(Protocol):
    """A component source that follows what a ``subscriptions/listen`` stream asked for."""

    async def listen(self, listener: Listener, granted: Mapping[str, Any]) -> None:
        """A stream was granted ``granted`` (the acknowledgment's ``notifications``):
        follow its list changes and resource URIs where they live, sending their
        notifications with ``listener.send``, and stop once the stream ends
        (``listener.on_close``).

        Awaited before the acknowledgment, so that a change made after it is not
        missed; an :class:`~mcpkit.errors.MCPError` raised here refuses the request.
        """
        ...


async def listen(session: ServerSession, req: Request) -> dict[str, Any]:
    """``subscriptions/listen``: acknowledge, then forward the opted-in notifications.

    The request stays open until the client goes away (the transport cancels
    it) or the server closes the session. Every notification on the
    stream carries the subscription id in ``_meta`` (2026-07-28
    basic/patterns/subscriptions).
    """
    if session.revision.era != "stateless":
        raise MethodNotFound("Method not found: subscriptions/listen")
    asked = _subscription_filter(req.params.get("notifications"))
    server = session.server
    caps = server.capabilities(session.revision)
    offered = {
        "toolsListChanged": "tools" in caps,
        "promptsListChanged": "prompts" in caps,
        "resourcesListChanged": "resources" in caps,
    }
    granted: dict[str, Any] = {k: True for k, ok in offered.items() if ok and asked.get(k) is True}
    uris = asked.get("resourceSubscriptions")
    if "resources" in caps and isinstance(uris, list):
        resources = server.resources
        if req.auth_info is not None:
            session.subscriber_scopes = frozenset(granted_scopes(req.auth_info))
        # A resource's scopes guard its updates as they guard reading it: a URI the
        # token may not read is left out of the acknowledged filter, so the client
        # sees it was not granted (and the delivery check refuses it too).
        granted["resourceSubscriptions"] = [
            u
            for u in uris
            if isinstance(u, str) and resources.may_hear(u, session.subscriber_scopes)
        ]
    wanted = {_FILTERS[k] for k in granted if k in _FILTERS}
    session.subscriptions = set(granted.get("resourceSubscriptions", ()))
    if session.subscriptions:
        wanted.add("notifications/resources/updated")
    tag = {SUBSCRIPTION_ID: jsonrpc.wire_id(req.id)}
    send = req.send_raw
    task = asyncio.current_task()
    assert task is not None
    # Notifications wait in the listener's own bounded queue, written by this request's
    # task: a listener that does not read never holds up the notifier, nor other
    # listeners (a broadcast awaits every session). One that lets more than
    # listen_queue_bytes pile up is dropped.
    outbox = _Outbox(server.listen_queue_bytes)

    def deliver(message: dict[str, Any]) -> None:
        if outbox.closed:
            return
        params = dict(message.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), **tag}
        if not outbox.put({**message, "params": params}):
            log.warning(
                "dropped a subscriptions/listen stream: its client let more than %d bytes of "
                "notifications pile up unread",
                outbox.limit,
            )
            outbox.close(dropped=True)
            task.cancel()  # it may be stuck writing to the client: see below

    async def forward(message: dict[str, Any]) -> None:
        if message.get("method") in wanted:
            deliver(message)

    closers: list[Callable[[], object]] = []
    listener = Listener(Context(session, req), jsonrpc.wire_id(req.id), outbox, deliver, closers)
    try:
        # The extensions' own keys (SEP-2133 extensions add to the filter): each grant may
        # refuse the request before anything is acknowledged.
        for key, grant in server.listen_filters.items():
            if key in asked:
                value = await grant(asked[key], listener)
                if value is not None:
                    granted[key] = value
        # What the stream was granted of the components served from elsewhere (a proxy's
        # upstream) is followed there; before the acknowledgment, as above. A resource the
        # caller may not see is not followed (acknowledged as any URI: .heard_updates).
        if server.component_sources:
            followed = await _followed(session, req, granted)
            for source in server.component_sources:
                if isinstance(source, ListeningSource):
                    await source.listen(listener, followed)
    except BaseException:
        outbox.close()
        _run_closers(closers)
        raise
    session.standalone = forward
    server.add_session(session)
    listening = _listening.setdefault(server, set())
    listening.add(outbox)
    try:
        # Changes made while the acknowledgment is being written wait for it in the queue:
        # a client may rely on every change after the acknowledgment reaching it
        # (subscriptions § ack).
        await send(
            jsonrpc.notification(
                "notifications/subscriptions/acknowledged",
                {"notifications": granted, "_meta": tag},
            )
        )
        # Until the client closes the stream (the transport cancels the request) or the
        # session is closed, which end the stream without a result, or until the server
        # ends it (end_subscriptions).
        while (message := await outbox.get()) is not None:
            # An update of a resource the caller may not see is dropped here, where every
            # one passes (the server's own, a mount's, a proxy's): the rules as they are
            # when it is sent, so one hidden mid-stream is heard no more (.heard_updates).
            if (
                message.get("method") == UPDATED
                and (server.visibility.active or server.component_sources)
                and await hides_update(session, req, message["params"].get("uri"))
            ):
                continue
            await send(message)
    except asyncio.CancelledError:
        if not outbox.dropped or task.uncancel() > 0:
            raise
        raise MCPError(
            "Subscription dropped: the client did not read its subscriptions/listen stream "
            f"and more than {outbox.limit} bytes of notifications were waiting; listen again",
            code=INTERNAL_ERROR,
        ) from None
    finally:
        listening.discard(outbox)
        server.discard_session(session)
        outbox.close()
        _run_closers(closers)
    # The server's own end is graceful: a result tagged with the subscription id
    # (basic/patterns/subscriptions § graceful closure).
    return {"_meta": dict(tag)}


async def _followed(
    session: ServerSession, req: Request, granted: dict[str, Any]
) -> dict[str, Any]:
    """``granted`` without the resources the caller may not see (what sources follow)."""
    uris: list[str] = granted.get("resourceSubscriptions") or []
    hidden = await hidden_uris(session, req, uris) if uris else None
    if not hidden:
        return granted
    return {**granted, "resourceSubscriptions": [u for u in uris if u not in hidden]}


class _Outbox:
    """The notifications waiting for one ``subscriptions/listen`` stream, bounded in bytes."""

    __slots__ = ("_items", "_size", "_waiter", "closed", "dropped", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: deque[tuple[dict[str, Any], int]] = deque()
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False  # no more messages: get() returns None once the queue is empty
        self.dropped = False

    def put(self, message: dict[str, Any]) -> bool:
        """Queue ``message``; False (nothing queued) when that would pass the limit."""
        size = len(jsonrpc.dumps(message))
        if self._size + size > self.limit:
            return False
        self._items.append((message, size))
        self._size += size
        self._wake()
        return True

    async def get(self) -> dict[str, Any] | None:
        while not self._items:
            if self.closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        message, size = self._items.popleft()
        self._size -= size
        return message

    def close(self, *, dropped: bool = False) -> None:
        self.closed = True
        if dropped:
            self.dropped = True
            self._items.clear()
            self._size = 0
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _subscription_filter(asked: Any) -> dict[str, Any]:
    """``params.notifications`` checked against ``SubscriptionFilter`` (2026-07-28 schema).

    The member is required by the schema; a missing one is read as "nothing", a
    wrong-typed one is the caller's error (-32602), never a silently empty grant.
    """
    if asked is None:
        return {}
    if type(asked) is not dict:
        raise InvalidParams(
            f"subscriptions/listen: 'notifications' must be an object, got {json_type(asked)}"
        )
    for key in _FILTERS:
        flag = asked.get(key)
        if flag is not None and type(flag) is not bool:
            raise InvalidParams(
                f"subscriptions/listen: 'notifications.{key}' must be a boolean, "
                f"got {json_type(flag)}"
            )
    uris = asked.get("resourceSubscriptions")
    if uris is not None and (type(uris) is not list or any(type(u) is not str for u in uris)):
        raise InvalidParams(
            "subscriptions/listen: 'notifications.resourceSubscriptions' must be an array of "
            "URI strings"
        )
    return asked


# The open subscriptions/listen requests of each server, ended by end_subscriptions.
_listening: weakref.WeakKeyDictionary[MCPServer, set[_Outbox]] = weakref.WeakKeyDictionary()


def end_subscriptions(server: MCPServer) -> None:
    """Answer every open ``subscriptions/listen`` of ``server``, so their streams end (a
    shutdown: long-lived streams keep an HTTP server waiting). Call on the server's loop."""
    for outbox in list(_listening.get(server, ())):
        outbox.close()
