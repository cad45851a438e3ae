"""golem_core.wire._sse: the WHATWG event-stream rules, however the bytes are split."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core.wire import (
    ServerSentEvent,
    SSEDecoder,
    SSEError,
)


def decode(data: bytes, *, max_line_bytes: int | None = None) -> list[ServerSentEvent]:
    decoder = SSEDecoder() if max_line_bytes is None else SSEDecoder(max_line_bytes=max_line_bytes)
    return decoder.feed(data) + decoder.close()


def decode_split(data: bytes, cuts: list[int]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        events += decoder.feed(data[start:cut])
        start = cut
    return events + decoder.close()


def assert_any_split(data: bytes, expected: list[ServerSentEvent]) -> None:
    """The same events for the whole stream, one byte at a time, and every 2-way split."""
    assert decode(data) == expected
    assert decode_split(data, list(range(1, len(data)))) == expected
    for cut in range(len(data) + 1):
        assert decode_split(data, [cut]) == expected, cut


def test_data_event() -> None:
    assert_any_split(b"data: hello\n\n", [ServerSentEvent("hello")])


def test_leading_bom_is_ignored_even_split_across_chunks() -> None:
    data = b"\xef\xbb\xbfdata: first\n\ndata: second\n\n"
    assert_any_split(data, [ServerSentEvent("first"), ServerSentEvent("second")])


def test_only_one_bom_and_only_at_the_start() -> None:
    twice = b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n"
    # the second BOM is part of the first field name: an unknown field, no event
    assert decode(twice) == []
    later = b"data: a\n\n\xef\xbb\xbfdata: b\n\n"
    assert decode(later) == [ServerSentEvent("a")]


def test_a_partial_bom_that_is_not_a_bom_is_data() -> None:
    assert_any_split(b"\xef\xbb", [])
    assert decode(b"\xefdata: x\n\n") == []  # the field name is "\ufffddata"


@pytest.mark.parametrize("ending", [b"\r\n", b"\n", b"\r"])
def test_every_line_ending(ending: bytes) -> None:
    data = b"event: e" + ending + b"data: a" + ending + b"data: b" + ending + ending
    assert_any_split(data, [ServerSentEvent("a\nb", event="e")])


def test_mixed_line_endings() -> None:
    data = b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r"
    assert_any_split(data, [ServerSentEvent("a\nb\nc"), ServerSentEvent("d")])


def test_cr_at_chunk_end_then_lf_is_one_line_ending() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    # the LF completes the CRLF: it is not the empty line that would dispatch
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\r") == [ServerSentEvent("x")]
    assert decoder.feed(b"\ndata: y\n\n") == [ServerSentEvent("y")]


def test_cr_cr_is_two_line_endings() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\r") == [ServerSentEvent("x")]


def test_comments_are_ignored() -> None:
    data = b": keep-alive\n\n:heartbeat\ndata: x\n: inside an event\n\n"
    assert_any_split(data, [ServerSentEvent("x")])


def test_first_colon_splits_and_one_space_is_dropped() -> None:
    data = b"data:x\n\ndata: x\n\ndata:  x\n\ndata: a:b: c\n\n"
    expected = [
        ServerSentEvent("x"),
        ServerSentEvent("x"),
        ServerSentEvent(" x"),
        ServerSentEvent("a:b: c"),
    ]
    assert_any_split(data, expected)


def test_bare_field_line_has_an_empty_value() -> None:
    assert_any_split(b"data\n\n", [ServerSentEvent("")])
    assert_any_split(b"data\ndata\n\n", [ServerSentEvent("\n")])
    assert_any_split(b"data: a\ndata\n\n", [ServerSentEvent("a\n")])


def test_event_without_data_is_not_dispatched_and_its_type_resets() -> None:
    data = b"event: only\n\ndata: x\n\n"
    assert_any_split(data, [ServerSentEvent("x", event="message")])


def test_event_type_applies_to_the_next_event_only() -> None:
    data = b"event: first\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n"
    expected = [
        ServerSentEvent("1", event="first"),
        ServerSentEvent("2"),
        ServerSentEvent("3", event="message"),
    ]
    assert_any_split(data, expected)


def test_id_persists_and_nul_ids_are_ignored() -> None:
    data = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\x00x\ndata: c\n\nid\ndata: d\n\n"
    expected = [
        ServerSentEvent("a", id="1"),
        ServerSentEvent("b", id="1"),
        ServerSentEvent("c", id="1"),
        ServerSentEvent("d", id=""),
    ]
    decoder = SSEDecoder()
    assert decoder.feed(data) == expected
    assert decoder.last_event_id == ""


def test_id_without_data_still_sets_the_last_event_id() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 7\n\ndata: x\n\n") == [ServerSentEvent("x", id="7")]


def test_retry_counts_only_when_all_ascii_digits() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(
        b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry: \xd9\xa3\ndata: c\n\nretry:\n\n"
    )
    assert events == [
        ServerSentEvent("a", retry=1500),
        ServerSentEvent("b"),
        ServerSentEvent("c"),
    ]
    assert decoder.reconnection_time == 1500


def test_unknown_fields_are_ignored() -> None:
    assert_any_split(b"foo: bar\ndata: x\nDATA: y\n\n", [ServerSentEvent("x")])


def test_pending_event_and_partial_line_are_discarded_at_eof() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: complete\n\ndata: [DONE]\n") == [ServerSentEvent("complete")]
    assert decoder.close() == []
    assert decode(b"data: x") == []


def test_utf8_split_inside_a_character() -> None:
    data = "data: Zürich ☃ 𝄞\n\n".encode()
    assert_any_split(data, [ServerSentEvent("Zürich ☃ 𝄞")])


def test_invalid_utf8_is_replaced() -> None:
    assert decode(b"data: a\xffb\n\n") == [ServerSentEvent("a\ufffdb")]


def test_a_line_longer_than_the_limit_is_refused() -> None:
    decoder = SSEDecoder(max_line_bytes=16)
    assert decoder.feed(b"data: 0123456789\n\n") == [ServerSentEvent("0123456789")]
    with pytest.raises(SSEError, match="longer than 16 bytes"):
        decoder.feed(b"data: " + b"x" * 11)


def test_a_long_line_arriving_in_pieces_is_refused() -> None:
    decoder = SSEDecoder(max_line_bytes=64)
    decoder.feed(b"data: ")
    with pytest.raises(SSEError):
        for _ in range(100):
            decoder.feed(b"x")


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        SSEDecoder(max_line_bytes=0)


def test_many_small_chunks_are_linear() -> None:
    # a 4 MiB line fed byte-group by byte-group must not be rescanned per chunk
    decoder = SSEDecoder()
    decoder.feed(b"data: ")
    piece = b"y" * 64
    for _ in range(65536):
        assert decoder.feed(piece) == []
    assert decoder.feed(b"\n\n") == [ServerSentEvent("y" * (64 * 65536))]


_FIELDS = st.sampled_from(["data", "event", "id", "retry", ":", "foo", "data:", "data: "])
_VALUES = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"),
    max_size=8,
)
_ENDINGS = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.one_of(st.just(""), st.builds(lambda f, v: f + v, _FIELDS, _VALUES))))
    text = "".join(line + draw(_ENDINGS) for line in lines)
    prefix = "\ufeff" if draw(st.booleans()) else ""
    return (prefix + text).encode("utf-8")


@given(data=streams(), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_splitting_never_changes_the_events(data: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(data)]
    assert decode_split(data, cuts) == decode(data)
