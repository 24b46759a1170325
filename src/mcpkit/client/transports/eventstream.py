"""A sans-IO decoder for ``text/event-stream`` (the HTML standard's SSE format).

Feed it bytes as they arrive; it returns the complete events. It keeps the
two pieces of stream state a reconnecting client needs: the last event id
(sent back as ``Last-Event-ID``) and the ``retry`` delay the server asked for
(HTML § 9.2.6 "Interpreting an event stream"). An event whose data is empty
still updates the last event id: that is how MCP servers prime a stream for
resumption (2025-11-25 transports § sending messages, item 6).

The work is linear in the bytes fed, however they are chunked: each chunk is
scanned for line ends once, and a line still incomplete waits in a
``bytearray`` that later chunks extend (never re-joined and re-scanned). With
``max_event_size`` the decoder also refuses an event whose data, or a line,
grows past that many bytes, raising :class:`EventTooLarge`: a server that
never ends its event cannot make the client buffer without bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ...errors import EventTooLarge

__all__ = ["Event", "EventStreamDecoder", "EventTooLarge"]

_LINE_END: Final = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Event:
    data: str
    type: str = "message"
    id: str | None = None


class EventStreamDecoder:
    """Incremental SSE parser: ``feed(bytes) -> list[Event]``."""

    __slots__ = (
        "_buf",
        "_data",
        "_id",
        "_size",
        "_skip_lf",
        "_type",
        "last_event_id",
        "max_event_size",
        "retry",
    )

    def __init__(
        self, last_event_id: str | None = None, *, max_event_size: int | None = None
    ) -> None:
        self.last_event_id = last_event_id
        self.retry: int | None = None  # milliseconds
        self.max_event_size = max_event_size
        self._buf = bytearray()  # the line not ended yet
        self._data: list[str] = []
        self._size = 0  # bytes of the pending event's data lines
        self._type = ""
        self._id = last_event_id
        self._skip_lf = False

    def resume(self) -> None:
        """Forget a half-received event (the connection dropped); keep the id and retry."""
        self._buf = bytearray()
        self._data = []
        self._size = 0
        self._type = ""
        self._id = self.last_event_id
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes; raises :class:`EventTooLarge` past the limit."""
        if self._skip_lf:
            # The previous chunk ended with CR; an LF starting this one belongs to it.
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if not chunk:
            return []
        lines = _LINE_END.split(chunk)  # scans this chunk only
        tail = lines.pop()
        events: list[Event] = []
        if lines:
            if self._buf:
                self._buf += lines[0]
                lines[0] = bytes(self._buf)
                self._buf = bytearray(tail)
            else:
                self._buf += tail
            self._skip_lf = chunk.endswith(b"\r")
            for line in lines:
                self._line(line, events)
        else:
            self._buf += tail
        limit = self.max_event_size
        if limit is not None and self._size + len(self._buf) > limit:
            raise EventTooLarge(limit)
        return events

    def _line(self, raw: bytes, events: list[Event]) -> None:
        limit = self.max_event_size
        if limit is not None and len(raw) > limit:
            raise EventTooLarge(limit)
        line = raw.decode("utf-8", "replace")
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return  # a comment (keep-alive)
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(raw) + 1
            if limit is not None and self._size > limit:
                raise EventTooLarge(limit)
        elif name == "event":
            self._type = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value)

    def _dispatch(self, events: list[Event]) -> None:
        self.last_event_id = self._id
        data, self._data = self._data, []
        self._size = 0
        etype, self._type = self._type, ""
        if data:
            events.append(Event("\n".join(data), etype or "message", self._id))
