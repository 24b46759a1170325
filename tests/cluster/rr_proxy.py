"""A round-robin HTTP/1.1 reverse proxy for the multi-node tests (asyncio, stdlib only).

Each *request* goes to the next live backend in turn, over a new upstream connection
(``Connection: close``), so a client's keep-alive connection cannot pin it to one node:
two consecutive requests of one session always land on different nodes, which a real
load balancer only makes likely. Design: docs/design/scale-out.md § 15.1.

* Request bodies (``Content-Length`` or chunked) and response bodies (``Content-Length``,
  chunked, or delimited by the upstream closing) are copied as they arrive, each piece
  flushed at once: an SSE event reaches the client when the node sends it.
* Headers pass unchanged (``Mcp-Session-Id``, ``Last-Event-ID``, ``MCP-Protocol-Version``,
  ``Authorization``...) except the hop-by-hop ones (RFC 9110 § 7.6.1) and ``Host``, which
  names the backend (what a proxy with ``proxy_set_header Host $proxy_host`` sends).
* A backend refusing the connection is skipped (the next one is tried); when none
  accepts, the client gets ``502``. A backend that dies mid-response has its client
  connection aborted, not ended cleanly, so the client sees a cut stream (and resumes).
* When the client goes away while a response is streaming, the upstream connection is
  closed at once, so the node sees its SSE stream dropped as it would without a proxy.
* ``log`` records one :class:`Record` per request, in the order the requests arrived
  (each took its turn then); its status is filled in when the response head arrives (a long SSE stream
  shows its 200 at once), so tests assert which node served what.

``hold(matching)`` keeps the requests whose :class:`Record` ``matching`` accepts
waiting, before any backend is chosen, until ``release()``. ``pin(i)`` sends everything to backend ``i``; ``sticky()`` sends each request carrying an
``Mcp-Session-Id`` to the backend whose response issued that id (session affinity, what
the cluster needs without shared sessions); ``unpin()`` restores round robin; ``turn_to(i)`` makes backend ``i`` the next in turn.

Run it in the test's event loop (``async with RoundRobinProxy(urls) as proxy``) or, for
blocking clients, in a thread of its own (``with proxy_in_thread(urls) as proxy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT = 2.0
READ_SIZE = 65536
# Hop-by-hop headers (RFC 9110 § 7.6.1): about one connection, never forwarded (and Host,
# written for the backend). The framing (Content-Length / Transfer-Encoding) is kept:
# bodies are copied with it.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "host"}
)
_RPC_METHOD = re.compile(rb'"method"\s*:\s*"([^"]{1,200})"')
_SNIFF = 64 * 1024  # bytes of a request body searched for its JSON-RPC method


@dataclass
class Record:
    """One proxied request: what was asked, of which backend, and the status it got."""

    method: str  # HTTP method
    path: str
    session_id: str | None  # the request's Mcp-Session-Id header
    backend: int | None  # index in the proxy's backends; None when none accepted (502)
    status: int  # 0 until the response head arrives (or when the backend never answered)
    rpc: str | None = None  # the JSON-RPC method in the body (first one of a batch), if any
    last_event_id: str | None = None  # the request's Last-Event-ID header (a resumption)


class _Closed(Exception):
    """The peer closed before a complete message."""


class _Bad(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _Inbound:
    """A reader with a buffer of our own, so bytes read while watching for EOF are kept."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.buf = bytearray()

    async def fill(self) -> bool:
        chunk = await self.reader.read(READ_SIZE)
        if not chunk:
            return False
        self.buf += chunk
        return True

    async def until(self, sep: bytes, limit: int) -> bytes | None:
        """Bytes up to and including ``sep``; None at EOF before any byte."""
        while True:
            at = self.buf.find(sep)
            if at >= 0:
                out = bytes(self.buf[: at + len(sep)])
                del self.buf[: at + len(sep)]
                return out
            if len(self.buf) > limit:
                raise _Bad(431, "head too large")
            if not await self.fill():
                if self.buf:
                    raise _Closed
                return None

    async def some(self, n: int) -> bytes:
        """Up to ``n`` bytes (at least one); ``_Closed`` at EOF."""
        if not self.buf and not await self.fill():
            raise _Closed
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


class _Head:
    def __init__(self, raw: bytes) -> None:
        lines = raw.decode("latin-1").split("\r\n")
        self.start = lines[0]
        self.headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise _Bad(400, f"malformed header line {line!r}")
            self.headers.append((name, value.strip()))

    def get(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def chunked(self) -> bool:
        te = self.get("transfer-encoding")
        return te is not None and te.lower().split(",")[-1].strip() == "chunked"

    def length(self) -> int | None:
        value = self.get("content-length")
        if value is None:
            return None
        if not value.isdigit():
            raise _Bad(400, f"bad Content-Length {value!r}")
        return int(value)

    def forwarded(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.headers if k.lower() not in HOP_BY_HOP]


def _encode(start: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [start, *(f"{k}: {v}" for k, v in headers), "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _copy_body(
    src: _Inbound,
    dst: asyncio.StreamWriter,
    head: _Head,
    *,
    until_eof: bool,
    sniff: bytearray | None = None,
) -> None:
    """Copy one framed body from ``src`` to ``dst``, flushing each piece as it arrives.

    ``until_eof``: with neither Content-Length nor chunked, the body lasts until the
    sender closes (a response; RFC 9112 § 6.3 rule 8). A request has no body then.
    """

    async def piece(data: bytes) -> None:
        if sniff is not None and len(sniff) < _SNIFF:
            sniff.extend(data[: _SNIFF - len(sniff)])
        dst.write(data)
        await dst.drain()

    if head.chunked():
        while True:
            line = await src.until(b"\r\n", MAX_HEAD)
            if line is None:
                raise _Closed
            await piece(line)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise _Bad(400, f"bad chunk size line {line!r}") from None
            if size == 0:
                while True:  # trailers, up to the empty line
                    trailer = await src.until(b"\r\n", MAX_HEAD)
                    if trailer is None:
                        raise _Closed
                    await piece(trailer)
                    if trailer == b"\r\n":
                        return
            left = size + 2  # the chunk and its CRLF
            while left:
                data = await src.some(left)
                left -= len(data)
                await piece(data)
    length = head.length()
    if length is not None:
        while length:
            data = await src.some(min(length, READ_SIZE))
            length -= len(data)
            await piece(data)
        return
    if until_eof:
        while True:
            try:
                data = await src.some(READ_SIZE)
            except _Closed:
                return
            await piece(data)


def _backend(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        raise ValueError(f"a backend is http://host:port, not {url!r}")
    return parts.hostname, parts.port


class RoundRobinProxy:
    """``async with RoundRobinProxy(["http://127.0.0.1:8001", ...]) as proxy``: see the module.

    ``backends`` are base URLs (a path is ignored: the request's path is kept).
    """

    def __init__(self, backends: Sequence[str], *, host: str = "127.0.0.1", port: int = 0) -> None:
        if not backends:
            raise ValueError("at least one backend")
        self.backends: list[tuple[str, int]] = [_backend(u) for u in backends]
        self.log: list[Record] = []
        self.disconnects = 0  # client disconnects propagated to a backend mid-response
        self._host = host
        self._port = port
        self._next = 0
        self._pinned: int | None = None
        self._sticky = False
        self._owner: dict[str, int] = {}  # session id -> backend that issued it
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._held: tuple[Callable[[Record], bool], asyncio.Event] | None = None

    # -- control ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (append the MCP path)."""
        assert self._server is not None, "the proxy is not running"
        port = self._server.sockets[0].getsockname()[1]
        return f"http://{self._host}:{port}"

    def pin(self, index: int) -> None:
        """Send every request to backend ``index`` (502 while it is down)."""
        if not 0 <= index < len(self.backends):
            raise IndexError(index)
        self._pinned, self._sticky = index, False

    def sticky(self) -> None:
        """Session affinity: a request with an Mcp-Session-Id goes where that id was issued."""
        self._pinned, self._sticky = None, True

    def unpin(self) -> None:
        """Back to plain round robin."""
        self._pinned, self._sticky = None, False

    def turn_to(self, index: int) -> None:
        """The next request goes to backend ``index`` (then round robin goes on from there):
        a test arranges which node serves which of its next requests."""
        if not 0 <= index < len(self.backends):
            raise IndexError(index)
        self._next = index

    def hold(self, matching: Callable[[Record], bool]) -> None:
        """Keep the requests ``matching`` accepts waiting (logged, no backend chosen yet)
        until :meth:`release`: a test orders what a client does on its own."""
        self._held = (matching, asyncio.Event())

    def release(self) -> None:
        """Let the held requests go on (each then takes its turn)."""
        held, self._held = self._held, None
        if held is not None:
            held[1].set()

    def set_backend(self, index: int, url: str) -> None:
        """Point slot ``index`` at another address (a node restarted on a new port)."""
        self.backends[index] = _backend(url)

    def served(self, session_id: str | None = None) -> list[int | None]:
        """The backend of each logged request (of one session, when given), in order."""
        return [r.backend for r in self.log if session_id is None or r.session_id == session_id]

    async def start(self) -> RoundRobinProxy:
        self._server = await asyncio.start_server(
            self._client, self._host, self._port, limit=MAX_HEAD
        )
        return self

    async def aclose(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)
        if server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5)

    async def __aenter__(self) -> RoundRobinProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- serving ---------------------------------------------------------------------------
    def _order(self, session_id: str | None) -> list[int]:
        """Backends to try, in order, for the next request (taking its turn at once, so
        that concurrent requests get different backends)."""
        if self._pinned is not None:
            return [self._pinned]
        if self._sticky and session_id is not None and session_id in self._owner:
            return [self._owner[session_id]]
        n = len(self.backends)
        first, self._next = self._next, (self._next + 1) % n
        return [(first + k) % n for k in range(n)]

    async def _connect(
        self, record: Record
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        order = self._order(record.session_id)
        for index in order:
            host, port = self.backends[index]
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port, limit=MAX_HEAD), CONNECT_TIMEOUT
                )
            except (OSError, TimeoutError):
                continue  # refused (a dead node) or unreachable: the next one
            if index != order[0]:  # dead ones were skipped: the turn goes on after this one
                self._next = (index + 1) % len(self.backends)
            record.backend = index
            return reader, writer
        return None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        inbound = _Inbound(reader)
        try:
            while await self._one(inbound, writer):
                pass
        except (_Closed, OSError, asyncio.CancelledError):
            writer.transport.abort()
        except _Bad as bad:
            with contextlib.suppress(OSError):
                writer.write(_plain(bad.status, bad.reason))
                await writer.drain()
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _one(self, inbound: _Inbound, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; True when the client connection may carry another."""
        raw = await inbound.until(b"\r\n\r\n", MAX_HEAD)
        if raw is None:
            return False  # the client closed between requests
        head = _Head(raw)
        parts = head.start.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Bad(400, f"bad request line {head.start!r}")
        method, target, version = parts
        session_id = head.get("mcp-session-id")
        keep = version == "HTTP/1.1" and (head.get("connection") or "").lower() != "close"
        record = Record(method, target, session_id, None, 0)
        record.last_event_id = head.get("last-event-id")
        self.log.append(record)  # now: the log is in the order requests were received
        held = self._held
        if held is not None and held[0](record):
            await held[1].wait()
        connected = await self._connect(record)
        if connected is None:
            record.status = 502
            # The body is not read: close the connection after the answer.
            writer.write(_plain(502, "no backend accepted the connection"))
            await writer.drain()
            return False
        up_reader, up_writer = connected
        assert record.backend is not None
        host, port = self.backends[record.backend]
        request = _Request(head, record, keep, f"{host}:{port}")
        try:
            return await self._relay(inbound, writer, request, _Inbound(up_reader), up_writer)
        finally:
            up_writer.transport.abort()

    async def _relay(
        self,
        inbound: _Inbound,
        writer: asyncio.StreamWriter,
        request: _Request,
        upstream: _Inbound,
        up_writer: asyncio.StreamWriter,
    ) -> bool:
        head = request.head
        headers = [("Host", request.netloc), *head.forwarded(), ("Connection", "close")]
        up_writer.write(_encode(head.start, headers))
        sniff = bytearray()
        with contextlib.suppress(OSError):  # a node may answer (and close) before the body
            await _copy_body(inbound, up_writer, head, until_eof=False, sniff=sniff)
        found = _RPC_METHOD.search(sniff)
        record = request.record
        record.rpc = found.group(1).decode() if found else None
        # Wait for the answer's head while watching the client: one that leaves before the
        # node answers (a cancelled call whose answer is one JSON body, not a stream) makes
        # the finally of _one abort the upstream connection, so the node sees the
        # disconnect, as behind a load balancer that does not ignore client aborts.
        heading = asyncio.ensure_future(_answer_head(upstream, writer))
        watch = asyncio.ensure_future(_watch(inbound))
        try:
            await asyncio.wait({heading, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (heading, watch):
                task.cancel()
            await asyncio.gather(heading, watch, return_exceptions=True)
        if not heading.done() or heading.cancelled():
            self.disconnects += 1
            raise _Closed
        answer, status = heading.result()
        record.status = status
        issued = answer.get("mcp-session-id")
        if issued is not None and record.backend is not None:
            self._owner[issued] = record.backend
        bodyless = record.method == "HEAD" or status in (204, 304)
        keep = request.keep and (bodyless or answer.chunked() or answer.length() is not None)
        out = answer.forwarded() if keep else [*answer.forwarded(), ("Connection", "close")]
        writer.write(_encode(answer.start, out))
        await writer.drain()
        if bodyless:
            return keep
        # Copy the body while watching the client: its EOF (it left) ends the copy and,
        # through the finally of _one, aborts the upstream connection.
        copy = asyncio.ensure_future(_copy_body(upstream, writer, answer, until_eof=True))
        watch = asyncio.ensure_future(_watch(inbound))
        try:
            await asyncio.wait({copy, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (copy, watch):
                task.cancel()
            await asyncio.gather(copy, watch, return_exceptions=True)
        client_left = watch.done() and not watch.cancelled() and watch.result() is False
        if copy.done() and not copy.cancelled() and copy.exception() is None:
            return keep and not client_left  # the whole body went out: close gracefully
        if client_left:
            self.disconnects += 1
        # The client left, or the node died mid-body (or sent a malformed one): abort the
        # client connection, so a cut stream never looks like a complete one.
        raise _Closed


async def _answer_head(upstream: _Inbound, writer: asyncio.StreamWriter) -> tuple[_Head, int]:
    """The final response head from the node (interim 1xx heads are passed on)."""
    while True:
        raw = await upstream.until(b"\r\n\r\n", MAX_HEAD)
        if raw is None:
            raise _Closed  # the node closed without answering: cut the client too
        answer = _Head(raw)
        try:
            status = int(answer.start.split(" ")[1])
        except (IndexError, ValueError):
            raise _Closed from None
        if 100 <= status < 200 and status != 101:  # interim: pass on, read the final one
            writer.write(raw)
            await writer.drain()
            continue
        return answer, status


class _Request(NamedTuple):
    head: _Head
    record: Record
    keep: bool  # the client's connection may carry another request
    netloc: str  # the backend's, for the Host header


async def _watch(inbound: _Inbound) -> bool:
    """Return False when the client closes its side; bytes it sends meanwhile are kept."""
    while len(inbound.buf) <= MAX_HEAD:
        if not await inbound.fill():
            return False
    await asyncio.Event().wait()  # a pipelining client: stop watching, wait to be cancelled
    return True


def _plain(status: int, text: str) -> bytes:
    body = (text + "\n").encode()
    reason = {400: "Bad Request", 431: "Request Header Fields Too Large"}.get(status, "Bad Gateway")
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


@contextlib.contextmanager
def proxy_in_thread(backends: Sequence[str]) -> Iterator[RoundRobinProxy]:
    """The proxy on an event loop of its own, in a daemon thread (for blocking clients).

    ``pin``/``unpin``/``sticky`` may be called from the test's thread (plain attribute
    writes); ``log`` is appended to by the proxy's thread.
    """
    loop = asyncio.new_event_loop()
    proxy = RoundRobinProxy(backends)
    thread = threading.Thread(target=loop.run_forever, name="rr-proxy", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(10)
        yield proxy
    finally:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(proxy.aclose(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
