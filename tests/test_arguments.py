"""wire_arguments: the object every adapter sends for a call (ADR 0026)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem_core import Message, ToolCallPart, normalize_history
from golem_core.wire import (
    TRUNCATED_ARGS_KEY,
    wire_arguments,
)


def call(arguments: str) -> ToolCallPart:
    return ToolCallPart("c1", "t", arguments)


def test_a_json_object_is_sent_as_itself() -> None:
    assert wire_arguments(call('{"city": "Paris", "n": [1, {"x": null}]}')) == {
        "city": "Paris",
        "n": [1, {"x": None}],
    }


@pytest.mark.parametrize("arguments", ["", " ", "\n\t ", "{}", " {} "])
def test_empty_arguments_are_the_empty_object(arguments: str) -> None:
    assert wire_arguments(call(arguments)) == {}


@pytest.mark.parametrize(
    "arguments",
    [
        '{"path": "/tm',  # a stream cut mid-arguments
        "{",
        "[1, 2]",
        '"a string"',
        "42",
        "null",
        "true",
        "not json",
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": -Infinity}',
        '{"a": "\\ud800"}',  # an escaped lone surrogate
        '{"a": "\ud800"}',  # a raw one
        '{"a": 1} trailing',
        "[" * 100_000,  # deep nesting
    ],
)
def test_anything_else_is_sent_verbatim_under_truncated_args(arguments: str) -> None:
    assert TRUNCATED_ARGS_KEY == "truncated_args"
    assert wire_arguments(call(arguments)) == {"truncated_args": arguments}


def test_each_call_gets_a_fresh_dict_the_cache_cannot_be_corrupted() -> None:
    part = call('{"a": {"b": [1]}}')
    first = wire_arguments(part)
    first["a"]["b"].append(2)  # type: ignore[index]
    first["new"] = 1
    second = wire_arguments(part)
    assert second == {"a": {"b": [1]}}
    assert second is not first
    assert part.arguments_object == {"a": {"b": [1]}}


def test_the_truncated_shape_is_fresh_too() -> None:
    part = call("{")
    first = wire_arguments(part)
    first["x"] = 1
    assert wire_arguments(part) == {"truncated_args": "{"}


def test_wire_arguments_is_deterministic() -> None:
    part = call('{"b": 1, "a": 2}')
    assert list(wire_arguments(part)) == ["b", "a"]
    assert wire_arguments(part) == wire_arguments(call('{"b": 1, "a": 2}'))


# -- non-JSON whitespace is truncated arguments (correctness round 3, issue 28 item 8) ---
# Issue 28, item 8 (smaller promises): arguments of non-JSON whitespace are truncated
# (the token-usage histogram's half is in tests/test_otel.py).


JSON_SPACE = " \t\n\r"
OTHER_SPACE = [c for c in map(chr, range(0x3000 + 1)) if c.isspace() and c not in JSON_SPACE]


@pytest.mark.parametrize("text", ["\xa0", " \xa0 ", "\u2028", "\x0b", "\x0c", "\u3000"])
def test_non_json_whitespace_is_truncated_not_empty(text: str) -> None:
    call = ToolCallPart("c1", "lookup", text)
    assert call.arguments_object is None and not call.arguments_valid
    assert wire_arguments(call) == {"truncated_args": text}
    history = (
        Message.user("go"),
        Message.assistant(None, tool_calls=[call]),
        Message.tool_result("c1", "lookup", "ok"),
    )
    _, repair = normalize_history(history)
    assert [e.call_id for e in repair.truncated] == ["c1"]


@given(st.text(alphabet=JSON_SPACE, max_size=6))
def test_json_whitespace_alone_is_an_empty_object(text: str) -> None:
    assert wire_arguments(ToolCallPart("c", "f", text)) == {}


@given(
    st.text(alphabet=JSON_SPACE, max_size=3),
    st.text(alphabet=st.sampled_from(OTHER_SPACE), min_size=1, max_size=3),
    st.text(alphabet=JSON_SPACE, max_size=3),
)
def test_any_other_whitespace_makes_arguments_truncated(left: str, odd: str, right: str) -> None:
    text = left + odd + right
    assert wire_arguments(ToolCallPart("c", "f", text)) == {"truncated_args": text}
