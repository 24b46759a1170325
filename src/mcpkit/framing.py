"""Newline-delimited framing with a bound on each line, for both ends of a stdio pipe.

2025-11-25 basic/transports § stdio: every message is one line of UTF-8 JSON
with no embedded newline. The server's stdio transport
(:mod:`mcpkit.transports.stdio`) and the client's
(:mod:`mcpkit.client.transports.stdio`) both cut a byte stream at ``\\n`` and
both must refuse a peer that writes an endless line, so the splitter lives
once, here, in a leaf module below both (it imports nothing of mcpkit).

The two sides react differently to an over-long line, and the splitter serves
both: the server drops the line and answers an error once its newline
arrives (the connection goes on), so the line comes out of :meth:`LineSplitter.feed`
as an :class:`Oversized`; the client gives up on the connection as soon as the
limit is passed, newline or not, so it also looks at
:attr:`LineSplitter.overflowing` after each chunk.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_LINE_SIZE", "LineSplitter", "Oversized"]

#: Default bound on one line (bytes, without its newline).
MAX_LINE_SIZE: Final = 64 * 1024 * 1024


class Oversized:
    """Marks a line that was dropped for exceeding the size limit."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class LineSplitter:
    """Splits a byte stream into lines, bounding each line's size.

    Each chunk is scanned once, so a 10 MB line arriving in 64 KiB pieces
    costs linear time. A line over ``max_size`` is not buffered: its bytes
    are counted and dropped (:attr:`overflowing` says how many so far), and it
    comes out as an :class:`Oversized` when its newline arrives or at
    :meth:`close`. Lines come out without their ``\\n``, except a chunk that is
    exactly one line, which comes out as is (JSON ignores the trailing newline,
    and not copying it is the hot path).
    """

    __slots__ = ("_buf", "_dropping", "_max")

    def __init__(self, max_size: int = MAX_LINE_SIZE) -> None:
        self._buf = bytearray()
        self._dropping = 0  # > 0 while discarding an oversized line
        self._max = max_size

    @property
    def overflowing(self) -> int:
        """Bytes of an over-long line being dropped whose newline has not arrived yet
        (0 when none): a reader that gives up at once need not wait for the newline."""
        return self._dropping

    def whole_line(self, data: bytes) -> bool:
        """Whether ``data`` is exactly one complete line, nothing buffered before it and
        within the size limit: then it is the line (JSON ignores the ``\\n``), and
        :meth:`feed` need not run."""
        last = len(data) - 1
        return (
            last >= 0
            and data.find(b"\n") == last
            and not self._buf
            and not self._dropping
            and last <= self._max
        )

    def feed(self, data: bytes) -> list[bytes | bytearray | Oversized]:
        out: list[bytes | bytearray | Oversized] = []
        start = 0
        end = len(data)
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            if self._dropping:
                out.append(Oversized(self._dropping + nl - start))
                self._dropping = 0
            elif self._buf:
                self._buf += memoryview(data)[start:nl]
                if len(self._buf) > self._max:
                    out.append(Oversized(len(self._buf)))
                    self._buf.clear()
                else:
                    out.append(self._buf)
                    self._buf = bytearray()
            elif nl - start > self._max:
                out.append(Oversized(nl - start))
            elif start == 0 and nl == end - 1:
                out.append(data)  # the common case: exactly one whole line (JSON ignores the \n)
            else:
                out.append(data[start:nl])
            start = nl + 1
        if start < end:
            if self._dropping:
                self._dropping += end - start
            elif len(self._buf) + end - start > self._max:
                self._dropping = len(self._buf) + end - start
                self._buf.clear()
            else:
                self._buf += memoryview(data)[start:]
        return out

    def close(self) -> list[bytes | bytearray | Oversized]:
        """At end of input: the last line, when it had no newline (and forget it)."""
        if self._dropping:
            size, self._dropping = self._dropping, 0
            return [Oversized(size)]
        if self._buf:
            line, self._buf = self._buf, bytearray()
            return [line]
        return []
