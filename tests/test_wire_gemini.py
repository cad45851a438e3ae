"""The pure Gemini codec: request bodies, responses, streams and errors (no I/O)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from provider_server import fixture_bytes, fixture_json, split_every
from returns.result import Failure, Success

from golem_core import (
    DataPart,
    Message,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    URLPart,
    Usage,
    decode_history,
    encode_history,
    repair_history,
)
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import gemini as wire
from golem_core.wire._sse import SSEDecoder

WEATHER = ToolDefinition(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SIG_CALL = fixture_json("gemini/generate_parallel_calls.json")["candidates"][0]["content"]["parts"][
    0
]["thoughtSignature"]
SIG_TEXT = fixture_json("gemini/generate_thinking.json")["candidates"][0]["content"]["parts"][1][
    "thoughtSignature"
]


def body(request: ModelRequest, **kw: Any) -> dict[str, Any]:
    return wire.encode_request(request, **kw).unwrap()


def decoded(name: str) -> Message:
    return wire.decode_response(fixture_json(f"gemini/{name}")).unwrap()


def streamed(data: bytes, pieces: list[bytes] | None = None) -> tuple[list[Any], Any]:
    """Feed ``data`` (in ``pieces`` when given) through the SSE and Gemini decoders."""
    sse = SSEDecoder()
    decoder = wire.StreamDecoder()
    deltas: list[Any] = []
    for piece in pieces if pieces is not None else [data]:
        for event in sse.feed(piece):
            match decoder.feed(event):
                case Success(got):
                    deltas.extend(got)
                case Failure(error):
                    return deltas, Failure(error)
    sse.close()
    return deltas, decoder.finish()


# -- requests ---------------------------------------------------------------------------


def test_request_path() -> None:
    assert wire.request_path("gemini-2.5-flash", stream=False) == (
        "models/gemini-2.5-flash:generateContent"
    )
    assert wire.request_path("gemini-2.5-flash", stream=True) == (
        "models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert wire.request_path("models/gemini-2.5-pro", stream=False) == (
        "models/gemini-2.5-pro:generateContent"
    )
    assert wire.request_path("tunedModels/my model?", stream=False) == (
        "tunedModels/my%20model%3F:generateContent"
    )


def test_a_simple_request() -> None:
    request = ModelRequest(
        (Message.system("dropped"), Message.user("What is the capital of France?")),
        instructions="Be brief.",
        settings=ModelSettings(max_tokens=100, temperature=0.2, top_p=0.9, stop=("\n\n",)),
    )
    assert body(request) == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}],
        "generationConfig": {
            "maxOutputTokens": 100,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["\n\n"],
        },
    }


def test_tools_choice_and_thoughts() -> None:
    request = ModelRequest(
        (Message.user("Weather?"),),
        tools=(WEATHER, ToolDefinition("now")),
        tool_choice_required=True,
        settings=ModelSettings(parallel_tool_calls=False),
    )
    got = body(request, include_thoughts=True)
    assert got["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parametersJsonSchema": WEATHER.parameters,
                },
                {"name": "now", "parametersJsonSchema": {"type": "object", "properties": {}}},
            ]
        }
    ]
    assert got["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert got["generationConfig"] == {"thinkingConfig": {"includeThoughts": True}}
    assert "parallel" not in json.dumps(got)  # Gemini has no switch for it


def test_results_are_sent_in_call_order_named_after_their_call() -> None:
    history = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            "Checking.",
            tool_calls=[
                ToolCallPart("c1", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("c2", "get_weather", '{"city":"Rome"}'),
            ],
        ),
        Message.tool_result("c2", "renamed", "rain", failed=True),
        Message.tool_result("c1", "get_weather", "18C"),
        Message.user("Thanks"),
    )
    got = body(ModelRequest(history, tools=(WEATHER,)))
    assert got["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {
                    "functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": wire.SKIP_SIGNATURE,
                },
                {"functionCall": {"id": "c2", "name": "get_weather", "args": {"city": "Rome"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "c1",
                        "name": "get_weather",
                        "response": {"output": "18C"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "c2",
                        "name": "get_weather",
                        "response": {"error": "rain"},
                    }
                },
                {"text": "Thanks"},
            ],
        },
    ]


def test_a_repeated_id_in_a_turn_is_answered_on_the_wire() -> None:
    history = (
        Message.user("go"),
        Message.assistant(
            tool_calls=[ToolCallPart("x", "get_weather", "{}"), ToolCallPart("x", "now", "{}")]
        ),
        Message.tool_result("x", "get_weather", "18C"),
    )
    got = body(ModelRequest(history, tools=(WEATHER,)))
    calls = [p["functionCall"]["id"] for p in got["contents"][1]["parts"]]
    answers = [p["functionResponse"] for p in got["contents"][2]["parts"]]
    assert calls == ["x", "x_2"]  # renamed on the wire only (ADR 0035)
    assert [(a["id"], a["name"]) for a in answers] == [("x", "get_weather"), ("x_2", "now")]
    assert answers[1]["response"] == {"output": wire.REPEATED_CALL_TEXT}


def test_a_crashed_history_repaired_then_sent() -> None:
    history = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            tool_calls=[
                ToolCallPart("c1", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("c2", "get_weather", '{"city":"Rome'),  # cut mid-arguments
            ]
        ),
        Message.tool_result("c1", "get_weather", "18C"),
    )
    got = body(ModelRequest(repair_history(history), tools=(WEATHER,)))
    calls = [p["functionCall"] for p in got["contents"][1]["parts"]]
    assert calls[1]["args"] == {"truncated_args": '{"city":"Rome'}
    responses = [p["functionResponse"] for p in got["contents"][2]["parts"]]
    assert [r["id"] for r in responses] == ["c1", "c2"]
    assert responses[1]["response"] == {
        "output": "interrupted before execution; no result was produced"
    }


def test_without_tools_calls_and_results_are_text() -> None:
    history = (
        Message.user("go"),
        Message.assistant(tool_calls=[ToolCallPart("c1", "get_weather", '{"city":"Oslo"}')]),
        Message.tool_result("c1", "get_weather", "-3C"),
    )
    got = body(ModelRequest(history))
    assert got["contents"][1:] == [
        {
            "role": "model",
            "parts": [{"text": '[tool call get_weather (id c1)] {"city":"Oslo"}'}],
        },
        {"role": "user", "parts": [{"text": "[tool result get_weather (id c1)] -3C"}]},
    ]


def test_media_parts() -> None:
    history = (
        Message.user(
            "Describe",
            URLPart("https://example.com/cat.png", "image", media_type="image/png"),
            URLPart("https://www.youtube.com/watch?v=9hE5-98ZeCg", "video"),
            DataPart(b"%PDF-1.7", "document", "application/pdf"),
        ),
        Message.assistant(tool_calls=[ToolCallPart("c1", "snap", "{}")]),
        Message.tool_result(
            "c1", "snap", [TextPart("done"), DataPart(b"\x89PNG", "image", "image/png")]
        ),
    )
    got = body(ModelRequest(history, tools=(ToolDefinition("snap"),)))
    assert got["contents"][0]["parts"][1:] == [
        {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/cat.png"}},
        {"fileData": {"fileUri": "https://www.youtube.com/watch?v=9hE5-98ZeCg"}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjc="}},
    ]
    assert got["contents"][2]["parts"] == [
        {"functionResponse": {"id": "c1", "name": "snap", "response": {"output": "done"}}},
        {"text": "Attachments of the result of tool call c1:"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
    ]


def test_signatures_go_back_on_their_own_parts() -> None:
    history = (Message.user("Weather?"), decoded("generate_parallel_calls.json"))
    history = repair_history(history)  # the loop names the calls; repair answers them here
    named = (
        history[0],
        Message.assistant(
            tool_calls=[
                ToolCallPart("golem_1_0", c.name, c.arguments, extra=c.extra)
                for c in history[1].tool_calls
            ]
        ),
    )
    got = body(ModelRequest(named, tools=(WEATHER,)))
    parts = got["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == SIG_CALL  # the real one, kept verbatim
    assert "thoughtSignature" not in parts[1]  # only the first call carried one


def test_gemini_thinking_is_replayed_foreign_thinking_is_not() -> None:
    gemini = decoded("generate_thinking.json")
    claude = anthropic_wire.decode_response(
        fixture_json("anthropic/message_thinking_tool_use.json")
    ).unwrap()
    history = (Message.user("How do I cross?"), gemini, Message.user("And then?"), claude)
    parts = body(ModelRequest(history))["contents"]
    assert parts[1] == {
        "role": "model",
        "parts": [{"text": gemini.parts[1].text, "thoughtSignature": SIG_TEXT}],
    }  # the unsigned thought summary is not sent; the signed answer is, with its signature
    text = json.dumps(parts[3])
    assert "signature" not in text.lower().replace("thoughtsignature", "")
    assert "EmwKAhgB" not in text and "ErUBCkYI" not in text  # no Anthropic payload leaks
    signed = ThinkingPart("plan", extra=((wire.THOUGHT_SIGNATURE_KEY, json.dumps(SIG_TEXT)),))
    assert body(ModelRequest((Message.user("q"), Message.assistant("a", thinking=[signed]))))[
        "contents"
    ][1]["parts"][0] == {"text": "plan", "thought": True, "thoughtSignature": SIG_TEXT}


def test_a_signature_that_is_not_base64_is_refused_naming_the_part() -> None:
    part = TextPart("hi", extra=((wire.THOUGHT_SIGNATURE_KEY, '"not base64!"'),))
    result = wire.encode_request(ModelRequest((Message.user("q"), Message.assistant(part.text))))
    assert isinstance(result, Success)  # an assistant built without the extra: fine
    bad = Message(Role.ASSISTANT, (part,))
    match wire.encode_request(ModelRequest((Message.user("q"), bad))):
        case Failure(error):
            assert error.kind is ModelErrorKind.UNSUPPORTED_CONTENT
            assert "message 1 part 0" in error.message
        case _:
            pytest.fail("a corrupted signature was sent")


def test_signatures_survive_stored_history() -> None:
    for name in ("generate_thinking.json", "generate_parallel_calls.json"):
        message = decoded(name)
        again = decode_history(encode_history((message,))).unwrap()[0]
        assert again == message
        assert [wire.thought_signature(p) for p in again.parts] == [
            wire.thought_signature(p) for p in message.parts
        ]
    stored = encode_history((decoded("generate_thinking.json"),)).decode()
    assert f'"thoughtSignature":"{SIG_TEXT}"' in stored


# -- responses --------------------------------------------------------------------------


def test_text_usage_and_finish_reason() -> None:
    message = decoded("generate_text.json")
    assert message.text == "The capital of France is Paris."
    assert (message.model, message.finish_reason) == ("gemini-2.5-flash", "STOP")
    # input = prompt (cached included); output = candidates + thoughts
    assert message.usage == Usage(2011, 42, cache_read_tokens=2000, reasoning_tokens=34)


def test_parallel_calls_keep_their_signature_and_get_no_invented_id() -> None:
    message = decoded("generate_parallel_calls.json")
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (None, "get_weather", '{"city":"Paris"}'),
        (None, "get_weather", '{"city":"Rome"}'),
    ]
    assert [wire.thought_signature(c) for c in message.tool_calls] == [SIG_CALL, None]
    assert message.usage == Usage(58, 232, reasoning_tokens=202)


def test_calls_with_gemini_ids() -> None:
    message = decoded("generate_calls_with_ids.json")
    assert message.text == "Let me look both up."
    assert [(c.id, c.arguments) for c in message.tool_calls] == [
        ("jx3k9f2a", '{"city":"Paris"}'),
        ("p2m8q1zd", "{}"),
    ]


def test_thinking() -> None:
    message = decoded("generate_thinking.json")
    thought, answer = message.parts
    assert isinstance(thought, ThinkingPart) and thought.signature is None
    assert thought.text.startswith("**Crossing safely**")
    assert isinstance(answer, TextPart) and wire.thought_signature(answer) == SIG_TEXT


def test_max_tokens_keeps_what_came() -> None:
    message = decoded("generate_max_tokens.json")
    assert (message.text, message.finish_reason) == ("The capital of France is", "MAX_TOKENS")
    empty = decoded("generate_max_tokens_empty.json")
    assert (empty.parts, empty.finish_reason) == ((), "MAX_TOKENS")
    assert empty.usage == Usage(15, 2, reasoning_tokens=2)


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("generate_safety_blocked.json", ModelErrorKind.INVALID_REQUEST, "withheld its answer"),
        ("generate_prompt_blocked.json", ModelErrorKind.INVALID_REQUEST, "blocked the prompt"),
        (
            "generate_malformed_function_call.json",
            ModelErrorKind.BAD_RESPONSE,
            "MALFORMED_FUNCTION_CALL): Malformed function call: print(",
        ),
    ],
)
def test_withheld_blocked_and_botched_answers_are_clear_failures(
    name: str, kind: ModelErrorKind, words: str
) -> None:
    match wire.decode_response(fixture_json(f"gemini/{name}")):
        case Failure(error):
            assert error.kind is kind
            assert words in error.message
        case other:
            pytest.fail(f"expected a failure, got {other}")


def test_the_safety_failure_names_the_category() -> None:
    error = wire.decode_response(fixture_json("gemini/generate_safety_blocked.json")).failure()
    assert "finishReason SAFETY" in error.message
    assert "HARM_CATEGORY_HATE_SPEECH" in error.message


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ([], "response: expected an object"),
        ({"candidates": "x"}, "response.candidates: expected an array"),
        ({"candidates": []}, "response.candidates: no candidate"),
        (
            {"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]},
            "response.candidates[0].content.parts[0].functionCall.name",
        ),
        (
            {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": 1}}]}}]},
            "functionCall.args: expected an object",
        ),
        (
            {"candidates": [{"content": {"parts": [{"inlineData": {"data": "!!"}}]}}]},
            "inlineData.data: not base64",
        ),
        (
            {"candidates": [{"content": {"parts": [{"text": "a", "thought": "yes"}]}}]},
            "parts[0].thought: expected a boolean",
        ),
    ],
)
def test_bad_bodies_name_the_path(value: object, path: str) -> None:
    error = wire.decode_response(value).failure()
    assert error.kind is ModelErrorKind.BAD_RESPONSE
    assert path in error.message


def test_an_error_body_with_status_200() -> None:
    error = wire.decode_response(fixture_json("gemini/error_503_unavailable.json")).failure()
    assert error.kind is ModelErrorKind.OVERLOADED


# -- streams ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "plain"),
    [
        ("stream_text.sse", None),
        ("stream_thinking.sse", "generate_thinking.json"),
        ("stream_parallel_calls.sse", "generate_parallel_calls.json"),
        ("stream_recorded_call_signature.sse", None),
        ("stream_recorded_text.sse", None),
    ],
)
def test_a_stream_in_any_chunking_builds_the_same_message(stream: str, plain: str | None) -> None:
    data = fixture_bytes(f"gemini/{stream}")
    deltas, whole = streamed(data)
    message = whole.unwrap()
    if plain is not None:
        expected = decoded(plain)
        assert message.parts == expected.parts  # signatures included (extra is compared)
        assert message.finish_reason == expected.finish_reason
    assert deltas
    rng = random.Random(stream)
    for pieces in (split_every(data, 1), split_every(data, 7)):
        assert streamed(data, pieces)[1].unwrap() == message
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(data)), 12))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        assert streamed(data, pieces)[1].unwrap() == message


def test_stream_deltas() -> None:
    deltas, _ = streamed(fixture_bytes("gemini/stream_text.sse"))
    assert "".join(d.text for d in deltas) == "The capital of France is Paris."
    deltas, message = streamed(fixture_bytes("gemini/stream_recorded_call_signature.sse"))
    [call] = message.unwrap().tool_calls
    assert wire.thought_signature(call) is not None
    assert [(d.index, d.name, d.arguments) for d in deltas] == [(0, "get_country", "{}")]


def test_a_stream_cut_mid_arguments_is_interrupted() -> None:
    deltas, result = streamed(fixture_bytes("gemini/stream_cut_mid_arguments.sse"))
    assert [d.text for d in deltas] == ["Checking the weather."]
    assert result.failure().kind is ModelErrorKind.STREAM_INTERRUPTED


def test_a_mid_stream_error() -> None:
    deltas, result = streamed(fixture_bytes("gemini/stream_error.sse"))
    assert [d.text for d in deltas] == ["The capital of France"]
    error = result.failure()
    assert error.kind is ModelErrorKind.OVERLOADED
    assert "The model is overloaded" in error.message


def test_a_stream_stopped_for_safety_keeps_what_came() -> None:
    _, result = streamed(fixture_bytes("gemini/stream_safety.sse"))
    message = result.unwrap()
    assert (message.text, message.finish_reason) == ("Here is how to", "SAFETY")


def test_a_stream_whose_prompt_was_blocked() -> None:
    _, result = streamed(fixture_bytes("gemini/stream_prompt_blocked.sse"))
    error = result.failure()
    assert error.kind is ModelErrorKind.INVALID_REQUEST
    assert "blockReason SAFETY" in error.message and "HARM_CATEGORY_HARASSMENT" in error.message


def test_events_after_the_finish_are_ignored_and_bad_chunks_are_named() -> None:
    decoder = wire.StreamDecoder()
    for event in SSEDecoder().feed(fixture_bytes("gemini/stream_text.sse")):
        decoder.feed(event)
    assert decoder.done and decoder.finish_reason == "STOP"
    assert decoder.model == "gemini-2.5-flash"
    assert decoder.usage == Usage(9, 8)
    [late] = SSEDecoder().feed(
        b'data: {"candidates": [{"content": {"parts": [{"text": "x"}]}}]}\n\n'
    )
    assert decoder.feed(late) == Success(())
    assert decoder.finish().unwrap().text == "The capital of France is Paris."
    [junk] = SSEDecoder().feed(b"data: {not json\n\n")
    error = wire.StreamDecoder().feed(junk).failure()
    assert error.kind is ModelErrorKind.BAD_RESPONSE and "stream chunk" in error.message


# -- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "retry_after"),
    [
        ("error_429_resource_exhausted.json", ModelErrorKind.RATE_LIMIT, 34.0),
        ("error_429_daily_quota.json", ModelErrorKind.QUOTA, 25923.0),
        ("error_500_internal.json", ModelErrorKind.SERVER_ERROR, None),
        ("error_503_unavailable.json", ModelErrorKind.OVERLOADED, None),
        ("error_504_deadline.json", ModelErrorKind.SERVER_ERROR, None),
        ("error_400_invalid_argument.json", ModelErrorKind.INVALID_REQUEST, None),
        ("error_400_context_too_long.json", ModelErrorKind.CONTEXT_TOO_LONG, None),
        ("error_400_api_key_invalid.json", ModelErrorKind.AUTHENTICATION, None),
        ("error_401_unauthenticated.json", ModelErrorKind.AUTHENTICATION, None),
        ("error_403_permission_denied.json", ModelErrorKind.PERMISSION, None),
        ("error_404_not_found.json", ModelErrorKind.NOT_FOUND, None),
    ],
)
def test_every_error_class(name: str, kind: ModelErrorKind, retry_after: float | None) -> None:
    status = int(name.split("_")[1])
    error = wire.decode_error(status, {}, fixture_bytes(f"gemini/{name}"))
    assert (error.kind, error.status, error.retry_after) == (kind, status, retry_after)
    google = fixture_json(f"gemini/{name}")["error"]
    assert error.message == f"{google['status']}: {google['message']}"


def test_a_retry_after_header_wins_over_retry_info() -> None:
    body = fixture_bytes("gemini/error_429_resource_exhausted.json")
    error = wire.decode_error(429, {"Retry-After": "2"}, body)
    assert error.retry_after == 2.0


def test_error_bodies_that_are_not_google_json() -> None:
    error = wire.decode_error(502, {}, b"<html>Bad Gateway</html>")
    assert error.kind is ModelErrorKind.SERVER_ERROR
    assert "Gemini answered HTTP 502" in error.message
    error = wire.decode_error(429, {}, b'{"error": {"code": 429, "details": "x"}}')
    assert error.kind is ModelErrorKind.RATE_LIMIT
