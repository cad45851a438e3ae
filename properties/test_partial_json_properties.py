"""``parse_partial`` (what ``stream_output`` shows of a streamed structured answer): every
prefix of any JSON document reads as an independent reference says, and reading one takes
steps linear in its length, on adversarial prefixes too (runs of backslashes, cut ``\\u``
escapes, quotes).

The reference knows nothing of ``parse_partial``'s tokens: the value of a prefix is the
longest prefix of it that some closing makes a JSON document (close an open string with
``"``, then each open container), read by ``json.loads``; a cut inside a number or a
literal counts only at the prefix's very end (``[1, 1.`` shows ``[1]``, not ``[1, 1]``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import golem_shell.tools._partial_json as partial
from golem_shell.tools._partial_json import INCOMPLETE, parse_partial

_BARE_STOP = set(' \t\n\r{}[],:"')

# strings made to hurt: backslashes, quotes, `u` and hex digits (cut `\u` escapes), a
# control character, non-ASCII (escaped when the document is ASCII-only), punctuation (a
# string "}" is no closing brace)
_nasty_text = st.sampled_from(["}", "]", ":", ",", "{", "["]) | st.text(
    alphabet=st.sampled_from('\\\\\\"uU0aF9 x\n\x00é\u2028{}[]:,'), max_size=12
)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | _nasty_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_nasty_text, inner, max_size=4),
    max_leaves=10,
)  # fmt: skip


def _states(document: str) -> tuple[list[str], list[tuple[bool, str]]]:
    """Per character of ``document``, its kind (``s`` inside a string with its quotes,
    ``b`` in a number or literal, ``-`` else); per prefix length, whether the prefix
    ends inside a string and the closers of its open containers, innermost first."""
    kinds: list[str] = []
    states: list[tuple[bool, str]] = [(False, "")]
    in_string = escaped = False
    closers = ""
    for char in document:
        if in_string:
            kinds.append("s")
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            kinds.append("s")
            in_string = True
        else:
            kinds.append("-" if char in _BARE_STOP else "b")
            if char in "{[":
                closers = ("}" if char == "{" else "]") + closers
            elif char in "}]":
                closers = closers[1:]
        states.append((in_string, closers))
    return kinds, states


def _reference(document: str, end: int) -> Any:
    kinds, states = _states(document)
    for cut in range(end, 0, -1):
        if cut < end and kinds[cut - 1] == kinds[cut] == "b":
            continue  # inside a number or literal the prefix has gone past
        in_string, closers = states[cut]
        try:
            return json.loads(document[:cut] + ('"' if in_string else "") + closers)
        except ValueError:
            continue
    return INCOMPLETE


@given(
    value=_values,
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 0, 2]),
)
def test_every_prefix_of_a_json_document_reads_as_the_reference_says(
    value: Any, ascii_only: bool, indent: int | None
) -> None:
    document = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    for end in range(len(document) + 1):
        assert parse_partial(document[:end]) == _reference(document, end), document[:end]
    assert parse_partial(document) == json.loads(document)


@given(
    before=_nasty_text,
    run=st.integers(min_value=0, max_value=40),
    tail=st.sampled_from(["", "u", "u0", "u00", "u00e", "u00e9", '"', "x"]),
    wrap=st.sampled_from(["@", '{"k": @', "[@", '[1, {"k": @']),
)
def test_a_string_cut_in_a_run_of_backslashes_reads_as_the_reference_says(
    before: str, run: int, tail: str, wrap: str
) -> None:
    if run % 2 == 1 and tail == "x":
        tail = "u0"  # `\x` is no JSON escape: not the prefix of a document
    document = wrap.replace("@", '"' + json.dumps(before)[1:-1] + "\\" * run + tail)
    assert parse_partial(document) == _reference(document, len(document)), document


class _CountingStr(str):
    """A string that counts the characters read from it by index."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        type(self).reads += 1
        return super().__getitem__(index)


@given(run=st.integers(min_value=0, max_value=3000), tail=st.sampled_from(["", "u", "u12", "x"]))
def test_finding_a_cut_escape_reads_the_trailing_run_once(run: int, tail: str) -> None:
    # a structural bound, not a clock: the characters read back from the end are the
    # run of backslashes and the `u` tail, each once (a search restarted from each
    # position of the run reads it quadratically often)
    body = _CountingStr("z" * 100 + "\\" * run + tail)
    _CountingStr.reads = 0
    cut = partial._half_escape(body)
    assert _CountingStr.reads <= run + 5  # the run, the `u` and 3 hex digits, one more
    assert cut == (100 + run - 1 if run % 2 == 1 and tail != "x" else None)


def test_a_32k_run_of_backslashes_reads_to_its_value() -> None:
    # 91 s with the backtracking pattern, milliseconds now (timed in `python -m bench`,
    # never asserted here): the run is read once
    k = 16_000
    assert parse_partial('"' + "\\\\" * k + "x") == "\\" * k + "x"
    assert parse_partial('{"a": "' + "\\" * (2 * k + 1)) == {"a": "\\" * k}
    assert parse_partial('["' + "\\" * (2 * k + 1) + "u00") == ["\\" * k]


@given(value=_values, indent=st.sampled_from([None, 2]), data=st.data())
def test_a_malformed_document_is_refused_saying_where(
    value: Any, indent: int | None, data: st.DataObject
) -> None:
    """A character no JSON document has there (``@`` where a key or value must start, a
    second value after the first) is refused, and the message names its offset (issue 49
    item 8), so that a streamed answer gone wrong says where."""
    document = json.dumps(value, indent=indent)
    kinds, _ = _states(document)
    places = [i + 1 for i, c in enumerate(document) if kinds[i] == "-" and c in "{[,:"]
    place = data.draw(st.sampled_from([*places, len(document)]), label="place")
    broken = document[:place] + "@" + document[place:] if place < len(document) else document + " @"
    where = place if place < len(document) else place + 1
    try:
        parse_partial(broken)
    except ValueError as e:
        assert f"at offset {where}" in str(e), (broken, str(e))
    else:
        raise AssertionError(f"{broken!r} was read")
    if place < len(document):  # a bad escape in a string put there: at its opening quote
        with pytest.raises(ValueError, match=f"not a JSON string at offset {place}:"):
            parse_partial(document[:place] + '"\\q"' + document[place:])
