"""A lean HTTP/1.1 client for the Streamable HTTP transport: keep-alive connections on asyncio.

An ``httpx.AsyncClient`` POST costs ~500 us of CPU (its models, httpcore's pool, anyio,
h11), several times what uvicorn spends serving it, and a proxy pays it on every call
(issue 24). This client makes a request on a kept-alive connection and streams its
answer back for a few tens of microseconds:

* one :class:`asyncio.Protocol` per connection; an idle one goes back to the pool for
  the next request (RFC 9112 § 9.3), unless the server closed it meanwhile.
* answers are parsed by httptools (llhttp, uvicorn's parser) when installed
  (``mcpkit[fast]``), else by h11, which httpx depends on: Content-Length, chunked and
  close-delimited bodies alike. Requests always carry Content-Length.
* TLS through an :class:`ssl.SSLContext` made as httpx makes its own (``SSL_CERT_FILE``,
  ``SSL_CERT_DIR``); no proxies, auth flows, redirects or content codings
  (``accept-encoding: identity``): :func:`usable` says when it applies, else the
  transport uses httpx.
* failures are httpx's exception types (``ConnectError``, ``ReadTimeout``,
  ``RemoteProtocolError``...), so the transport handles both clients alike. The caller
  bounds what it reads (``read_body``); a connection stops reading from its socket while
  more than :data:`_HIGH_WATER` bytes wait unread.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import re
import select
import ssl
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Final
from urllib.parse import urlsplit

from ..._extras import require_extra

with require_extra("client", feature="the lean HTTP/1.1 client (mcpkit.client.transports.http11)"):
    import httpx

try:  # the fast parser comes with uvicorn[standard] (mcpkit[fast]); h11 does the same job
    import httptools
except ImportError:  # pragma: no cover - the minimal-install CI legs run on h11
    httptools = None  # type: ignore[assignment]

from ..._version import version
from .http11_codecs import H11Codec, LlhttpCodec

__all__ = ["LeanHTTP", "LeanResponse", "usable"]

_HIGH_WATER: Final = 256 * 1024  # unread bytes at which the socket stops being read
_LOW_WATER: Final = 64 * 1024
# RFC 9110 § 5.1 (field names are tokens) and § 5.5 (no CR, LF or NUL in a value).
_TOKEN: Final = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BAD_VALUE: Final = re.compile(rb"[\r\n\x00]")
_KNOWN_FIELDS: Final = 256  # checked headers remembered per client
# An idle connection is looked at (one select() call) before reuse only once it has been
# idle this long. Servers close idle connections after seconds (uvicorn 5, Node 5, nginx
# 75); a close that comes while the loop runs reaches the protocol at the loop's next poll,
# which a busy client (a proxy: the next call arrives through that poll) makes within
# microseconds. The check is for a loop that stood still meanwhile; it cost a system call
# on every proxied call.
_RECHECK_IDLE: Final = 0.05


def usable(url: str, *, auth: object = None, http_client: object = None) -> bool:
    """May the lean client serve ``url``? Not with an ``auth`` flow or a caller's httpx
    client (both are httpx objects), nor through a proxy set in the environment
    (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, minus ``NO_PROXY``): httpx does those."""
    if auth is not None or http_client is not None:
        return False
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies_environment()
    if parts.scheme in proxies or "all" in proxies:
        return bool(urllib.request.proxy_bypass(parts.hostname))
    return True


class LeanHTTP:
    """A pool of keep-alive HTTP/1.1 connections; :meth:`stream` makes one request.

    ``connect_timeout`` bounds opening a connection (TLS handshake included),
    ``read_timeout`` each wait for the answer's head or its next bytes (None: no bound,
    an SSE stream may idle), ``pool_timeout`` the wait for a free connection when
    ``max_connections`` are busy. At most ``max_idle`` idle connections are kept.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = 30.0,
        read_timeout: float | None = None,
        pool_timeout: float = 30.0,
        max_connections: int = 100,
        max_idle: int = 20,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.pool_timeout = pool_timeout
        self.max_idle = max_idle
        self._ssl = ssl_context
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._live: set[_Connection] = set()
        self._urls: dict[str, _Target] = {}
        self._fields: dict[tuple[str, str], tuple[bytes, bytes]] = {}
        self._closed = False
        #: Connections opened so far (each one a TCP, perhaps TLS, handshake).
        self.connections_opened = 0

    def stream(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> _Exchange:
        """``async with client.stream(...) as response``: the answer's head is in, its body
        streams from ``response.aiter_bytes()``; leaving the block releases the connection
        (kept alive only when the whole answer was read)."""
        target = self._urls.get(url)
        if target is None:
            target = self._urls[url] = _Target(url)
        return _Exchange(self, target, method, content, headers)

    async def aclose(self) -> None:
        self._closed = True
        for conn in list(self._live):
            conn.close()
        self._live.clear()
        self._idle.clear()

    # -- the pool -----------------------------------------------------------------------------
    async def _acquire(self, target: _Target) -> _Connection:
        if self._closed:
            raise httpx.ConnectError("the HTTP client is closed")
        if self._slots.locked():
            try:
                async with asyncio.timeout(self.pool_timeout):
                    await self._slots.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout("no free connection in time") from None
        else:
            await self._slots.acquire()
        idle = self._idle.get(target.origin)
        while idle:
            conn = idle.pop()
            if not conn.closed and (
                conn.released > asyncio.get_running_loop().time() - _RECHECK_IDLE
                or not conn.readable()
            ):
                return conn
            # The server closed it while it was idle (perhaps unseen yet by the loop: an idle
            # connection with something to read has its end to read). Not for reuse.
            conn.close()
            self._live.discard(conn)
        try:
            return await self._connect(target)
        except BaseException:
            self._slots.release()
            raise

    async def _connect(self, target: _Target) -> _Connection:
        loop = asyncio.get_running_loop()
        tls: ssl.SSLContext | None = None
        if target.tls:
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context()  # certifi, SSL_CERT_FILE/DIR as httpx
            tls = self._ssl
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await loop.create_connection(
                    _Connection,
                    target.host,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {target.netloc} timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {target.netloc}: {exc}") from exc
        self.connections_opened += 1
        self._live.add(conn)
        return conn

    def _release(self, target: _Target, conn: _Connection, reusable: bool) -> None:
        self._slots.release()
        if reusable and not conn.closed and not self._closed:
            idle = self._idle.setdefault(target.origin, [])
            if len(idle) < self.max_idle:
                conn.released = asyncio.get_running_loop().time()
                idle.append(conn)
                return
        conn.close()
        self._live.discard(conn)


def _field(name: str, value: str) -> tuple[bytes, bytes]:
    """A header as sent, once checked: no header may split the request (RFC 9112 § 2.2)."""
    try:
        raw_name, raw_value = name.lower().encode("ascii"), value.encode("latin-1")
    except UnicodeEncodeError:
        raise httpx.LocalProtocolError(f"invalid header {name!r}: {value!r}") from None
    if not _TOKEN.fullmatch(raw_name) or _BAD_VALUE.search(raw_value):
        raise httpx.LocalProtocolError(f"invalid header {name!r}: {value!r}")
    return raw_name, raw_value


@functools.cache
def _user_agent() -> bytes:
    return f"mcpkit/{version()}".encode()


class _Target:
    """What a URL gives a request: where to connect, the Host header and the request target."""

    __slots__ = ("host", "host_header", "netloc", "origin", "port", "target", "tls")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise httpx.UnsupportedProtocol(f"cannot make a request to {url!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        self.netloc = parts.netloc.rpartition("@")[2]
        self.host_header = self.netloc.encode("idna")
        self.origin = (parts.scheme, self.host, self.port)
        target = parts.path or "/"
        self.target = (target + ("?" + parts.query if parts.query else "")).encode("ascii")


class _Exchange:
    """One request and its answer, as an async context manager (see :meth:`LeanHTTP.stream`)."""

    __slots__ = ("client", "conn", "content", "headers", "method", "response", "target")

    def __init__(
        self,
        client: LeanHTTP,
        target: _Target,
        method: str,
        content: bytes | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.client = client
        self.target = target
        self.method = method
        self.content = content
        self.headers = headers
        self.conn: _Connection | None = None
        self.response: LeanResponse | None = None

    async def __aenter__(self) -> LeanResponse:
        client, target = self.client, self.target
        fields = [(b"host", target.host_header), (b"accept-encoding", b"identity")]
        agent = True
        if self.headers:
            # The same few headers go on every request: each is checked and encoded once.
            known = client._fields
            for name, value in self.headers.items():
                field = known.get((name, value))
                if field is None:
                    field = _field(name, value)
                    if len(known) >= _KNOWN_FIELDS:
                        known.clear()
                    known[(name, value)] = field
                if field[0] == b"user-agent":
                    agent = False
                fields.append(field)
        if agent:
            fields.append((b"user-agent", _user_agent()))
        if self.content is not None:
            fields.append((b"content-length", str(len(self.content)).encode()))
        conn = self.conn = await client._acquire(target)
        try:
            self.response = await conn.request(
                self.method.encode(), target.target, fields, self.content, client.read_timeout
            )
        except BaseException:
            client._release(target, conn, False)
            self.conn = None
            raise
        return self.response

    async def __aexit__(self, *exc_info: object) -> None:
        conn, response = self.conn, self.response
        if conn is not None and response is not None:
            self.conn = None
            self.client._release(self.target, conn, response.reusable)


class LeanResponse:
    """An answer: status, headers (lower-case names), and the body as it arrives."""

    __slots__ = (
        "_chunks",
        "_conn",
        "_error",
        "_timeout",
        "_unread",
        "_waiter",
        "close_delimited",
        "complete",
        "headers",
        "keep_alive",
        "reason_phrase",
        "status_code",
    )

    def __init__(
        self, conn: _Connection, status: int, reason: str, headers: dict[str, str]
    ) -> None:
        self._conn = conn
        self.status_code = status
        self.reason_phrase = reason
        self.headers = headers
        self.complete = False
        self.keep_alive = False
        self.close_delimited = "content-length" not in headers and (
            "chunked" not in headers.get("transfer-encoding", "").lower()
        )
        self._chunks: collections.deque[bytes] = collections.deque()
        self._unread = 0
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._timeout: float | None = None

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and self._error is None

    def received(self) -> bytes | None:
        """The (unread rest of the) body once all of it has arrived, else None."""
        if not self.complete or self._error is not None:
            return None
        chunks = self._chunks
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._unread = 0
        return data

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive; httpx's errors when the connection fails."""
        chunks = self._chunks
        while True:
            if chunks:
                data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
                chunks.clear()
                self._unread = 0
                self._conn.resume()
                yield data
                continue
            if self._error is not None:
                raise self._error
            if self.complete:
                return
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                if self._timeout is None:
                    await waiter
                else:
                    async with asyncio.timeout(self._timeout):
                        await waiter
            except TimeoutError:
                self._conn.close()
                raise httpx.ReadTimeout("the answer stopped arriving in time") from None
            finally:
                self._waiter = None

    # -- fed by the connection ---------------------------------------------------------------
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _data(self, data: bytes) -> None:
        self._chunks.append(data)
        self._unread += len(data)
        if self._unread > _HIGH_WATER:
            self._conn.pause()
        self._wake()

    def _end(self, keep_alive: bool) -> None:
        self.complete = True
        self.keep_alive = keep_alive
        self._wake()

    def _fail(self, exc: BaseException) -> None:
        if not self.complete and self._error is None:
            self._error = exc
            self._wake()


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one request at a time, its answer fed to a :class:`LeanResponse`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.paused = False
        self.codec: LlhttpCodec | H11Codec = (
            LlhttpCodec(self) if httptools is not None else H11Codec(self)
        )
        self.head: asyncio.Future[LeanResponse] | None = None
        self.response: LeanResponse | None = None
        self.released = 0.0  # the loop's time when it last went back to the pool

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.codec.feed(data)
        except Exception as exc:  # a malformed answer: this connection is done
            self._failed(httpx.RemoteProtocolError(f"malformed HTTP answer: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        response = self.response
        if response is not None and not response.complete and response.close_delimited:
            response._end(False)  # RFC 9112 § 6.3, item 8: the body ends with the connection
            return
        self._failed(
            httpx.RemoteProtocolError(
                "the server closed the connection before answering"
                if response is None
                else "the server closed the connection before the answer ended"
            )
        )

    # -- used by the exchange -----------------------------------------------------------------
    async def request(
        self,
        method: bytes,
        target: bytes,
        fields: list[tuple[bytes, bytes]],
        body: bytes | None,
        timeout: float | None,
    ) -> LeanResponse:
        transport = self.transport
        if transport is None or self.closed:
            raise httpx.RemoteProtocolError("the connection is closed")
        self.response = None
        head = self.head = asyncio.get_running_loop().create_future()
        response: LeanResponse
        transport.write(self.codec.request(method, target, fields, body))
        try:
            if timeout is None:
                response = await head
            else:
                async with asyncio.timeout(timeout):
                    response = await head
        except TimeoutError:
            self.close()
            raise httpx.ReadTimeout("no answer in time") from None
        finally:
            self.head = None
        response._timeout = timeout
        return response

    def readable(self) -> bool:
        """Is there something to read already (on an idle connection: its end)?"""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return False
        ready, _, _ = select.select([sock], [], [], 0)
        return bool(ready)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.close()

    def pause(self) -> None:
        if not self.paused and self.transport is not None and not self.closed:
            self.paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.paused and not self.closed and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    # -- fed by the codec ---------------------------------------------------------------------
    def began(self, status: int, reason: str, raw: list[tuple[bytes, bytes]]) -> None:
        headers: dict[str, str] = {}
        for name, value in raw:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        response = self.response = LeanResponse(self, status, reason, headers)
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) <= _HIGH_WATER:
            # A small body of known length (a JSON answer): the request is woken once, with
            # all of it (uvicorn writes the head and the body apart), not for the head alone.
            return
        self._answer(response)

    def body(self, data: bytes) -> None:
        if self.response is not None:
            self.response._data(data)

    def ended(self, keep_alive: bool) -> None:
        response = self.response
        if response is not None:
            response._end(keep_alive)
            self._answer(response)

    def _answer(self, response: LeanResponse) -> None:
        head = self.head
        if head is not None and not head.done():
            head.set_result(response)

    def _failed(self, exc: BaseException) -> None:
        head = self.head
        if head is not None and not head.done():
            head.set_exception(exc)
        elif self.response is not None:
            self.response._fail(exc)
