"""``Message.asked_model``: the model an adapter asked for is a field (JSON ``askedModel``),
and history written while it lived in ``extra`` reads into the field."""

from __future__ import annotations

import json

from returns.result import Success

from golem_core import Message, TextPart, decode_history, encode_history
from golem_core.providers import asked_model_of, record_asked_model

WRITTEN_BEFORE = json.dumps(
    [
        {
            "role": "assistant",
            "parts": [{"type": "text", "text": "hi"}],
            "model": "claude-sonnet-4-20250514",
            "provider": "anthropic",
            "askedModel": "claude-sonnet-4-0",
        }
    ]
).encode()


def test_json_written_as_askedModel_decodes_into_the_field() -> None:
    decoded = decode_history(WRITTEN_BEFORE)
    assert isinstance(decoded, Success)
    (message,) = decoded.unwrap()
    assert message.asked_model == "claude-sonnet-4-0"
    assert message.extra == ()  # not an unknown field any more
    assert asked_model_of(message) == "claude-sonnet-4-0"
    again = json.loads(encode_history((message,)))
    assert again[0]["askedModel"] == "claude-sonnet-4-0"


def test_record_asked_model_sets_the_field_and_is_idempotent() -> None:
    message = Message("assistant", (TextPart("hi"),), model="gpt-4o-2024-08-06")
    recorded = record_asked_model(message, "gpt-4o")
    assert recorded.asked_model == "gpt-4o"
    assert recorded.extra == ()
    assert record_asked_model(recorded, "gpt-4o") == recorded
    assert asked_model_of(message) is None
    assert b'"askedModel":"gpt-4o"' in encode_history((recorded,)).replace(b" ", b"")
