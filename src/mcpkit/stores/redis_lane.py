"""The hot-path lane to Redis: one auto-pipelined RESP2 connection (internal to mcpkit.stores).

Design scale-out.md § 11.4: redis-py's asyncio client spends ~50-75 us of the
server's CPU per command (pool checkout and checkin, the retry wrapper, a
timeout per read, packing), more than the rest of a stateful SSE ``tools/call``.
The one command such a call makes, the ``XADD`` of its event, goes through a
:class:`RedisLane` instead: one connection per store (and per event loop); every
command issued during one loop turn leaves in one ``transport.write``
(auto-pipelining: Redis answers in order, so replies are matched FIFO to the
waiting futures); the replies are parsed here (RESP2: simple strings, errors,
integers, bulk strings, arrays, nil), across partial reads.

Faults, as the store's: no retry loop, no backoff. Opening the connection
(``AUTH`` and ``SELECT`` pipelined behind it) is bounded by ``connect_timeout``;
a reply not received within ``timeout`` fails its command and drops the
connection (FIFO matching cannot skip a reply), as does a lost connection:
every pending command then fails with :class:`~mcpkit.errors.StoreUnavailable`,
and the next command opens a new connection. An error reply fails only its
own command (``StoreUnavailable`` too, as redis-py's ``ResponseError`` is for
the store). Imports no ``redis``: :func:`mcpkit.stores.redis_connection.lane_for`
reads the address off the store's client.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Final

from ..errors import StoreUnavailable

__all__ = ["LaneAddress", "RedisLane"]

Arg = bytes | str | int


@dataclass(frozen=True, slots=True)
class LaneAddress:
    """Where and how to open the lane: a TCP ``host``/``port`` (TLS when ``ssl`` is
    given) or a Unix socket ``path``; ``AUTH`` when ``password`` is set; ``SELECT db``."""

    host: str = "localhost"
    port: int = 6379
    path: str | None = None
    db: int = 0
    username: str | None = None
    password: str | None = None
    ssl: ssl.SSLContext | None = None


class _ErrorReply:
    """An error reply (``-ERR ...``), as a value: inside an array it is an element."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_CRLF: Final = b"\r\n"


def _parse(buf: bytearray, pos: int) -> tuple[Any, int]:
    """One reply from ``buf[pos:]``: ``(value, next position)``, or ``(None, -1)`` when
    the reply is not complete yet (it is parsed again, whole, when more data came)."""
    end = buf.find(_CRLF, pos)
    if end < 0:
        return None, -1
    kind = buf[pos]
    if kind == 36:  # "$" bulk string
        size = int(buf[pos + 1 : end])
        if size < 0:
            return None, end + 2  # nil
        start = end + 2
        stop = start + size
        if len(buf) < stop + 2:
            return None, -1
        return bytes(buf[start:stop]), stop + 2
    if kind == 58:  # ":" integer
        return int(buf[pos + 1 : end]), end + 2
    if kind == 43:  # "+" simple string
        return bytes(buf[pos + 1 : end]), end + 2
    if kind == 45:  # "-" error
        return _ErrorReply(buf[pos + 1 : end].decode(errors="replace")), end + 2
    if kind == 42:  # "*" array
        count = int(buf[pos + 1 : end])
        if count < 0:
            return None, end + 2  # nil array
        items: list[Any] = []
        at = end + 2
        for _ in range(count):
            item, at = _parse(buf, at)
            if at < 0:
                return None, -1
            items.append(item)
        return items, at
    raise ValueError(f"not a RESP2 reply: {bytes(buf[pos : pos + 16])!r}")


def _pack(args: tuple[Arg, ...]) -> bytes:
    """A command as a RESP array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            arg = arg.encode()
        elif isinstance(arg, int):
            arg = b"%d" % arg
        parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
    return b"".join(parts)


class _Connection(asyncio.Protocol):
    """One connection: commands out in one write per loop turn, replies in FIFO order."""

    def __init__(self, lane: RedisLane, loop: asyncio.AbstractEventLoop) -> None:
        self.lane = lane
        self.loop = loop
        self.transport: Any = None  # uvloop's transports are not asyncio.Transport subclasses
        self.pending: deque[tuple[asyncio.Future[Any], float]] = deque()
        self.out: list[bytes] = []
        self.buf = bytearray()
        self.lost = False
        self.timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(exc or ConnectionResetError("connection closed by the server"))

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos = 0
        pending = self.pending
        try:
            while pos < len(buf):
                value, at = _parse(buf, pos)
                if at < 0:
                    break
                pos = at
                if not pending:
                    raise ValueError("a reply to no command")
                future, _ = pending.popleft()
                if future.done():
                    continue  # its caller was cancelled
                if type(value) is _ErrorReply:
                    future.set_exception(self.lane.error(value.text))
                else:
                    future.set_result(value)
        except ValueError as exc:  # not RESP2: the stream cannot be resynchronised
            self.fail(exc)
            return
        if pos:
            del buf[:pos]

    # -- commands

    def send(self, args: tuple[Arg, ...]) -> asyncio.Future[Any]:
        loop = self.loop
        future = loop.create_future()
        if self.lost:
            future.set_exception(self.lane.unavailable(ConnectionResetError("connection lost")))
            return future
        if not self.out:
            loop.call_soon(self.flush)  # the rest of this turn's commands join this write
        self.out.append(_pack(args))
        deadline = loop.time() + self.lane.timeout
        self.pending.append((future, deadline))
        if self.timer is None:
            self.timer = loop.call_at(deadline, self.check)
        return future

    def flush(self) -> None:
        if self.out and not self.lost:
            self.transport.write(b"".join(self.out))
        self.out.clear()

    def check(self) -> None:
        """The timer on the oldest pending command (one timer per connection, not one per
        command): past its deadline the connection goes, and every pending command with it."""
        self.timer = None
        if not self.pending or self.lost:
            return
        deadline = self.pending[0][1]
        if deadline <= self.loop.time():
            self.fail(TimeoutError(f"no reply within {self.lane.timeout} s"))
        else:
            self.timer = self.loop.call_at(deadline, self.check)

    def fail(self, exc: BaseException) -> None:
        """Drop the connection; every pending command fails with StoreUnavailable."""
        if self.lost:
            return
        self.lost = True
        self.out.clear()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.transport is not None:
            self.transport.abort()
        pending, self.pending = self.pending, deque()
        for future, _ in pending:
            if not future.done():
                future.set_exception(self.lane.unavailable(exc))


class RedisLane:
    """One auto-pipelined connection to the store's Redis (see the module docstring).

    :meth:`call` sends one command and returns its reply (``bytes`` for bulk and
    simple strings, ``int``, ``list``, None for nil); :meth:`call_many` sends
    several in the same write and returns their replies. Both raise
    :class:`~mcpkit.errors.StoreUnavailable` naming ``where``.
    """

    __slots__ = ("_conn", "_opening", "address", "connect_timeout", "timeout", "where")

    def __init__(
        self, address: LaneAddress, where: str, *, connect_timeout: float, timeout: float
    ) -> None:
        self.address = address
        self.where = where
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._conn: _Connection | None = None
        self._opening: asyncio.Task[_Connection] | None = None

    def unavailable(self, exc: BaseException) -> StoreUnavailable:
        error = StoreUnavailable(
            f"Redis at {self.where} is unavailable: {type(exc).__name__}: {exc}"
        )
        error.__cause__ = exc
        return error

    def error(self, text: str) -> StoreUnavailable:
        """An error reply, in the shape of the store's other failures."""
        return StoreUnavailable(f"Redis at {self.where} is unavailable: ResponseError: {text}")

    def call(self, *args: Arg) -> Awaitable[Any]:
        """Send one command (in this loop turn's write); await its reply."""
        conn = self._conn
        if conn is None or conn.lost or conn.loop is not asyncio.get_running_loop():
            return self._call_opening(args)
        return conn.send(args)  # the future itself: no coroutine frame on the hot path

    async def _call_opening(self, args: tuple[Arg, ...]) -> Any:
        conn = await self._connection()
        return await conn.send(args)

    async def call_many(self, *commands: tuple[Arg, ...]) -> list[Any]:
        conn = self._conn
        if conn is None or conn.lost or conn.loop is not asyncio.get_running_loop():
            conn = await self._connection()
        futures = [conn.send(args) for args in commands]
        replies = await asyncio.gather(*futures, return_exceptions=True)
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
        return replies

    async def _connection(self) -> _Connection:
        loop = asyncio.get_running_loop()
        opening = self._opening
        if opening is None or opening.done() or opening.get_loop() is not loop:
            old, self._conn = self._conn, None
            if old is not None and old.loop is not loop:
                _abandon(old)
            # One opening shared by every command issued meanwhile; shielded so that a
            # cancelled caller does not cancel it for the others.
            opening = self._opening = loop.create_task(self._open(loop))
            opening.add_done_callback(_retrieve)
        try:
            return await asyncio.shield(opening)
        finally:
            if opening.done() and self._opening is opening:
                self._opening = None

    async def _open(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        address = self.address
        conn: _Connection | None = None

        def made() -> _Connection:
            return _Connection(self, loop)

        try:
            async with asyncio.timeout(self.connect_timeout):
                if address.path is not None:
                    _, conn = await loop.create_unix_connection(made, address.path)
                else:
                    _, conn = await loop.create_connection(
                        made,
                        address.host,
                        address.port,
                        ssl=address.ssl,
                        server_hostname=address.host if address.ssl is not None else None,
                    )
                hello: list[tuple[Arg, ...]] = []
                if address.password is not None:
                    if address.username:
                        hello.append((b"AUTH", address.username, address.password))
                    else:
                        hello.append((b"AUTH", address.password))
                if address.db:
                    hello.append((b"SELECT", address.db))
                for future in [conn.send(args) for args in hello]:
                    await future
        except (StoreUnavailable, asyncio.CancelledError):
            if conn is not None:
                conn.fail(ConnectionAbortedError("not opened"))
            raise
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            if conn is not None:
                conn.fail(exc)
            if isinstance(exc, TimeoutError):
                exc = TimeoutError(f"no connection within {self.connect_timeout} s")
            raise self.unavailable(exc) from None
        self._conn = conn
        return conn

    async def aclose(self) -> None:
        """Drop the connection (pending commands fail); a later command opens a new one."""
        opening, self._opening = self._opening, None
        if opening is not None and not opening.done():
            opening.cancel()
        conn, self._conn = self._conn, None
        if conn is not None:
            if conn.loop is asyncio.get_running_loop():
                conn.fail(ConnectionAbortedError("the store was closed"))
            else:
                _abandon(conn)


def _retrieve(task: asyncio.Task[_Connection]) -> None:
    """Mark an opening's failure seen: its callers may all have been cancelled."""
    if not task.cancelled():
        task.exception()


def _abandon(conn: _Connection) -> None:
    """Drop a connection of another event loop (a store used from a new loop)."""
    if conn.loop.is_closed():
        conn.lost = True
        return
    try:
        conn.loop.call_soon_threadsafe(conn.fail, ConnectionAbortedError("another event loop"))
    except RuntimeError:
        conn.lost = True
