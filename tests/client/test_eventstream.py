"""The SSE decoder: framing, ids, retry, and chunks split anywhere."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcpkit.client.transports.eventstream import Event, EventStreamDecoder

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
