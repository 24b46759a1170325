"""The SSE decoder: framing, ids, retry, and chunks split anywhere."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpkit.client.transports import eventstream
from mcpkit.client.transports.eventstream import Event, EventStreamDecoder, EventTooLarge

STREAM = (
    b": keep-alive\r\n"
    b"id: s1#0\r\nretry: 500\r\ndata:\r\n\r\n"  # priming: id, empty data
    b'event: message\nid: s1#1\ndata: {"a":\ndata: 1}\n\n'
    b"data: two\rdata: lines\r\r"
    b"event: other\ndata: x\n\n"
)


def decode_all(chunks: list[bytes]) -> tuple[list[Event], EventStreamDecoder]:
    decoder = EventStreamDecoder()
    events: list[Event] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    return events, decoder


def test_decodes_events_ids_and_retry() -> None:
    events, decoder = decode_all([STREAM])
    assert events == [
        Event("", "message", "s1#0"),
        Event('{"a":\n1}', "message", "s1#1"),
        Event("two\nlines", "message", "s1#1"),
        Event("x", "other", "s1#1"),
    ]
    assert decoder.last_event_id == "s1#1"
    assert decoder.retry == 500


def test_priming_event_sets_the_id_without_data() -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(b"id: 7\n\n") == []
    assert decoder.last_event_id == "7"


def test_id_with_nul_is_ignored_and_bad_retry_too() -> None:
    decoder = EventStreamDecoder()
    decoder.feed(b"id: 1\ndata: a\n\nid: 2\x00\nretry: soon\ndata: b\n\n")
    assert decoder.last_event_id == "1"
    assert decoder.retry is None


def test_resume_drops_a_half_event_but_keeps_the_cursor() -> None:
    decoder = EventStreamDecoder()
    decoder.feed(b"id: 4\ndata: whole\n\nid: 5\ndata: half")
    decoder.resume()
    assert decoder.last_event_id == "4"
    assert decoder.feed(b"data: fresh\n\n") == [Event("fresh", "message", "4")]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert decode_all(chunks)[0] == decode_all([STREAM])[0]


# -- large events: linear work, bounded size ------------------------------------------------------


class ScanCounter:
    """Stands in for the decoder's line-end pattern and counts the bytes it is asked to scan."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.scanned = 0

    def split(self, data: bytes) -> list[bytes]:
        self.scanned += len(data)
        return self.pattern.split(data)

    def search(self, data: bytes, *args: int) -> re.Match[bytes] | None:
        self.scanned += len(data)
        return self.pattern.search(data, *args)


def test_each_byte_is_scanned_for_line_ends_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic, no timing: a 512 KiB event fed in 512-byte chunks is scanned once.

    A decoder that re-joins and re-scans its buffer on every chunk scans ~256 MB here."""
    counter = ScanCounter(eventstream._LINE_END)
    monkeypatch.setattr(eventstream, "_LINE_END", counter)
    payload = b"x" * (512 * 1024)
    stream = b"data: " + payload + b"\n\n"
    decoder = EventStreamDecoder()
    events: list[Event] = []
    for i in range(0, len(stream), 512):
        events.extend(decoder.feed(stream[i : i + 512]))
    assert [len(e.data) for e in events] == [len(payload)]
    assert counter.scanned <= 2 * len(stream)


@pytest.mark.timeout(60)
def test_a_32_mib_event_in_4_kib_chunks_is_decoded() -> None:
    """Linear: 8,192 chunks take well under a second; a quadratic decoder copies and scans
    ~140 GB here and runs into the (generous) timeout."""
    line = b"data: " + b"y" * (32 * 1024 * 1024) + b"\r\n"
    stream = b"id: big\r\n" + line + b"data: end\r\n\r\n"
    decoder = EventStreamDecoder(max_event_size=40 * 1024 * 1024)
    events: list[Event] = []
    view = memoryview(stream)
    for i in range(0, len(stream), 4096):
        events.extend(decoder.feed(bytes(view[i : i + 4096])))
    assert len(events) == 1
    assert events[0].id == "big"
    assert len(events[0].data) == 32 * 1024 * 1024 + len("\nend")
    assert events[0].data.endswith("y\nend")


def test_data_lines_without_a_blank_line_are_refused_past_the_limit() -> None:
    decoder = EventStreamDecoder(max_event_size=10_000)
    with pytest.raises(EventTooLarge) as info:
        for _ in range(1000):
            decoder.feed(b"data: " + b"z" * 100 + b"\n")  # never a blank line: one event
    assert info.value.limit == 10_000


def test_an_endless_line_is_refused_past_the_limit() -> None:
    decoder = EventStreamDecoder(max_event_size=10_000)
    decoder.feed(b"data: ")
    with pytest.raises(EventTooLarge):
        for _ in range(1000):
            decoder.feed(b"z" * 100)  # no line end at all


def test_the_limit_is_per_event() -> None:
    decoder = EventStreamDecoder(max_event_size=1000)
    events: list[Event] = []
    for i in range(100):
        events.extend(decoder.feed(f"id: {i}\ndata: ".encode() + b"w" * 900 + b"\n\n"))
    assert len(events) == 100  # 90 kB in all, each event under the limit
    with pytest.raises(EventTooLarge):
        decoder.feed(b"data: " + b"w" * 600 + b"\ndata: " + b"w" * 600 + b"\n\n")
