"""The lean HTTP/1.1 client's two answer parsers: httptools' llhttp, else h11.

Each writes a request's bytes and feeds what the socket reads, in any pieces, to a
:class:`Receiver` (the connection): the answer's head, its body as it arrives, its end.
httptools comes with ``mcpkit[fast]`` (uvicorn's parser); h11, which httpx depends on,
does the same job in pure Python (the minimal-install CI legs run on it).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..._extras import require_extra

with require_extra("client", feature="the lean HTTP/1.1 client (mcpkit.client.transports.http11)"):
    import h11

try:
    import httptools
except ImportError:  # pragma: no cover - the minimal-install CI legs run on h11
    httptools = None  # type: ignore[assignment]

__all__ = ["H11Codec", "LlhttpCodec", "Receiver"]


class Receiver(Protocol):
    """What a codec tells about the answer it parses."""

    def began(self, status: int, reason: str, raw: list[tuple[bytes, bytes]]) -> None: ...

    def body(self, data: bytes) -> None: ...

    def ended(self, keep_alive: bool) -> None: ...


class LlhttpCodec:
    """httptools' llhttp parser; requests written here (validated by the exchange)."""

    def __init__(self, conn: Receiver) -> None:
        self.conn = conn
        self.parser = httptools.HttpResponseParser(self)
        self.reason = ""
        self.fields: list[tuple[bytes, bytes]] = []

    def request(
        self, method: bytes, target: bytes, fields: list[tuple[bytes, bytes]], body: bytes | None
    ) -> bytes:
        head = b"%s %s HTTP/1.1\r\n%s\r\n" % (
            method,
            target,
            b"".join(b"%s: %s\r\n" % field for field in fields),
        )
        return head + body if body else head

    def feed(self, data: bytes) -> None:
        self.parser.feed_data(data)

    # httptools' callbacks
    def on_message_begin(self) -> None:
        self.fields = []
        self.reason = ""

    def on_status(self, status: bytes) -> None:
        self.reason += status.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status >= 200:  # 1xx interim answers (RFC 9110 § 15.2) are skipped
            self.conn.began(status, self.reason, self.fields)

    def on_body(self, body: bytes) -> None:
        self.conn.body(body)

    def on_message_complete(self) -> None:
        if self.parser.get_status_code() >= 200:
            self.conn.ended(self.parser.should_keep_alive())


class H11Codec:
    """h11's state machine, when httptools is not installed."""

    def __init__(self, conn: Receiver) -> None:
        self.conn = conn
        self.h11 = h11.Connection(h11.CLIENT)

    def request(
        self, method: bytes, target: bytes, fields: list[tuple[bytes, bytes]], body: bytes | None
    ) -> bytes:
        h = self.h11
        if h.our_state is h11.DONE and h.their_state is h11.DONE:
            h.start_next_cycle()
        out = h.send(h11.Request(method=method, target=target, headers=fields)) or b""
        if body:
            out += h.send(h11.Data(data=body)) or b""
        return out + (h.send(h11.EndOfMessage()) or b"")

    def feed(self, data: bytes) -> None:
        h = self.h11
        h.receive_data(data)
        while True:
            event: Any = h.next_event()
            kind = type(event)
            if kind is h11.Data:
                self.conn.body(bytes(event.data))
            elif kind is h11.Response:
                self.conn.began(
                    event.status_code, event.reason.decode("latin-1"), list(event.headers)
                )
            elif kind is h11.EndOfMessage:
                self.conn.ended(h.our_state is h11.DONE and h.their_state is h11.DONE)
            elif event is h11.NEED_DATA or event is h11.PAUSED or kind is h11.ConnectionClosed:
                return
