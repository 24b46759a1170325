"""Connection limits for the embedded uvicorn: a request-head deadline and a connection cap.

uvicorn (0.30 … 0.54) has no deadline for reading a request head: a fresh
connection that sends nothing, or a head one byte at a time (slowloris), is
kept forever, and every such connection holds a file descriptor. Its
``limit_concurrency`` only answers 503 once a request head is complete, so
idle connections still pile up. httptools also accepts headers of any size.

:func:`limited_protocol` wraps uvicorn's HTTP protocol class (h11 or
httptools, as uvicorn chose it) with three rules, enforced per connection:

* the head of each request (request line and headers) must arrive within
  ``header_timeout`` seconds of the connection opening or of the previous
  response ending; otherwise the connection is closed, with a 408 when part
  of a head had arrived (RFC 9110 §15.5.9) and silently when it was idle;
* at most ``max_header_size`` bytes of head: more gets 431 (RFC 6585 §5) and
  the connection is closed. The bytes are counted before the parser sees them,
  up to the blank line that ends the head (RFC 9112 §2.1; empty lines before
  the request line are not counted, §2.2), so a head that arrives in one read
  is measured like one that arrives in pieces: the parsers themselves accept a
  complete head of any size (h11 only bounds an *incomplete* one, by its
  ``max_incomplete_event_size``, which :mod:`.serve` raises to this limit so
  both stacks answer alike). A pipelined request's head is parsed from the
  parser's buffer, out of sight here: the apps check the size of every
  request's headers as well (:class:`~.security.RequestGuard`);
* at most ``max_connections`` open connections: one more is answered 503
  with ``Connection: close`` and closed as soon as its request arrives (or
  after a second), so it holds a descriptor only briefly.

Bodies are the app's business: the mcpkit apps give a body ``body_timeout``
seconds (408). Only the hooks every uvicorn HTTP protocol has are used
(``connection_made``, ``data_received``, ``on_response_complete``,
``connection_lost``, the ``cycle`` of the current request and the shared
``connections`` set); an unknown protocol class is refused at start.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, Final, cast

from ..errors import ConfigurationError

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_HEADER_SIZE",
    "limited_protocol",
]

DEFAULT_HEADER_TIMEOUT: Final = 10.0
DEFAULT_MAX_CONNECTIONS: Final = 1000
DEFAULT_MAX_HEADER_SIZE: Final = 64 * 1024
_REJECT_GRACE: Final = 1.0  # how long a refused connection may take to send its request
# The end of a head: an empty line, CRLF or (leniently, RFC 9112 §2.2) a bare LF.
_HEAD_END: Final = re.compile(rb"\n\r?\n")


def _response(status: bytes, text: bytes) -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"connection: close\r\ncontent-length: " + str(len(text)).encode() + b"\r\n\r\n" + text
    )


_TIMEOUT: Final = _response(
    b"408 Request Timeout", b"Request Timeout: the request head was too slow"
)
_TOO_LARGE: Final = _response(
    b"431 Request Header Fields Too Large", b"Request Header Fields Too Large"
)
_BUSY: Final = _response(
    b"503 Service Unavailable", b"Service Unavailable: too many connections, retry later"
)


class _Limits:
    """Mixed in before a uvicorn HTTP protocol class (see the module docstring)."""

    # Set on the generated subclass.
    mcp_header_timeout: float | None = None
    mcp_max_connections: int | None = None
    mcp_max_header_size: int | None = None

    # From the uvicorn protocol.
    connections: set[Any]
    cycle: Any
    transport: asyncio.Transport

    _mcp_timer: asyncio.TimerHandle | None = None
    _mcp_seen: Any = None
    _mcp_waiting = False  # for a request head (from the connection or last response on)
    _mcp_head_bytes = 0
    _mcp_tail = b""  # the head's last bytes, to find its end across reads
    _mcp_refused = False  # over the connection cap: super() never saw the connection
    _mcp_draining = False  # answered 431: nothing more is read until the close

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        limit = self.mcp_max_connections
        if limit is not None and len(self.connections) >= limit:
            # Answer now, close once the request has been read (closing with unread data
            # would reset the connection and could lose the 503).
            self._mcp_refused = True
            self.transport = transport  # type: ignore[assignment]
            self.transport.write(_BUSY)
            loop = asyncio.get_running_loop()
            self._mcp_timer = loop.call_later(_REJECT_GRACE, transport.close)
            return
        super().connection_made(transport)  # type: ignore[misc]
        self._mcp_arm()

    def data_received(self, data: bytes) -> None:
        if self._mcp_refused:
            self.transport.close()
            return
        if self._mcp_draining:
            return
        if not self._mcp_waiting:
            super().data_received(data)  # type: ignore[misc]
            return
        limit = self.mcp_max_header_size
        if limit is not None and self._mcp_head_size(data) > limit:
            self._mcp_refuse_head()
            return
        super().data_received(data)  # type: ignore[misc]
        if self.transport.is_closing():
            return
        if self.cycle is not self._mcp_seen:  # a request head is complete
            self._mcp_seen = self.cycle
            self._mcp_disarm()

    def _mcp_head_size(self, data: bytes) -> int:
        """The size of the head being read once ``data`` is added: up to its end if ``data``
        holds the end, else everything so far."""
        if not self._mcp_head_bytes:
            data = data.lstrip(b"\r\n")  # blank lines before a request line (RFC 9112 §2.2)
            if not data:
                return 0
        tail = self._mcp_tail
        end = _HEAD_END.search(tail + data[:2])  # an end that straddles two reads
        if end is None:
            end = _HEAD_END.search(data)
            tail = b""
        size = self._mcp_head_bytes + (len(data) if end is None else end.end() - len(tail))
        self._mcp_head_bytes = size
        self._mcp_tail = data[-2:]
        return size

    def _mcp_refuse_head(self) -> None:
        # 431, then no more reading (a sender that goes on is stalled by TCP, not read); the
        # close waits a moment so that a client still sending can read the answer first
        # (closing with unread data resets the connection, and the answer may be lost).
        self._mcp_disarm()
        self._mcp_draining = True
        transport = self.transport
        transport.write(_TOO_LARGE)
        if transport.can_write_eof():
            transport.write_eof()
        transport.pause_reading()
        loop = asyncio.get_running_loop()
        self._mcp_timer = loop.call_later(_REJECT_GRACE, transport.close)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if self.transport.is_closing():
            return
        self._mcp_seen = self.cycle
        if self.cycle is None or self.cycle.response_complete:  # no pipelined request running
            self._mcp_arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._mcp_disarm()
        self._mcp_draining = False
        if self._mcp_refused:
            return
        super().connection_lost(exc)  # type: ignore[misc]

    def pause_writing(self) -> None:
        if not self._mcp_refused:
            super().pause_writing()  # type: ignore[misc]

    def resume_writing(self) -> None:
        if not self._mcp_refused:
            super().resume_writing()  # type: ignore[misc]

    def _mcp_arm(self) -> None:
        self._mcp_disarm()
        self._mcp_waiting = True
        self._mcp_head_bytes = 0
        self._mcp_tail = b""
        if self.mcp_header_timeout is not None:
            loop = asyncio.get_running_loop()
            self._mcp_timer = loop.call_later(self.mcp_header_timeout, self._mcp_expired)

    def _mcp_disarm(self) -> None:
        self._mcp_waiting = False
        if self._mcp_timer is not None:
            self._mcp_timer.cancel()
            self._mcp_timer = None

    def _mcp_expired(self) -> None:
        self._mcp_timer = None
        transport = self.transport
        upgraded = transport.get_protocol() is not cast(asyncio.BaseProtocol, self)
        if transport.is_closing() or upgraded:  # closed, or handed to a WebSocket protocol
            return
        if self._mcp_head_bytes:
            transport.write(_TIMEOUT)
        transport.close()


_HOOKS: Final = ("connection_made", "data_received", "on_response_complete", "connection_lost")


def limited_protocol(
    base: type[asyncio.Protocol],
    *,
    header_timeout: float | None,
    max_connections: int | None,
    max_header_size: int | None,
) -> type[asyncio.Protocol]:
    """``base`` (a uvicorn HTTP protocol class) with the limits of this module."""
    if not all(callable(getattr(base, hook, None)) for hook in _HOOKS):
        raise ConfigurationError(
            f"header_timeout, max_connections and max_header_size need uvicorn's h11 or "
            f"httptools protocol, not {base.__name__}; set them to None to use it"
        )
    attributes = {
        "mcp_header_timeout": header_timeout,
        "mcp_max_connections": max_connections,
        "mcp_max_header_size": max_header_size,
    }
    limited: type[asyncio.Protocol] = type(f"Limited{base.__name__}", (_Limits, base), attributes)
    return limited
