"""The proxy's connections to its upstream server: one per downstream session, or a pool.

An :class:`Upstream` is one :class:`~mcpkit.client.client.Client` connection to the
upstream server, opened when first needed and opened again after it failed. It
carries the upstream's traffic back down: its server→client requests (elicitation,
sampling, roots), log messages, ``list_changed`` and resource updates.

**A downstream session with a channel of its own** (the handshake era, with
sessions) gets an upstream of its own for its whole life: its requests go up on it,
and what the upstream sends back goes down to that session (a server→client request
on the stream of the call being served). The connection declares the downstream
client's own capabilities.

**Stateless downstream traffic** (2026-07-28 requests, stateless HTTP: a session
per request) is served from an :class:`UpstreamPool`, shared by every client and
every principal: each pooled connection carries *one* downstream request at a
time (a *lease*), so that everything the upstream sends on it (a server→client
request, a log message) belongs to that request and goes to nobody else. On the
handshake era a server→client request names no request of the client
(2025-11-25 basic/transports: only the stream it arrives on relates it, and stdio
has one stream), so sharing one connection between concurrent callers would let
one client answer another's elicitation. The pool grows to ``size`` connections
(one handshake each, then reused: never a handshake per call) and a request
beyond that waits for a free one. A pooled connection declares elicitation (form
and URL), sampling and roots; each request is checked against what its own
client declared (a 2026-07-28 request carries its capabilities), and a request
to a client that did not declare it is answered with an error. On a 2026-07-28
downstream the proxy's handler is an ordinary pausable call, so the upstream's
server→client requests become input-required rounds, exactly as ``ctx.elicit``
does (:mod:`mcpkit.server.stateless.input_required`).

**The upstream's list changes** reach stateless downstream traffic (2026-07-28
``subscriptions/listen`` streams) through the pool: every pooled connection hears
them (a 2026-07-28 upstream's ``Client`` listens for them), one of them, the pool's
*herald*, broadcasts them to the proxy's live sessions, once per change however
many connections are open, and a downstream listen opens one connection if none is
(:meth:`UpstreamPool.warm`). A stream of a server the proxy is mounted in (whose live
sessions the proxy's broadcast does not reach) hears them from the herald too, through
the owner's ``list_hearers``. A stream's resource URIs are followed on a connection of
its own (:mod:`.listening`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Protocol

from ..client.client import Client
from ..errors import INTERNAL_ERROR, ConnectionClosed, MCPError, PeerTimeout, RemoteError
from ..server.context import LOG_LEVELS
from ..server.heard_updates import hides_update
from ..server.request import Request
from ..server.server import MCPServer
from ..server.session import ServerSession

__all__ = ["MAX_RETRY", "UPSTREAM_FAILURES", "Owner", "Upstream", "UpstreamPool"]

log = logging.getLogger("mcpkit.compose")

#: Longest wait (s) between two attempts to hear a lost upstream again.
MAX_RETRY: Final = 30.0
# Failures of the upstream itself (as opposed to its JSON-RPC answers).
UPSTREAM_FAILURES: Final = (ConnectionClosed, PeerTimeout, OSError)
_LEVEL_NAMES: Final = {rank: name for name, rank in LOG_LEVELS.items()}
# The capability a server→client request needs of the downstream client.
_NEEDS: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class Owner(Protocol):
    """What an upstream needs of the proxy it serves (``ProxySource``)."""

    server: MCPServer
    options: dict[str, Any]  # the Client's, reaching the upstream server
    label: str  # how errors and logs name the upstream
    # Called with each list_changed method the pool hears, besides the broadcast: the
    # streams of servers the proxy is mounted in (.listening, ProxySource.forward_listen).
    list_hearers: set[Callable[[str], object]]

    def failure(self, exc: BaseException) -> MCPError:
        """The downstream error for an upstream that failed (not one that answered)."""
        ...

    def downstream_uri(self, uri: str) -> str:
        """The URI downstream clients know the upstream's resource ``uri`` by."""
        ...


class Upstream:
    """One connection to the upstream: of one downstream session, or of the pool."""

    def __init__(
        self, source: Owner, session: ServerSession | None, *, pooled: bool = False
    ) -> None:
        self.source = source
        self.pooled = pooled
        # Of a session's own upstream: that session; of a pooled one: the leasing request's.
        self.session = weakref.ref(session) if session is not None else None
        self.client: Client | None = None
        self.lock = asyncio.Lock()
        self.closed = False
        #: The log level the downstream client set (None: never set), passed up.
        self.level: str | None = None
        #: Downstream requests being served through it, latest last (where logs go).
        self.serving: list[Request] = []
        # The downstream requests asked on behalf of the current lease (pooled only).
        self.asking: set[asyncio.Task[Any]] = set()
        #: The pool it belongs to (pooled only; set by the pool).
        self.pool: UpstreamPool | None = None
        #: Upstream URI -> the other names the session subscribed to it by (a server the
        #: proxy is mounted in names it under its namespaces: ProxySource.subscribed_as).
        self.aliases: dict[str, set[str]] = {}

    def downstream(self) -> ServerSession | None:
        return self.session() if self.session is not None else None

    async def connected(self) -> Client:
        """The live client, connecting (once, however many requests wait) when needed."""
        client = self.client
        if client is not None and client.connected:
            return client
        async with self.lock:
            if self.client is not None and not self.client.connected:
                await self.drop()
            if self.client is None:
                if self.closed:
                    raise ConnectionClosed("the downstream session was closed")
                client = Client(
                    **{
                        **self.source.options,
                        **self.back_channel(),
                        "on_list_changed": self.list_changed,
                        "on_resource_updated": self.resource_updated,
                        "log_handler": self.logged,
                        "server_logs": False,
                        "cache": False,  # the proxy's own caching hints apply downstream
                    }
                )
                try:
                    await client.connect()
                except MCPError:
                    raise
                except Exception as exc:  # refused, a command that cannot start, a bad URL...
                    raise self.source.failure(exc) from exc
                self.client = client
                if self.closed:  # the session ended while we connected
                    await self.drop()
                    raise ConnectionClosed("the downstream session was closed")
                if self.level is not None:
                    await self.pass_level(client)
            return self.client

    def back_channel(self) -> dict[str, Any]:
        """Handlers passing the upstream's requests to the downstream client: a session's
        own upstream declares what that client declared, so that the upstream sees the same
        capabilities; a pooled one declares all (each request is checked in :meth:`ask`)."""
        if self.pooled:
            return {
                "elicitation_handler": functools.partial(self.ask, "elicitation/create"),
                "elicitation_modes": ("form", "url"),
                "sampling_handler": functools.partial(self.ask, "sampling/createMessage"),
                "roots": self.roots,
            }
        session = self.downstream()
        if session is None:
            return {}
        caps = session.client_capabilities
        out: dict[str, Any] = {}
        elicitation = caps.get("elicitation")
        if isinstance(elicitation, dict):
            # 2025-11-25 client/elicitation § capabilities: {} means form only.
            modes = tuple(m for m in ("form", "url") if m in elicitation) or ("form",)
            out["elicitation_handler"] = functools.partial(self.ask, "elicitation/create")
            out["elicitation_modes"] = modes
        if "sampling" in caps:
            out["sampling_handler"] = functools.partial(self.ask, "sampling/createMessage")
        if "roots" in caps:
            out["roots"] = self.roots
        return out

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send the upstream's ``method`` request to the downstream client; its answer.

        On a 2026-07-28 downstream, ``send_request`` makes it an input request of the
        call being served (an input-required round), as for ``ctx.elicit``.
        """
        session = self.downstream()
        if session is None:  # an MCPError: the upstream gets it as its answer, no traceback
            raise MCPError(
                f"the proxy has no client to ask {method}: no downstream request is being "
                "served on this connection",
                code=INTERNAL_ERROR,
            )
        # On the stream of the request being served, where the client expects it
        # (Streamable HTTP: requests related to a call go on that call's stream).
        request = self.serving[-1] if self.serving else None
        if not self.pooled:
            return await session.send_request(method, params, request)
        task = asyncio.current_task()
        if task is not None:
            self.asking.add(task)
        try:
            return await session.send_request(
                method, params, request, capability=_NEEDS.get(method)
            )
        finally:
            if task is not None:
                self.asking.discard(task)

    async def roots(self) -> list[dict[str, Any]]:
        roots = (await self.ask("roots/list", {})).get("roots")
        return [r for r in roots if isinstance(r, dict)] if isinstance(roots, list) else []

    async def pass_level(self, client: Client) -> None:
        """Ask the upstream for the downstream client's log level (when it logs at all)."""
        if self.level is not None and "logging" in client.server_capabilities:
            try:
                await client.set_logging_level(self.level)
            except RemoteError as exc:  # its refusal does not fail the downstream request
                log.debug(
                    "upstream of proxy %r refused level %s: %s", self.source.label, self.level, exc
                )

    async def follow_level(self, client: Client, session: ServerSession) -> None:
        """A pooled connection: ask the upstream for the log level the leasing request
        asked for (2026-07-28: each request carries its own), when it differs from the
        last one asked; a request that asked for no logs changes nothing."""
        level = _LEVEL_NAMES.get(session.log_level)
        if level is not None and level != self.level:
            self.level = level
            await self.pass_level(client)

    async def drop(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            try:
                await client.aclose()
            except Exception as exc:  # it is going away anyway
                log.debug("closing the upstream of proxy %r: %s", self.source.label, exc)

    async def aclose(self) -> None:
        self.closed = True
        async with self.lock:
            await self.drop()

    # -- leases (pooled) ------------------------------------------------------------------------
    def lease(self, session: ServerSession, request: Request | None) -> None:
        self.session = weakref.ref(session)
        self.serving = [request] if request is not None else []

    def release(self) -> None:
        """The leasing request is done: nothing the upstream sends reaches it any more."""
        self.session = None
        self.serving = []
        if self.asking:
            for task in self.asking:  # an answer nobody will use (the call ended or was cut)
                task.cancel()
            self.asking.clear()

    # -- what the upstream sends ----------------------------------------------------------------
    async def list_changed(self, kind: str) -> None:
        method = f"notifications/{kind}/list_changed"
        if self.pool is not None:  # serves every client: every live downstream session hears it
            # Each pooled connection hears the change: one passes it on.
            if self.pool.heralds(self):
                await self.source.server.broadcast(method)
                for hear in list(self.source.list_hearers):
                    hear(method)
            return
        session = self.downstream()
        if session is not None:
            await session.notify(method)

    async def resource_updated(self, uri: str) -> None:
        session = None if self.pooled else self.downstream()
        if session is None:
            return
        for name in (self.source.downstream_uri(uri), *self.aliases.get(uri, ())):
            # Not of a resource the session may not see, by the rules of the server it
            # belongs to (a mounting one's, by the name it knows) as they are now.
            if name in session.subscriptions and not await hides_update(session, None, name):
                await session.notify("notifications/resources/updated", {"uri": name})

    async def logged(self, params: dict[str, Any]) -> None:
        # A pooled connection's messages go to the request leasing it (a log message
        # names no request; the lease makes it that one's), else nowhere.
        session = self.downstream()
        if session is None:
            return
        request = self.serving[-1] if self.serving else None
        if self.pooled and request is None:
            return
        level, logger = params.get("level"), params.get("logger")
        try:
            await session.log(
                request,
                level if isinstance(level, str) else "info",
                params.get("data"),
                logger=logger if isinstance(logger, str) else None,
            )
        except ValueError:  # a level the upstream made up: sent as info
            await session.log(request, "info", params.get("data"))


class UpstreamPool:
    """The connections serving stateless downstream traffic, one request on each at a time."""

    def __init__(self, source: Owner, *, size: int) -> None:
        self.source = source
        self.size = size
        self.idle: deque[Upstream] = deque()
        self.members: set[Upstream] = set()
        self.waiters: deque[asyncio.Future[Upstream]] = deque()
        self.herald: Upstream | None = None
        # Open streams that asked for the upstream's list changes, and the task watching
        # that they still hear them (keep_hearing).
        self.hearing = 0
        self.watcher: asyncio.Task[None] | None = None

    def heralds(self, upstream: Upstream) -> bool:
        """Whether ``upstream`` is the member that passes the upstream's list changes on:
        the first to hear one, until it leaves the pool or loses its connection."""
        herald = self.herald
        if herald is not upstream and (
            herald is None
            or herald not in self.members
            or herald.client is None
            or not herald.client.connected
        ):
            self.herald = herald = upstream
        return herald is upstream

    async def warm(self) -> None:
        """Have at least one connection open, so that the upstream's list changes are heard
        (a 2026-07-28 downstream listen asked for them); a failure is ``source.failure``."""
        if any(u.client is not None and u.client.connected for u in self.members):
            return
        upstream = await self.take(self.source.server.create_session(stateless=True), None)
        try:
            await upstream.connected()
        finally:
            self.give_back(upstream)

    # -- list changes heard again after a loss -------------------------------------------------
    def keep_hearing(self, on_close: Callable[[Callable[[], object]], None], check: float) -> None:
        """A stream asked for the upstream's list changes (``on_close`` is its
        ``Listener.on_close``): while any such stream is open, the pool is checked every
        ``check`` seconds (:meth:`watch`), so that the changes are heard again after the
        upstream restarted or the connection broke."""
        self.hearing += 1

        def ended() -> None:
            self.hearing -= 1

        on_close(ended)
        if self.watcher is None or self.watcher.done():
            self.watcher = asyncio.get_running_loop().create_task(self.watch(check))

    async def watch(self, check: float) -> None:
        """Every ``check`` seconds, :meth:`revive`; when a connection was lost meanwhile,
        every list is announced as changed (what changed while nothing heard it, or what
        a restarted upstream serves now, is unknown). Failures wait longer each time,
        doubling up to ``MAX_RETRY``: never a busy loop. Ends with the last stream."""
        marks = self.marks()
        # Nothing connected yet (the upstream was down when the stream began): its lists are
        # announced once it is reached, as after a loss.
        delay, lost = check, not marks
        while self.hearing > 0:
            await asyncio.sleep(delay)
            if self.hearing <= 0:
                return
            try:
                await self.revive()
            except Exception as exc:  # MCPError (source.failure) included: still away
                log.debug("upstream of proxy %r is still lost: %s", self.source.label, exc)
                delay, lost = min(delay * 2, max(MAX_RETRY, check)), True
                continue
            now = self.marks()
            if lost or _moved(marks, now):
                log.info("upstream of proxy %r heard again after a loss", self.source.label)
                await self.announce_lists()
            marks, delay, lost = now, check, False

    def marks(self) -> dict[Upstream, tuple[object, Any]]:
        """What tells each connected member's upstream session apart: its handshake (a new
        one when the upstream forgot the old) and, on 2026-07-28, its listen (reopened
        when it broke)."""
        out: dict[Upstream, tuple[object, Any]] = {}
        for member in self.members:
            client = member.client
            if client is not None and client.connected:
                session = client.session
                out[member] = (session.initialize_result, session.listener.live)
        return out

    async def announce_lists(self) -> None:
        """Every list may have changed: tell the proxy's streams and sessions, and the
        streams of servers it is mounted in (``list_hearers``), as a heard change is."""
        kinds: set[str] = set()
        for member in self.members:  # what the upstream declares now (it may have changed)
            client = member.client
            if client is not None and client.connected:
                caps = client.server_capabilities
                kinds.update(k for k in ("tools", "resources", "prompts") if k in caps)
        for kind in sorted(kinds):
            method = f"notifications/{kind}/list_changed"
            await self.source.server.broadcast(method)
            for hear in list(self.source.list_hearers):
                hear(method)

    async def revive(self) -> None:
        """Each idle connection asks the upstream something, so that one whose session it
        forgot (a restart; a handshake session only notices on a request) makes a new one
        and hears its list changes again; one that fails is dropped. Then :meth:`warm`."""
        for upstream in list(self.idle):
            client = upstream.client
            if client is None or not client.connected:
                continue
            try:
                await client.ping()
            except RemoteError:  # an answer: it is there
                pass
            except Exception as exc:  # still failing: the next request connects again
                log.debug("pooled upstream of proxy %r: %s", self.source.label, exc)
                await upstream.drop()
        await self.warm()

    async def take(self, session: ServerSession, request: Request | None) -> Upstream:
        """A connection of the pool, for ``request`` alone until :meth:`give_back`."""
        upstream = await self._take()
        upstream.lease(session, request)
        return upstream

    def give_back(self, upstream: Upstream) -> None:
        """The request is done with ``upstream``: it serves the next one."""
        upstream.release()
        self._give_back(upstream)

    async def _take(self) -> Upstream:
        # The most recently used first: it is the likeliest to be connected.
        if self.idle:
            return self.idle.pop()
        if len(self.members) < self.size:
            upstream = Upstream(self.source, None, pooled=True)
            upstream.pool = self
            self.members.add(upstream)
            return upstream
        waiter: asyncio.Future[Upstream] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        wait = self.source.server.request_timeout
        try:
            async with asyncio.timeout(wait):
                return await waiter
        except (asyncio.CancelledError, TimeoutError) as exc:
            if waiter.done() and not waiter.cancelled():  # handed over as we gave up
                self._give_back(waiter.result())
            else:
                waiter.cancel()
            if isinstance(exc, TimeoutError):
                raise MCPError(
                    f"upstream server {self.source.label} is busy: all {self.size} pooled "
                    f"connections were serving other requests for {wait:g} s "
                    "(proxy(pool_size=...))",
                    code=INTERNAL_ERROR,
                    data={"upstream": self.source.label},
                ) from None
            raise

    def _give_back(self, upstream: Upstream) -> None:
        if upstream.closed:
            self.members.discard(upstream)
            return
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(upstream)
                return
        self.idle.append(upstream)

    async def aclose(self) -> None:
        members, self.members = self.members, set()
        self.idle.clear()
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_exception(ConnectionClosed("the proxy is closing"))
        self.waiters.clear()
        self.hearing = 0
        watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.cancel()
        await asyncio.gather(*(u.aclose() for u in members))


def _moved(
    before: dict[Upstream, tuple[object, Any]], now: dict[Upstream, tuple[object, Any]]
) -> bool:
    """Whether a connection of ``before`` is gone or speaks to another upstream session
    in ``now`` (the handshake compared by identity: a restarted upstream answers alike)."""
    for member, (result, live) in before.items():
        mark = now.get(member)
        if mark is None or mark[0] is not result or mark[1] != live:
            return True
    return False
