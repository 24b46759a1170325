"""A sans-IO decoder for ``text/event-stream`` (the HTML standard's SSE format).

Feed it bytes as they arrive; it returns the complete events. It keeps the
two pieces of stream state a reconnecting client needs: the last event id
(sent back as ``Last-Event-ID``) and the ``retry`` delay the server asked for
(HTML § 9.2.6 "Interpreting an event stream"). An event whose data is empty
still updates the last event id: that is how MCP servers prime a stream for
resumption (2025-11-25 transports § sending messages, item 6).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["Event", "EventStreamDecoder"]

_LINE_END: Final = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Event:
    data: str
    type: str = "message"
    id: str | None = None


class EventStreamDecoder:
    """Incremental SSE parser: ``feed(bytes) -> list[Event]``."""

    __slots__ = ("_buf", "_data", "_id", "_skip_lf", "_type", "last_event_id", "retry")

    def __init__(self, last_event_id: str | None = None) -> None:
        self.last_event_id = last_event_id
        self.retry: int | None = None  # milliseconds
        self._buf = b""
        self._data: list[str] = []
        self._type = ""
        self._id = last_event_id
        self._skip_lf = False

    def resume(self) -> None:
        """Forget a half-received event (the connection dropped); keep the id and retry."""
        self._buf = b""
        self._data = []
        self._type = ""
        self._id = self.last_event_id
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[Event]:
        if self._skip_lf:
            # The previous chunk ended with CR; an LF starting this one belongs to it.
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._buf + chunk if self._buf else chunk
        lines = _LINE_END.split(buf)
        self._buf = lines.pop()
        if buf.endswith(b"\r"):
            self._skip_lf = True
        events: list[Event] = []
        for line in lines:
            self._line(line.decode("utf-8", "replace"), events)
        return events

    def _line(self, line: str, events: list[Event]) -> None:
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
        etype, self._type = self._type, ""
        if data:
            events.append(Event("\n".join(data), etype or "message", self._id))
