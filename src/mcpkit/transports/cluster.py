"""Streamable HTTP over several processes: one node of a cluster sharing a Redis store.

With a shared store (``RedisStore``: ``store.shared`` is true) every process
serving the same server is a *node*, and any request of any session may reach
any node (no sticky sessions). What a node keeps in memory (its
:class:`~.http_sessions.HTTPSession` entries, running handlers, open streams)
is a cache of what the store holds, plus the work it is doing; what crosses
nodes goes through the store's *bus* (pub/sub, :mod:`mcpkit.stores.bus`):

* **Sessions** are rebuilt from their record on a node that has not seen them
  (:meth:`ClusterNode.revive`), once per node; ``DELETE`` ends them on every
  node (message ``end``); a change of log level, resource subscriptions or the
  session's own visibility rules is written to the record and announced (``set``)
  *before* the answer, so the next request, wherever it lands, sees it. Local idle
  expiry only drops the cache entry: the record's own ttl ends the session.
* **Answers** to our requests (sampling, elicitation, roots) come back on any
  node: our request ids name the node that sent them (``mcpkit-<node>.<n>``),
  and another node forwards the answer there (``a`` on ``n:<node>``).
* **Cancellation** of a request another node runs is broadcast (``x``): client
  request ids carry no node.
* **The standalone stream** (GET) is held by one node; a message for it raised
  on any node is appended to the session's log and published on the session's
  channel ``c:<sid>`` in one atomic step, so the holder writes them in log
  order, each once. Broadcasts (``b``, ``u``) reach every node, and only the node
  that holds (or last held) a session's GET delivers them to it
  (``ServerSession.broadcast_here``; taking the GET over is announced with ``g``).
  A node taking it over from a dead holder sends the list_changed and
  resources/updated hints of what may have been raised meanwhile (``gh`` in the store).
* **Resuming a request stream** on another node replays its log and then
  follows it (blocking reads of the log) until the final response; if the node
  running the request has died, the stream ends with a JSON-RPC error, so the
  request ends with a definite answer.

Messages on the bus are small JSON objects with a kind ``k``; those on ``bc``
carry their sender ``o`` so that a node ignores its own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final

from ..errors import INTERNAL_ERROR, ConnectionClosed, ServerBusy, StoreUnavailable
from ..protocol import jsonrpc
from ..protocol.lifecycle import State
from ..server.context import LOG_LEVELS
from ..server.heard_updates import hides_update
from ..server.stateless.request_state import RequestStateCodec
from ..server.visibility import VisibilityRules
from ..stores.bus import BusHandler
from . import http_sessions
from .cluster_ids import suffix_parts
from .http_request_streams import CLOSE, FINAL, StreamQueue, record_event
from .http_sessions import HTTPSession, session_record

if TYPE_CHECKING:
    from ..server.session import ServerSession
    from .streamable_http import StreamableHTTPApp

__all__ = ["ClusterNode", "cluster_for", "join_bus", "leave_bus"]

log = logging.getLogger("mcpkit.transports.cluster")

#: How long a resumed stream of another node waits for its next event before checking
#: that the node is still alive (milliseconds; the wait is one blocking read of the log).
#: The node counts as dead after two such checks in a row found it gone (the second one
#: rules out a pub/sub connection being replaced, which takes about 0.5 s:
#: :mod:`mcpkit.stores.redis_bus`); the first check comes right after the catch-up read,
#: so a call whose node was killed ends about 1 s after its stream was resumed.
TAIL_BLOCK_MS: Final = 1000


# The apps of this process listening on each bus: one process may serve a server over
# Streamable HTTP and legacy SSE at once, each app with its own handler.
_listeners: dict[int, tuple[Any, list[BusHandler]]] = {}


async def join_bus(bus: Any, handler: BusHandler) -> None:
    """Listen on ``bus`` with ``handler`` (the bus starts with the first listener)."""
    known = _listeners.get(id(bus))
    if known is None:
        handlers: list[BusHandler] = [handler]
        _listeners[id(bus)] = (bus, handlers)

        def dispatch(channel: str, message: dict[str, Any]) -> None:
            for each in list(handlers):
                each(channel, message)

        try:
            await bus.start(dispatch)
        except BaseException:
            del _listeners[id(bus)]
            raise
    else:
        known[1].append(handler)


async def leave_bus(bus: Any, handler: BusHandler) -> None:
    """Stop listening; the bus closes with its last listener."""
    known = _listeners.get(id(bus))
    if known is None or handler not in known[1]:
        return
    known[1].remove(handler)
    if not known[1]:
        del _listeners[id(bus)]
        await bus.aclose()


def cluster_for(app: StreamableHTTPApp) -> ClusterNode | None:
    """The app's cluster node when its server's store is shared (None: one process)."""
    store = app.server.store
    if store is None or not getattr(store, "shared", False):
        return None
    if app.session_store is not store.sessions or app.event_store is not store.events:
        return None  # the app was given stores of its own: it is not a node of the store
    return ClusterNode(app, store)


class ClusterNode:
    """This process as one node of a cluster: the bus handlers and the cross-node paths
    of one :class:`~.streamable_http.StreamableHTTPApp`."""

    def __init__(self, app: StreamableHTTPApp, store: Any) -> None:
        self.app = app
        self.store = store
        self.bus = store.bus
        self.node_id: str = self.bus.node_id
        self.started = False
        self._starting: asyncio.Lock | None = None
        # Sessions being rebuilt from their record: concurrent requests share one load.
        self._reviving: dict[str, asyncio.Future[HTTPSession | None]] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._key: bytes | None = None  # the requestState key this node signs with
        # No node ends a session that idles out (each drops its cache entry; the record's
        # ttl ends it), so none deletes its event log: capped at the record's ttl, the log
        # goes with the record instead of lingering for event_ttl (1 h by default) with
        # events no one can resume any more (a resume needs the session).
        events = store.events
        record_ttl = app.sessions.record_ttl
        if isinstance(getattr(events, "ttl", None), (int, float)) and events.ttl > record_ttl:
            events.ttl = record_ttl

    # -- life ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Join the bus (once): subscribe, announce this node, share the server's keys."""
        if self.started:
            return
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self.started:
                return
            await join_bus(self.bus, self._on_message)
            self.bus.on_reconnect(self._reconnected)
            server = self.app.server
            server.connect_fanout(self._fanout)
            if server.uses_default_request_state_keys:
                await self._share_key()
            self._spawn(self._keep_records())
            self.started = True

    async def _keep_records(self) -> None:
        """Sweep the table on a timer: a session busy here with nothing but a long stream
        has its record's ttl restarted even when no other request reaches this node (the
        sweep otherwise runs from the request path only)."""
        table = self.app.sessions
        while True:
            await asyncio.sleep(table.store_every)
            table.sweep(http_sessions.clock())

    async def _share_key(self) -> None:
        """Sign requestState with the cluster's key (every node must open what another
        sealed). Offering our own again after Redis came back keeps the running nodes'
        key if Redis lost it; a different key found there is taken, ours still opens."""
        rounds = self.app.server.input_rounds
        mine = self._key
        key = await self.store.request_state_key(mine)
        if key != mine:
            self._key = key
            keys = [key] if mine is None else [key, mine]
            rounds.codec = RequestStateCodec(keys, ttl=rounds.ttl)

    async def aclose(self) -> None:
        if not self.started:
            return
        self.started = False
        self.app.server.disconnect_fanout(self._fanout)
        for task in list(self._tasks):
            task.cancel()
        try:
            await leave_bus(self.bus, self._on_message)
        except Exception as exc:  # the store may be gone already: nothing left to undo
            log.debug("closing the bus: %r", exc)

    def _reconnected(self) -> None:
        # Messages were lost while the bus was away: the records are the truth again.
        log.info("the cluster bus is back; re-reading cached sessions on next use")
        for entry in self.app.sessions.values():
            entry.verified = False
        if self.app.server.uses_default_request_state_keys:
            self._spawn(self._reshare_key())

    async def _reshare_key(self) -> None:
        try:
            await self._share_key()
        except StoreUnavailable as exc:  # gone again: the next reconnection tries again
            log.warning("could not share the requestState key: %s", exc)

    # -- sessions --------------------------------------------------------------------------------
    def adopt(self, entry: HTTPSession) -> None:
        """Make a new or rebuilt session a cluster session of this node."""
        session = entry.session
        session.set_request_id_prefix(f"mcpkit-{self.node_id}.")
        session.on_state_change = self._state_changed
        session.broadcast_here = False  # until its GET stream is held here
        entry.node = self.node_id

    async def find(self, raw_sid: bytes, entry: HTTPSession | None) -> HTTPSession | None:
        """The session a request names, given what the local table holds (``entry``): one
        another node created is rebuilt from its record; after the bus was away, a cached
        one is checked against its record first."""
        if entry is None:
            return await self.revive(raw_sid.decode("latin-1"))
        if not entry.verified:
            return await self.verify(entry)
        return entry

    async def revive(self, sid: str) -> HTTPSession | None:
        """The session ``sid`` rebuilt from its record (None: unknown, ended or expired)."""
        pending = self._reviving.get(sid)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[HTTPSession | None] = asyncio.get_running_loop().create_future()
        self._reviving[sid] = future
        try:
            entry = await self._revive(sid)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it
            raise
        else:
            future.set_result(entry)
            return entry
        finally:
            del self._reviving[sid]

    async def _revive(self, sid: str) -> HTTPSession | None:
        app = self.app
        known = app.sessions.get(sid)
        if known is not None:
            return known
        record = await self.store.sessions.load(sid)
        if record is None:
            return None
        if not app.sessions.make_room():
            raise ServerBusy("too many active sessions on this node to serve one more")
        session = app.server.create_session(
            session_id=sid, revision=record.protocol_version, transport="streamable_http"
        )
        session.max_inflight = app.max_inflight
        self._apply(
            session,
            record.log_level,
            record.subscriptions,
            record.subscriber_scopes,
            record.principal,
            record.visibility,
        )
        session.client_info = record.client_info
        session.client_capabilities = record.client_capabilities
        session.state = State.READY
        entry = HTTPSession(app, sid, session, record.principal)
        entry.created_at = record.created_at
        entry.stored_at -= app.sessions.store_every  # restart the record's ttl soon
        session.standalone = entry
        self.adopt(entry)
        app.server.add_session(session)
        app.sessions.add(entry)
        return entry

    async def verify(self, entry: HTTPSession) -> HTTPSession | None:
        """After the bus was away: re-read an entry's record before serving it."""
        record = await self.store.sessions.load(entry.sid)
        if record is None:
            self.app.sessions.end(entry, forget=False)
            return None
        self._apply(
            entry.session,
            record.log_level,
            record.subscriptions,
            record.subscriber_scopes,
            record.principal,
            record.visibility,
        )
        entry.verified = True
        return entry

    def _apply(
        self,
        session: ServerSession,
        level: str | None,
        subs: Any,
        scopes: Any,
        principal: Any,
        rules: Any,
    ) -> None:
        server_default = session.server.default_log_level
        session.log_level = LOG_LEVELS.get(level or server_default, LOG_LEVELS[server_default])
        session.subscriptions = set(subs) if subs else set()
        if isinstance(scopes, list):
            session.subscriber_scopes = frozenset(s for s in scopes if isinstance(s, str))
        else:
            # An authenticated session whose subscriber's scopes were not shared (a node
            # of an older version): no updates of scoped resources rather than all.
            session.subscriber_scopes = None if principal is None else frozenset()
        session.visibility = _rules(rules)

    async def _state_changed(self, session: ServerSession) -> None:
        """setLevel / (un)subscribe / the session's visibility rules: write the record,
        tell the other nodes, then answer."""
        entry = self.app.sessions.get(session.session_id or "")
        if entry is None:
            return
        record = session_record(entry)
        table = self.app.sessions
        await self.store.sessions.save(record, table.record_ttl)
        entry.stored_level = session.log_level
        await self.bus.publish(
            "bc",
            {
                "k": "set",
                "o": self.node_id,
                "sid": entry.sid,
                "lvl": record.log_level,
                "sub": sorted(session.subscriptions),
                "scp": record.subscriber_scopes,
                "vis": record.visibility,
            },
        )

    async def delete(self, entry: HTTPSession) -> None:
        """DELETE: end the session everywhere. Its record goes before the answer, so that
        no node can rebuild it afterwards; the nodes that cached it are told."""
        self.app.sessions.end(entry, forget=False)
        await self.store.sessions.delete(entry.sid)
        await self.store.events.delete_log(entry.sid)
        await self._publish_quietly("bc", {"k": "end", "o": self.node_id, "sid": entry.sid})

    # -- the POST path ---------------------------------------------------------------------------
    async def pass_on(self, entry: HTTPSession, msg: Any) -> bool:
        """Before a POSTed message is received here: forward an answer to the node that
        waits for it (True: done, answer 202); tell the other nodes of a cancellation."""
        if type(msg) is not dict:
            return False  # a batch (2025-03-26) is served here, its answers included
        method = msg.get("method")
        if method is None:
            return await self.route_answer(entry, msg)
        if method == "notifications/cancelled":
            await self.forward_cancel(entry, msg)
        return False

    async def route_answer(self, entry: HTTPSession, msg: dict[str, Any]) -> bool:
        """A client's answer to another node's request: forward it there (True: done)."""
        rid = msg.get("id")
        if type(rid) is not str or not rid.startswith("mcpkit-"):
            return False
        node, dot, _ = rid[7:].partition(".")
        if not dot or node == self.node_id:
            return False
        receivers = await self.bus.publish(f"n:{node}", {"k": "a", "sid": entry.sid, "msg": msg})
        if not receivers:
            # Its node is gone (its handler with it) or not listening: nobody waits for it.
            log.debug("an answer for node %s reached no one", node)
        return True

    async def forward_cancel(self, entry: HTTPSession, msg: dict[str, Any]) -> None:
        """``notifications/cancelled`` for a request this node does not run: tell the others."""
        params = msg.get("params")
        rid = params.get("requestId") if isinstance(params, dict) else None
        if rid is None or entry.session.is_running(rid):
            return
        await self._publish_quietly(
            "bc", {"k": "x", "o": self.node_id, "sid": entry.sid, "msg": msg}
        )

    # -- the standalone stream -------------------------------------------------------------------
    async def standalone(self, entry: HTTPSession, message: dict[str, Any]) -> None:
        """Send on the session's GET stream, wherever it is held: log it, publish it."""
        _, receivers = await self.store.events.append_and_publish(entry.sid, message)
        if not receivers and "id" in message and "method" in message:
            raise ConnectionClosed(
                f"cannot send {message['method']} to the client: the server reaches it only "
                "through its GET stream, which is not open on any node"
            )

    async def hold(self, entry: HTTPSession) -> None:
        """This node now holds the session's GET stream: follow its channel, take over its
        broadcasts from the node that held it before."""
        await self.bus.join(f"c:{entry.sid}")
        entry.session.broadcast_here = True
        await self._publish_quietly("bc", {"k": "g", "o": self.node_id, "sid": entry.sid})
        await self._catch_up(entry)

    async def _catch_up(self, entry: HTTPSession) -> None:
        """Scale-out.md § 6.4: broadcasts (list_changed, resources/updated) are logged for a
        session only by the node that holds, or last held, its GET stream; those raised
        after that node died and before this takeover reached no log, so a resume with
        Last-Event-ID could not replay them and the client kept a stale list. When the
        previous holder is dead, send the hints they would have been (an extra one only
        costs the client a re-read). A holder killed without a graceful stop counts as
        dead as soon as Redis saw its connection close (RedisBus.node_alive), one on a
        machine gone off the network once its liveness key expired (node_ttl)."""
        swap = getattr(self.store.sessions, "swap_holder", None)
        if swap is None:
            return
        try:
            previous = await swap(entry.sid, self.node_id, self.app.sessions.record_ttl)
            if previous is None or previous == self.node_id:
                return
            if await self.bus.node_alive(previous):
                return
            session = entry.session
            capabilities = self.app.server.capabilities(session.revision)
            for kind in ("tools", "prompts", "resources"):
                if (capabilities.get(kind) or {}).get("listChanged"):
                    await self.standalone(
                        entry, jsonrpc.notification(f"notifications/{kind}/list_changed")
                    )
            resources = self.app.server.resources
            for uri in sorted(session.subscriptions):
                if not resources.may_hear(uri, session.subscriber_scopes):
                    continue
                if await hides_update(session, None, uri):  # hidden from it (visibility)
                    continue
                await self.standalone(
                    entry, jsonrpc.notification("notifications/resources/updated", {"uri": uri})
                )
        except StoreUnavailable as exc:
            log.warning("could not catch up session %s after a GET takeover: %s", entry.sid, exc)

    async def release(self, entry: HTTPSession) -> None:
        """The GET stream ended here. Broadcasts for the session go on being logged here
        (``broadcast_here`` stays) until another node takes its GET over."""
        try:
            await self.bus.leave(f"c:{entry.sid}")
        except StoreUnavailable as exc:
            log.debug("leaving a session channel: %s", exc)

    # -- resuming another node's request stream --------------------------------------------------
    def foreign(self, stream_id: str) -> tuple[str, Any] | None:
        """(node, request id) when ``stream_id`` is a request stream of another node."""
        parts = suffix_parts(stream_id)
        if parts is None or parts[0] == self.node_id:
            return None
        return parts

    async def follow(
        self, stream_id: str, after: str, owner: str, rid: Any, queue: StreamQueue
    ) -> None:
        """Feed ``queue`` with the events of another node's request stream after ``after``,
        until its final response; if that node died first, end it with an error."""
        events = self.store.events
        position = after
        missed = 0  # checks in a row that found its node gone
        wait = 0  # the first read does not wait: a node that died is checked at once
        try:
            while True:
                found, position = await events.read_after(stream_id, position, wait)
                wait = TAIL_BLOCK_MS
                for event_id, message in found:
                    queue.put_message(event_id, message, True)
                    if "method" not in message:  # the response: the stream is complete
                        queue.put_nowait(FINAL)
                        return
                if found:
                    missed = 0
                    continue
                missed = 0 if await self.bus.node_alive(owner) else missed + 1
                if missed < 2:
                    continue
                error = jsonrpc.error_response(
                    rid,
                    INTERNAL_ERROR,
                    "the server node running this request stopped before answering; "
                    "it may or may not have taken effect",
                    {"node": owner},
                )
                event_id = await record_event(events, stream_id, error)
                queue.put_message(event_id, error, True)
                queue.put_nowait(FINAL)
                return
        except StoreUnavailable as exc:
            log.warning("cannot follow stream %s: %s", stream_id, exc)
            queue.put_nowait(FINAL)

    # -- the bus ---------------------------------------------------------------------------------
    async def _fanout(self, message: dict[str, Any]) -> None:
        message["o"] = self.node_id
        await self._publish_quietly("bc", message)

    async def _publish_quietly(self, channel: str, message: dict[str, Any]) -> None:
        try:
            await self.bus.publish(channel, message)
        except StoreUnavailable as exc:
            log.warning("could not tell the other nodes (%s): %s", message.get("k"), exc)

    def _on_message(self, channel: str, msg: dict[str, Any]) -> None:
        """One message from the bus (called by its reader; never awaits Redis here)."""
        table = self.app.sessions
        if channel.startswith("c:"):
            entry = table.get(channel[2:])
            queue = entry.get_queue if entry is not None else None
            if queue is not None and "m" in msg:
                queue.put_message(msg.get("id"), msg["m"], False)
            return
        kind = msg.get("k")
        if channel == "bc" and msg.get("o") == self.node_id:
            return  # our own broadcast: delivered here already
        if kind == "b":
            self._spawn(self.app.server.deliver_broadcast(msg.get("m", ""), msg.get("p")))
            return
        if kind == "u":
            self._spawn(self.app.server.resources.deliver_updated(str(msg.get("uri"))))
            return
        if kind == "v":  # a principal's visibility rules changed in the store
            self.app.server.visibility.forget(msg.get("p"))
            return
        sid = msg.get("sid")
        entry = table.get(sid) if type(sid) is str else None
        if entry is None:
            return
        if kind == "a" or kind == "x":
            inner = msg.get("msg")
            if isinstance(inner, dict):
                entry.session.receive(inner)
        elif kind == "set":
            self._apply(
                entry.session,
                msg.get("lvl"),
                msg.get("sub"),
                msg.get("scp"),
                entry.principal,
                msg.get("vis"),
            )
            entry.stored_level = entry.session.log_level
        elif kind == "g":
            # Another node took the GET stream over: one GET per session, cluster-wide.
            entry.session.broadcast_here = False
            if entry.get_queue is not None:
                entry.get_queue.put_nowait(CLOSE)
                entry.get_queue = None
        elif kind == "end":
            table.end(entry, forget=False)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _rules(data: Any) -> VisibilityRules | None:
    """A session's visibility rules from its record or a ``set`` message (None: none)."""
    if not isinstance(data, dict):
        return None
    try:
        return VisibilityRules.from_json(data)
    except (TypeError, ValueError) as exc:  # unreadable: the server's rules only
        log.warning("unreadable visibility rules of a session ignored: %r", exc)
        return None
