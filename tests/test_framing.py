"""The bounded line splitter shared by the server's and the client's stdio transports."""

from __future__ import annotations

from mcpkit.framing import LineSplitter, Oversized


def test_an_over_long_line_is_reported_before_its_newline_arrives() -> None:
    # The client gives up as soon as a line passes the limit; it must not have to wait
    # (and buffer) until the server finally writes a newline.
    splitter = LineSplitter(max_size=10)
    assert splitter.feed(b"ok\n0123456789") == [b"ok"]
    assert splitter.overflowing == 0
    assert splitter.feed(b"a") == []
    assert splitter.overflowing == 11
    assert splitter.feed(b"bcd") == []
    assert splitter.overflowing == 14
    out = splitter.feed(b"\nnext\n")
    assert isinstance(out[0], Oversized) and out[0].size == 14
    assert out[1:] == [b"next"]
    assert splitter.overflowing == 0


def test_a_line_exactly_at_the_limit_is_kept() -> None:
    splitter = LineSplitter(max_size=4)
    assert splitter.feed(b"ab") == []
    assert splitter.feed(b"cd") == []
    assert splitter.overflowing == 0
    assert splitter.feed(b"\n") == [bytearray(b"abcd")]
