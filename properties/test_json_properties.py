"""The JSON codec: round trips, canonical bytes, and totality on arbitrary input."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success
from strategies import histories, json_values, messages

from golem_core import decode_history, decode_message, encode_history, encode_message


@given(histories())
def test_decode_after_encode_is_the_identity(history: tuple) -> None:  # type: ignore[type-arg]
    assert decode_history(encode_history(history)) == Success(history)


@given(messages())
def test_single_message_round_trip(message) -> None:  # type: ignore[no-untyped-def]
    assert decode_message(encode_message(message)) == Success(message)


@given(histories())
def test_canonical_bytes_are_a_fixed_point(history: tuple) -> None:  # type: ignore[type-arg]
    raw = encode_history(history)
    assert encode_history(decode_history(raw).unwrap()) == raw


@given(histories())
def test_encoding_is_deterministic_and_standard_json(history: tuple) -> None:  # type: ignore[type-arg]
    raw = encode_history(history)
    assert raw == encode_history(history)
    json.loads(raw.decode("utf-8"), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def _is_result(value: object) -> bool:
    return isinstance(value, Success | Failure) and isinstance(value, Result)


@given(st.binary(max_size=300))
def test_decode_never_raises_on_arbitrary_bytes(raw: bytes) -> None:
    assert _is_result(decode_history(raw))
    assert _is_result(decode_message(raw))


@given(json_values)
def test_decode_never_raises_on_arbitrary_json(value: object) -> None:
    raw = json.dumps(value).encode()
    assert _is_result(decode_history(raw))
    assert _is_result(decode_history(json.dumps([value]).encode()))


message_like = st.fixed_dictionaries(
    {
        "role": st.one_of(
            st.sampled_from(["user", "assistant", "tool", "system", "x"]), json_values
        ),
        "parts": st.one_of(
            st.lists(
                st.one_of(
                    st.fixed_dictionaries(
                        {"type": st.sampled_from(["text", "url", "data", "tool_call", "thinking"])},
                        optional={
                            "text": json_values,
                            "url": json_values,
                            "kind": st.sampled_from(["image", "bad"]),
                            "data": st.sampled_from(["AAAA", "!!", ""]),
                            "mediaType": json_values,
                            "name": json_values,
                            "arguments": json_values,
                            "id": json_values,
                        },
                    ),
                    json_values,
                ),
                max_size=3,
            ),
            json_values,
        ),
    },
    optional={
        "toolCallId": json_values,
        "failed": json_values,
        "usage": st.one_of(
            json_values, st.fixed_dictionaries({}, optional={"inputTokens": json_values})
        ),
        "createdAt": st.one_of(json_values, st.just("2026-01-01T00:00:00Z")),
    },
)


@given(st.lists(message_like, max_size=4))
def test_decode_never_raises_on_message_shaped_json(value: list) -> None:  # type: ignore[type-arg]
    result = decode_history(json.dumps(value).encode())
    assert _is_result(result)
    if isinstance(result, Success):
        assert decode_history(encode_history(result.unwrap())) == result
