"""The Gemini codec against the official ``google-genai`` SDK (test extra only).

- Every request body the encoder produces from Hypothesis histories (broken ones too,
  Gemini-signed parts among them) validates against the SDK's request types with
  pydantic in JSON mode (``extra="forbid"``, camelCase aliases, base64 for signatures):
  each content as ``types.Content``, the configuration as
  ``types.GenerateContentConfig``, the whole request as ``types.InlinedRequest``
  (``contents`` + config), and ``generationConfig`` as ``types.GenerationConfig``.
  Rules the types cannot express are checked beside them (``wire_rules.gemini_violations``:
  a user content first, roles, one datum per part, no empty text unless it carries a
  signature).
- The pairing rule: after repair, every ``functionCall`` is answered in the next content,
  by ``functionResponse`` parts in the same order, with the call's id and name, and no
  response answers nothing.
- The SDK's own response parsing is a differential oracle on the recorded-shape
  fixtures: golem and ``types.GenerateContentResponse.model_validate_json`` agree on
  text, thoughts, calls, signatures, usage and finish reason, for bodies and (chunk by
  chunk) for streams.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from strategies import damaged_histories, histories, names, texts, valid_histories
from wire_rules import gemini_violations

from golem_core import (
    Message,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    repair_history,
)
from golem_core.wire import gemini as wire
from golem_core.wire._sse import SSEDecoder

genai = pytest.importorskip("google.genai")
from google.genai import types  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "gemini"
EXAMPLES = {"schema": 700, "pairing": 400}  # 1,100 histories per run under ci (examples())

signatures = st.binary(min_size=1, max_size=48).map(lambda b: base64.b64encode(b).decode())
schemas = st.sampled_from(
    [
        {"type": "object", "properties": {}},
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "$defs": {"x": {"type": "string"}},
            "properties": {"x": {"$ref": "#/$defs/x"}},
        },
    ]
)
tools = st.lists(
    st.builds(ToolDefinition, names, st.one_of(st.just(""), texts), schemas), max_size=3
)
model_settings = st.builds(
    ModelSettings,
    max_tokens=st.none() | st.integers(1, 65536),
    temperature=st.none() | st.floats(0, 2),
    top_p=st.none() | st.floats(0, 1),
    stop=st.lists(st.text(min_size=1, max_size=5), max_size=3).map(tuple),
    parallel_tool_calls=st.none() | st.booleans(),
)


@st.composite
def signed(draw: st.DrawFn, history: tuple[Message, ...]) -> tuple[Message, ...]:
    """``history`` with Gemini thought signatures on some assistant parts."""
    out: list[Message] = []
    for m in history:
        if m.role is Role.ASSISTANT and draw(st.booleans()):
            parts: list[Part] = []
            for p in m.parts:
                if isinstance(p, TextPart | ThinkingPart | ToolCallPart) and draw(st.booleans()):
                    p = wire.with_thought_signature(p, draw(signatures))
                parts.append(p)
            m = attrs.evolve(m, parts=tuple(parts))
        out.append(m)
    return tuple(out)


@st.composite
def requests(draw: st.DrawFn, *, repaired: bool) -> tuple[ModelRequest, bool]:
    history = draw(st.one_of(histories(), valid_histories(), damaged_histories()))
    history = draw(signed(history))
    if repaired:
        history = repair_history(history)
    declared = draw(tools)
    if repaired and not declared:
        declared = [ToolDefinition("get_weather")]
    request = ModelRequest(
        history,
        instructions=draw(st.none() | texts),
        tools=tuple(declared),
        settings=draw(model_settings),
        tool_choice_required=draw(st.booleans()),
    )
    return request, draw(st.booleans())


def validate_with_the_sdk(body: dict[str, Any]) -> None:
    """The body through the SDK's request types, in JSON mode (as the API reads it)."""
    for content in body["contents"]:
        types.Content.model_validate_json(json.dumps(content))
    config: dict[str, Any] = dict(body.get("generationConfig", {}))
    if "generationConfig" in body:
        types.GenerationConfig.model_validate_json(json.dumps(body["generationConfig"]))
    for key in ("systemInstruction", "tools", "toolConfig"):
        if key in body:
            config[key] = body[key]
    known = {"systemInstruction", "contents", "tools", "toolConfig", "generationConfig"}
    assert set(body) <= known, set(body) - known
    types.GenerateContentConfig.model_validate_json(json.dumps(config))
    request = {"model": "models/gemini-2.5-flash", "contents": body["contents"], "config": config}
    types.InlinedRequest.model_validate_json(json.dumps(request))


@settings(
    max_examples=examples(EXAMPLES["schema"]),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(requests(repaired=False))
def test_every_body_validates_against_the_sdk(drawn: tuple[ModelRequest, bool]) -> None:
    request, thoughts = drawn
    result = wire.encode_request(request, include_thoughts=thoughts)
    if not isinstance(result.value_or(None), dict):
        error = result.failure()
        assert error.kind is ModelErrorKind.UNSUPPORTED_CONTENT  # a signature not base64,
        assert "thought signature" in error.message or "nothing to send" in error.message
        return  # or nothing to send (ADR 0065)
    body = result.unwrap()
    validate_with_the_sdk(body)
    assert gemini_violations(body, paired=False) == []
    assert wire.encode_request(request, include_thoughts=thoughts).unwrap() == body


@settings(
    max_examples=examples(EXAMPLES["pairing"]),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(requests(repaired=True))
def test_repaired_histories_pair_every_call_in_order(drawn: tuple[ModelRequest, bool]) -> None:
    request, thoughts = drawn
    result = wire.encode_request(request, include_thoughts=thoughts)
    if not isinstance(result.value_or(None), dict):  # nothing to send (ADR 0065)
        assert "nothing to send" in result.failure().message
        return
    body = result.unwrap()
    validate_with_the_sdk(body)
    assert gemini_violations(body) == []
    sent = sum(1 for c in body["contents"] for p in c["parts"] if "functionCall" in p)
    calls = sum(
        1
        for m in request.messages
        if m.role is Role.ASSISTANT
        for p in m.parts
        if isinstance(p, ToolCallPart) and p.id is not None
    )
    assert sent == calls  # every call with an id is sent, none invented


# -- the SDK's response parsing as a differential oracle ---------------------------------


def sdk_response(payload: dict[str, Any]) -> types.GenerateContentResponse:
    """The SDK's reading of a body, in JSON mode (camelCase aliases, base64 bytes)."""
    return types.GenerateContentResponse.model_validate_json(json.dumps(payload))


def sdk_view(chunks: list[types.GenerateContentResponse]) -> dict[str, Any]:
    """What the SDK read from a body (one chunk) or a stream (every chunk, in order)."""
    text = thoughts = ""
    calls: list[tuple[str | None, str | None, dict[str, Any] | None]] = []
    signatures: list[str] = []
    finish = usage = None
    for chunk in chunks:
        for candidate in chunk.candidates or []:
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.thought_signature:
                    signatures.append(base64.b64encode(part.thought_signature).decode())
                if part.function_call:
                    fc = part.function_call
                    calls.append((fc.id, fc.name, fc.args))
                elif part.text and part.thought:
                    thoughts += part.text
                elif part.text:
                    text += part.text
            if candidate.finish_reason is not None:
                finish = candidate.finish_reason.value
        if chunk.usage_metadata is not None:
            usage = chunk.usage_metadata
    assert usage is not None
    return {
        "text": text,
        "thoughts": thoughts,
        "calls": calls,
        "signatures": signatures,
        "finish": finish,
        "input": (usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0),
        "output": (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
        "cached": usage.cached_content_token_count,
        "reasoning": usage.thoughts_token_count,
    }


def golem_view(message: Message) -> dict[str, Any]:
    assert message.usage is not None
    return {
        "text": message.text,
        "thoughts": "".join(p.text for p in message.parts if isinstance(p, ThinkingPart)),
        "calls": [(c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls],
        "signatures": [s for p in message.parts if (s := wire.thought_signature(p))],
        "finish": message.finish_reason,
        "input": message.usage.input_tokens,
        "output": message.usage.output_tokens,
        "cached": message.usage.cache_read_tokens,
        "reasoning": message.usage.reasoning_tokens,
    }


BODIES = sorted(
    p.name
    for p in FIXTURES.glob("generate_*.json")
    if wire.decode_response(json.loads(p.read_text())).value_or(None) is not None
)
STREAMS = sorted(
    p.name
    for p in FIXTURES.glob("stream_*.sse")
    if "cut" not in p.name and "error" not in p.name and "blocked" not in p.name
)


def test_the_oracle_covers_the_fixtures() -> None:
    assert len(BODIES) >= 6 and len(STREAMS) >= 5


@pytest.mark.parametrize("name", BODIES)
def test_bodies_read_as_the_sdk_reads_them(name: str) -> None:
    payload = json.loads((FIXTURES / name).read_text())
    assert golem_view(wire.decode_response(payload).unwrap()) == sdk_view([sdk_response(payload)])


@pytest.mark.parametrize("name", STREAMS)
def test_streams_read_as_the_sdk_reads_them(name: str) -> None:
    events = SSEDecoder().feed((FIXTURES / name).read_bytes())
    decoder = wire.StreamDecoder()
    chunks = []
    for event in events:
        decoder.feed(event).unwrap()
        chunks.append(sdk_response(json.loads(event.data)))
    assert golem_view(decoder.finish().unwrap()) == sdk_view(chunks)
