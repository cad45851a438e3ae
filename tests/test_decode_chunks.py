"""The accelerated decode parses a large history in pieces (``_pieces`` in ``_json.py``):
bytes as one bracketed copy per piece, text by slices. The caller's bytes are never
written to, no copy of the whole input is made, and a separator-like text inside a
string, where a cut falls, changes nothing."""

from __future__ import annotations

import tracemalloc

import pytest
from returns.result import Success

from golem_core import Message, decode_history, encode_history
from golem_core.codec import _json as codec

pytest.importorskip("orjson")

SEPARATOR = '},{"role":'


def _history(n: int) -> tuple[Message, ...]:
    """``n`` messages of ~300 bytes, some holding the separator text in their strings."""
    out: list[Message] = []
    for i in range(n):
        text = f"message {i} " + ("x" * 250) + (SEPARATOR * 3 if i % 7 == 0 else "")
        out.append(
            Message.tool_result(f"call_{i}", "search", text) if i % 2 else Message.user(text)
        )
    return tuple(out)


HISTORY = _history(2_000)  # about 600 kB: many pieces of ``codec._CHUNK``
DATA = encode_history(HISTORY)


def test_the_workload_spans_many_pieces() -> None:
    assert len(DATA) > 8 * codec._CHUNK
    assert len(list(codec._pieces(DATA))) > 8


@pytest.mark.parametrize(
    "make", [bytes, bytearray, memoryview, lambda d: d.decode("utf-8")], ids=lambda f: "input"
)
def test_every_input_type_decodes_to_the_history(make: object) -> None:
    data = make(DATA)  # type: ignore[operator]
    assert decode_history(data) == Success(HISTORY)


def test_the_callers_bytearray_is_never_written_to() -> None:
    data = bytearray(DATA)
    assert decode_history(data) == Success(HISTORY)
    assert data == DATA


def test_a_cut_that_would_fall_inside_a_string_is_never_made() -> None:
    # every message's text holds the separator, so some scan lands inside a string
    history = tuple(Message.user(f"{i} " + SEPARATOR * 40 + "y" * 300) for i in range(1_000))
    data = encode_history(history)
    assert decode_history(data) == Success(history)
    assert decode_history(data.decode("utf-8")) == Success(history)


def test_pieces_are_arrays_whose_elements_are_the_documents() -> None:
    import json

    elements: list[object] = []
    for piece in codec._pieces(DATA):
        value = json.loads(bytes(piece))
        assert type(value) is list
        elements += value
    assert elements == json.loads(DATA)


def test_no_copy_of_the_whole_input_is_made() -> None:
    # peak memory of a decode: the messages it builds plus one piece at a time (a copy
    # of the whole input, as an earlier version made, adds the input's size again)
    # (orjson's own work space for one piece is several times the piece: the input must be
    # well past that for a whole copy to show)
    data = encode_history(_history(10_000))  # about 3.4 MB
    tracemalloc.start()
    try:
        kept = decode_history(data)
        result, peak = tracemalloc.get_traced_memory()  # what it keeps, and at most
    finally:
        tracemalloc.stop()
    assert isinstance(kept, Success) and len(kept.unwrap()) == 10_000
    assert peak - result < len(data) // 2, (peak - result, len(data))
