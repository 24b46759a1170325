"""The cluster bus on Redis pub/sub: :class:`RedisBus` (``RedisStore(...).bus``).

One node holds one pub/sub connection, read by one task, subscribed to
``<prefix>n:<node id>`` (messages for this node), ``<prefix>bc`` (for every
node) and the channels it :meth:`~RedisBus.join`\\ s (``<prefix>c:<session id>``
while it holds that session's GET stream); ``docs/design/scale-out.md`` § 3.4.
Commands (``PUBLISH``, the heartbeat ``SET``, ``EXISTS``) go through the
ordinary client, never through the pub/sub connection, which Redis reserves
for (un)subscribing once it subscribed.

Liveness (§ 4.1), two signals, both needed: the node's pub/sub connection,
subscribed to ``<prefix>n:<node id>``, and ``<prefix>node:<node id>``, which
holds ``{"host", "pid", "started"}`` and expires ``node_ttl`` seconds after its
last refresh (the bus refreshes it every ``node_ttl / 3`` and deletes it when it
closes). A process that dies however abruptly (``kill -9``, a crash, the OOM
killer) has its socket closed by its operating system, and Redis drops the
subscription at once: ``PUBSUB NUMSUB`` says so the next time anyone asks,
without any traffic while the node lives. A machine that vanishes off the
network closes nothing; its key's expiry tells then. ``node_alive`` is one round
trip: ``PUBSUB NUMSUB`` and ``EXISTS``, pipelined. A node that lost Redis for a
moment also has no subscriber until it reconnects (every 0.5 s): a caller that
must not mistake that for death asks again a second later. Where an ACL refuses
``PUBSUB NUMSUB``, the key alone tells (one warning).

Losing Redis (§ 12.2): the reader notices (a read fails, or a ``PING`` on an
idle connection gets no answer within ``timeout``), logs one warning and tries
a fresh connection every 0.5 s (in a pool of its own, closed with it), each
attempt bounded by ``connect_timeout + timeout``; once connected it subscribes
every channel again, sets the heartbeat again (bounded by as much) and, when
Redis confirmed every subscription, calls the :meth:`~RedisBus.on_reconnect`
callbacks. Nothing raises out of the reader meanwhile; ``publish`` raises
:class:`~mcpkit.errors.StoreUnavailable`, ``join`` too once ``timeout`` passed.
``aclose`` ends the reader and the heartbeat even where a cancellation is lost
(:meth:`RedisBus._stop`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any, Final

import orjson

from .._extras import require_extra

with require_extra("redis", feature="the Redis message bus (mcpkit.stores.redis_bus)"):
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.client import PubSub
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ResponseError

from ..errors import ConfigurationError, StoreUnavailable
from ..loops import cancel_and_wait
from .bus import BusHandler, new_node_id
from .redis_connection import FAILURES, redact_url, sibling_pool, where_of

__all__ = ["RECONNECT_INTERVAL", "RedisBus"]

logger = logging.getLogger("mcpkit.stores.redis_bus")

#: Seconds between two attempts to get the pub/sub connection back.
RECONNECT_INTERVAL: Final = 0.5


def _subscribers(reply: Any) -> int:
    """The count of a one-channel ``PUBSUB NUMSUB`` reply: ``[(channel, count)]`` as
    redis-py parses it (a map under RESP3)."""
    pairs = reply.items() if isinstance(reply, dict) else reply
    for _, count in pairs or ():
        return int(count)
    return 0


class RedisBus:
    """A :class:`~mcpkit.stores.bus.Bus` on Redis pub/sub (see the module docstring).

    ``client_or_url`` is a ``redis://`` URL (a small pool is made for the
    commands and closed by :meth:`aclose`) or a ``redis.asyncio.Redis`` client
    (used for the commands, not closed here; ``RedisStore.bus`` passes its
    own). The pub/sub connection is always the bus's own, opened with the
    same address and credentials. ``where`` names the server in errors
    (default: the URL with its password hidden).
    """

    def __init__(
        self,
        client_or_url: str | Redis,
        *,
        prefix: str = "mcpkit:",
        node_ttl: float = 15.0,
        connect_timeout: float = 2.0,
        timeout: float = 2.0,
        where: str | None = None,
    ) -> None:
        for name, value in (
            ("node_ttl", node_ttl),
            ("connect_timeout", connect_timeout),
            ("timeout", timeout),
        ):
            if not value > 0:
                raise ConfigurationError(f"RedisBus: {name} must be positive, not {value!r}")
        if isinstance(client_or_url, str):
            self.url = where or redact_url(client_or_url)
            try:
                pool = BlockingConnectionPool.from_url(
                    client_or_url,
                    max_connections=16,
                    timeout=connect_timeout,  # waiting for a free connection
                    socket_connect_timeout=connect_timeout,
                    socket_timeout=timeout,
                    retry=Retry(NoBackoff(), 1),
                )
            except ValueError as exc:
                raise ConfigurationError(f"RedisBus: bad Redis URL {self.url}: {exc}") from exc
            self._client: Redis = Redis(connection_pool=pool)
            self._owned = True
        else:
            self._client = client_or_url
            self.url = where or where_of(client_or_url)
            self._owned = False
        # The pub/sub connection's settings: no retry of redis-py's own (it would reconnect
        # and resubscribe behind our back); the reader replaces a lost one itself.
        self._pubsub_options: dict[str, Any] = {
            "socket_connect_timeout": connect_timeout,
            "socket_timeout": timeout,
            "retry": Retry(NoBackoff(), 0),
            "decode_responses": False,  # messages are orjson bytes, whatever the client's
        }
        self.node_id = new_node_id()
        self.prefix = prefix
        self.node_ttl = node_ttl
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._node_key = f"{prefix}node:{self.node_id}"
        self._started = time.time()
        self._handler: BusHandler | None = None
        self._pubsub: PubSub | None = None
        self._wanted: set[str] = set()  # channels we mean to be subscribed to
        self._live: set[str] = set()  # ...and those Redis confirmed on this connection
        self._joining: dict[str, list[asyncio.Future[None]]] = {}
        self._leaving: dict[str, list[asyncio.Future[None]]] = {}
        self._callbacks: list[Callable[[], None]] = []
        self._recovering = False
        self._ping_sent: float | None = None
        self._reader: asyncio.Task[None] | None = None
        self._heart: asyncio.Task[None] | None = None
        self._closed = False
        self._numsub = True  # False once Redis refused PUBSUB NUMSUB (an ACL)

    def __repr__(self) -> str:
        return f"RedisBus({self.url!r}, prefix={self.prefix!r}, node_id={self.node_id!r})"

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self, handler: BusHandler) -> None:
        """Connect, subscribe ``n:<node_id>`` and ``bc``, set the heartbeat, start the
        reader and heartbeat tasks. ``StoreUnavailable`` naming the URL when Redis
        cannot be reached (nothing is left running then)."""
        if self._handler is not None or self._closed:
            raise RuntimeError("RedisBus.start() may be called once, before aclose()")
        self._handler = handler
        own = (f"n:{self.node_id}", "bc")
        self._wanted.update(own)
        waiters = [self._waiter(self._joining, channel) for channel in own]
        try:
            self._pubsub = await self._open()
            await self._pubsub.subscribe(*(self.prefix + channel for channel in own))
            await self._beat()
            self._reader = asyncio.create_task(self._read(), name=f"mcpkit bus {self.node_id}")
            async with asyncio.timeout(self.timeout):
                await asyncio.gather(*waiters)
        except (*FAILURES, TimeoutError) as exc:
            await self.aclose()
            raise StoreUnavailable(
                f"cannot reach Redis at {self.url}: {type(exc).__name__}: {exc}"
            ) from exc
        self._heart = asyncio.create_task(self._heartbeat(), name=f"mcpkit heart {self.node_id}")

    async def aclose(self) -> None:
        """Stop the tasks, drop the subscriptions (the connection closes), delete this
        node's key, close the connections this bus opened. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(
            *(self._stop(task) for task in (self._reader, self._heart) if task is not None)
        )
        self._reader = self._heart = None
        await self._drop_pubsub()
        self._wanted.clear()
        for table in (self._joining, self._leaving):
            for futures in table.values():
                for future in futures:
                    if not future.done():
                        future.cancel()
            table.clear()
        if self._handler is not None:
            try:
                await self._client.delete(self._node_key)
            except FAILURES as exc:  # it expires by itself within node_ttl
                logger.debug("could not delete %s: %s", self._node_key, exc)
        if self._owned:
            await self._client.aclose()
            await self._client.connection_pool.disconnect()

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    # -- commands ------------------------------------------------------------------------------

    async def publish(self, channel: str, message: dict[str, Any]) -> int:
        """``PUBLISH <prefix><channel> <orjson of message>``: the number of receivers."""
        try:
            count = await self._client.publish(self.prefix + channel, orjson.dumps(message))
        except FAILURES as exc:
            self._fail(exc)
        return int(count)

    async def node_alive(self, node_id: str) -> bool:
        """Whether node ``node_id``'s pub/sub connection is subscribed to its own channel
        and its heartbeat key exists: ``PUBSUB NUMSUB <prefix>n:<node_id>`` and ``EXISTS
        <prefix>node:<node_id>`` in one round trip (see the module docstring)."""
        try:
            pipe = self._client.pipeline(transaction=False)
            if self._numsub:
                pipe.pubsub_numsub(f"{self.prefix}n:{node_id}")
            pipe.exists(f"{self.prefix}node:{node_id}")
            *numsub, found = await pipe.execute(raise_on_error=False)
        except FAILURES as exc:
            self._fail(exc)
        if isinstance(found, BaseException):
            self._fail(found)
        if not numsub:
            return bool(found)
        if isinstance(numsub[0], ResponseError):
            # An ACL user without +pubsub|numsub (docs/deployment.md, Security): the key
            # alone tells, as before this signal existed.
            self._numsub = False
            logger.warning(
                "Redis at %s refused PUBSUB NUMSUB (%s): a node killed without a graceful "
                "stop is seen dead only once its heartbeat expires (node_ttl, %s s)",
                self.url,
                numsub[0],
                self.node_ttl,
            )
            return bool(found)
        return bool(found) and _subscribers(numsub[0]) > 0

    async def join(self, channel: str) -> None:
        """Subscribe ``channel``; returns once Redis confirmed it (so a message
        published afterwards is delivered), ``StoreUnavailable`` when that takes
        longer than ``timeout`` (Redis lost: the channel is then not kept)."""
        if self._handler is None or self._closed:
            raise RuntimeError("RedisBus.join() needs a started bus")
        if channel in self._live and channel in self._wanted:
            return
        self._wanted.add(channel)
        waiter = self._waiter(self._joining, channel)
        pubsub = self._pubsub
        if pubsub is not None:
            try:
                await pubsub.subscribe(self.prefix + channel)
            except FAILURES:
                pass  # the reader sees the loss too; its reconnection subscribes `channel`
        try:
            async with asyncio.timeout(self.timeout):
                await waiter
        except TimeoutError as exc:
            self._wanted.discard(channel)
            raise StoreUnavailable(
                f"Redis at {self.url} did not confirm the subscription to {channel!r} "
                f"within {self.timeout} s"
            ) from exc
        finally:
            self._forget(self._joining, channel, waiter)

    async def leave(self, channel: str) -> None:
        """Unsubscribe ``channel``; nothing of it reaches the handler any more. Never
        raises for a lost connection (its subscriptions went with it)."""
        if channel not in self._wanted:
            return
        self._wanted.discard(channel)
        self._live.discard(channel)
        self._check_recovered()
        pubsub = self._pubsub
        if pubsub is None:
            return
        waiter = self._waiter(self._leaving, channel)
        try:
            await pubsub.unsubscribe(self.prefix + channel)
            async with asyncio.timeout(self.timeout):
                await waiter
        except (*FAILURES, TimeoutError) as exc:
            logger.debug("unsubscribing %s unconfirmed: %s", channel, exc)
        finally:
            self._forget(self._leaving, channel, waiter)

    # -- internals -----------------------------------------------------------------------------

    def _fail(self, exc: BaseException) -> Any:
        raise StoreUnavailable(
            f"Redis at {self.url} is unavailable: {type(exc).__name__}: {exc}"
        ) from exc

    @staticmethod
    def _waiter(table: dict[str, list[asyncio.Future[None]]], channel: str) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        table.setdefault(channel, []).append(future)
        return future

    @staticmethod
    def _forget(
        table: dict[str, list[asyncio.Future[None]]], channel: str, future: asyncio.Future[None]
    ) -> None:
        futures = table.get(channel)
        if futures is not None and future in futures:
            futures.remove(future)
            if not futures:
                del table[channel]

    @staticmethod
    def _settle(table: dict[str, list[asyncio.Future[None]]], channel: str) -> None:
        for future in table.pop(channel, ()):
            if not future.done():
                future.set_result(None)

    async def _stop(self, task: asyncio.Task[None]) -> None:
        """Cancel ``task`` and wait until it ended, cancelling it again as long as it runs.

        Once is not always enough: on Python 3.11, ``asyncio.wait_for`` (which redis-py
        sends every command through when a socket timeout is set) drops a cancellation
        (CPython gh-86296; :func:`~mcpkit.loops.cancel_and_wait`). The loops also end by
        themselves once ``_closed`` is set; a task still running after ``connect_timeout
        + timeout`` is left to that (a warning), so ``aclose`` itself never hangs."""
        what = f"bus task of node {self.node_id}"
        await cancel_and_wait(task, timeout=self.connect_timeout + self.timeout, what=what)
        if task.done() and not task.cancelled() and task.exception() is not None:
            logger.error("bus task %s failed", task.get_name(), exc_info=task.exception())

    async def _open(self) -> PubSub:
        # A pool of its own for each pub/sub connection, closed with it (_close_pubsub):
        # whatever an interrupted connect could leave checked out in redis-py's pool goes
        # with that pool, and can never make the next attempt fail ("Too many connections").
        pool = sibling_pool(self._client, max_connections=1, **self._pubsub_options)
        pubsub = PubSub(pool, ignore_subscribe_messages=False)
        try:
            async with asyncio.timeout(self.connect_timeout + self.timeout):
                await pubsub.connect()  # type: ignore[no-untyped-call]
        except BaseException:
            await self._close_pubsub(pubsub)
            raise
        return pubsub

    @staticmethod
    async def _close_pubsub(pubsub: PubSub) -> None:
        """Close ``pubsub``'s connection and every other of its pool (see :meth:`_open`)."""
        try:
            await pubsub.aclose()  # type: ignore[no-untyped-call]
        except FAILURES:
            pass
        finally:
            try:
                await pubsub.connection_pool.disconnect()
            except FAILURES:
                pass

    async def _drop_pubsub(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        self._live.clear()
        self._ping_sent = None
        if pubsub is not None:
            await self._close_pubsub(pubsub)

    async def _beat(self) -> None:
        value = orjson.dumps(
            {"host": socket.gethostname(), "pid": os.getpid(), "started": self._started}
        )
        await self._client.set(self._node_key, value, px=max(1, int(self.node_ttl * 1000)))

    async def _heartbeat(self) -> None:
        while not self._closed:  # besides the cancellation, which can be lost (_stop)
            await asyncio.sleep(self.node_ttl / 3)
            try:
                await self._beat()
            except FAILURES as exc:  # the reconnection sets it again
                logger.debug("bus heartbeat of node %s failed: %s", self.node_id, exc)

    async def _read(self) -> None:
        idle = min(self.node_ttl / 3, 5.0)  # ping a quiet connection this often
        last = time.monotonic()
        while not self._closed:  # besides the cancellation, which can be lost (_stop)
            pubsub = self._pubsub
            try:
                if pubsub is None:
                    raise ConnectionError("no pub/sub connection")
                message = await pubsub.get_message(timeout=min(idle, 1.0))
                now = time.monotonic()
                if message is not None:
                    last = now
                    self._ping_sent = None
                    self._dispatch(message)
                elif self._ping_sent is not None:
                    if now - self._ping_sent > self.timeout:
                        raise TimeoutError(f"no answer to PING within {self.timeout} s")
                elif now - last > idle:
                    self._ping_sent = now
                    await pubsub.ping()
            except asyncio.CancelledError:
                raise
            except (*FAILURES, TimeoutError) as exc:
                await self._recover(exc)
                last = time.monotonic()
            except Exception:  # a bug of ours: log it, never stop reading
                logger.exception("bus reader of node %s", self.node_id)

    async def _recover(self, exc: BaseException) -> None:
        logger.warning(
            "bus of node %s lost Redis at %s (%s: %s); reconnecting every %s s",
            self.node_id,
            self.url,
            type(exc).__name__,
            exc,
            RECONNECT_INTERVAL,
        )
        await self._drop_pubsub()
        while not self._closed:
            await asyncio.sleep(RECONNECT_INTERVAL)
            try:
                pubsub = await self._open()
            except (*FAILURES, TimeoutError) as error:
                logger.debug("bus reconnection failed: %s", error)
                continue
            if self._closed:  # aclose() meanwhile, its cancellation lost (_stop)
                await self._close_pubsub(pubsub)
                return
            # Published before subscribing, so a join() meanwhile sends its own SUBSCRIBE
            # (a duplicate is harmless: Redis confirms it again).
            self._pubsub = pubsub
            self._recovering = True
            try:
                # Bounded as a whole, as _open is: each attempt ends, one way or the other.
                async with asyncio.timeout(self.connect_timeout + self.timeout):
                    await pubsub.subscribe(*(self.prefix + channel for channel in self._wanted))
                    await self._beat()
            except (*FAILURES, TimeoutError) as error:
                logger.debug("bus reconnection failed: %s", error)
                self._recovering = False
                await self._drop_pubsub()
                continue
            logger.info("bus of node %s is connected to Redis at %s again", self.node_id, self.url)
            return

    def _check_recovered(self) -> None:
        """After a reconnection, once every channel is subscribed: the callbacks."""
        if self._recovering and self._wanted <= self._live:
            self._recovering = False
            for callback in list(self._callbacks):
                try:
                    callback()
                except Exception:
                    logger.exception("bus on_reconnect callback failed")

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "pong":
            return
        raw = message["channel"]
        name = raw.decode() if isinstance(raw, bytes) else str(raw)
        if not name.startswith(self.prefix):
            return
        channel = name[len(self.prefix) :]
        if kind == "message":
            if channel not in self._wanted or self._handler is None:
                return  # left meanwhile: nothing of it after leave() returned
            try:
                data = orjson.loads(message["data"])
            except orjson.JSONDecodeError:
                logger.warning("dropped a bus message on %s that is not JSON", channel)
                return
            if not isinstance(data, dict):
                logger.warning("dropped a bus message on %s that is not an object", channel)
                return
            try:
                self._handler(channel, data)
            except Exception:
                logger.exception("bus handler failed on a message of %s", channel)
        elif kind == "subscribe":
            if channel in self._wanted:
                self._live.add(channel)
                self._settle(self._joining, channel)
                self._check_recovered()
        elif kind == "unsubscribe":
            self._settle(self._leaving, channel)
