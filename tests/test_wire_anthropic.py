"""golem_core.wire.anthropic: exact request bodies, responses, stream events and errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from provider_server import fixture_bytes, fixture_json
from returns.result import Failure, Success

from golem_core import (
    DataPart,
    Message,
    ModelDelta,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    Role,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallDelta,
    ToolCallPart,
    ToolDefinition,
    UnknownPart,
    URLPart,
    Usage,
    repair_history,
)
from golem_core.wire import (
    SSEDecoder,
    WireError,
    anthropic,
)
from golem_core.wire._cache import strip_cache_markers

WEATHER = ToolDefinition(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SIGNATURE = "ErUBCkYIBRgCIkCSfVjxXb8b0R5KRmFqU7lYp2UuH3rq4Xw6JcRkL9qzZ3dGf2E1mN0vT8sYbQ0aA1pD7eLxW5cV4uI3oK9jH2gEgwQq2lZ8S6aX9rT1mYaDPv5hB3kJ7nL2wQ0zR8sYiMA"  # noqa: E501
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vR8wT2yU1iO3pL6kJ9hG4fD0sA=="  # noqa: E501


def body(request: ModelRequest, *, stream: bool = False, **kw: Any) -> dict[str, Any]:
    match anthropic.encode_request(request, model="claude-sonnet-4-5", stream=stream, **kw):
        case Success(value):
            result: dict[str, Any] = strip_cache_markers(value)  # tests/test_cache_wire.py
            return result
        case Failure(error):
            raise AssertionError(error)
    raise AssertionError("unreachable")


def refusal(request: ModelRequest) -> WireError:
    result = anthropic.encode_request(request, model="claude-sonnet-4-5", stream=False)
    assert isinstance(result, Failure), result
    error: WireError = result.failure()
    return error


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


# -- requests ------------------------------------------------------------------------


def test_instructions_are_the_top_level_system_and_max_tokens_defaults() -> None:
    request = ModelRequest(
        (Message.system("old"), Message.user("Hi"), Message.system("injected")),
        instructions="Be brief.",
    )
    assert body(request) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [user("Hi")],
    }
    assert body(request, default_max_tokens=1000)["max_tokens"] == 1000


def test_user_media_blocks() -> None:
    message = Message.user(
        "Describe these.",
        URLPart("https://example.com/cat.png", "image"),
        DataPart(b"\x89PNG", "image", "image/png"),
        URLPart("https://example.com/paper.pdf", "document"),
        DataPart(b"%PDF-1.4", "document", "application/pdf"),
        DataPart("Zürich notes".encode(), "document", "text/plain"),
    )
    assert body(ModelRequest((message,)))["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe these."},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="},
                },
                {
                    "type": "document",
                    "source": {"type": "url", "url": "https://example.com/paper.pdf"},
                },
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": "JVBERi0xLjQ=",
                    },
                },
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "Zürich notes"},
                },
            ],
        }
    ]


@pytest.mark.parametrize(
    ("part", "what"),
    [
        (URLPart("https://example.com/v.mp4", "video"), "video by URL (https://example.com/v.mp4)"),
        (URLPart("https://example.com/a.mp3", "audio"), "audio by URL (https://example.com/a.mp3)"),
        (DataPart(b"x", "audio", "audio/wav"), "audio (audio/wav, 1 byte)"),
        (DataPart(b"xy", "video", "video/mp4"), "video (video/mp4, 2 bytes)"),
        (DataPart(b"x", "image", "image/bmp"), "image (image/bmp, 1 byte)"),
        (DataPart(b"\xff", "document", "text/plain"), "document (text/plain, 1 byte)"),
    ],
)
def test_content_anthropic_cannot_take_is_sent_as_its_stand_in(
    part: URLPart | DataPart, what: str
) -> None:
    """ADR 0067: never a refusal that bricks the conversation; the model reads what was there."""
    request = ModelRequest((Message.user("a"), Message.assistant("b"), Message.user("look", part)))
    sent = body(request)["messages"][2]["content"]
    assert sent == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": f"[{what}: not sent, Anthropic cannot take it]"},
    ]


def test_empty_text_blocks_are_never_sent() -> None:
    request = ModelRequest(
        (
            Message(Role.USER, (TextPart(""), TextPart("a"))),
            Message.assistant(""),
            Message(Role.USER, (TextPart(""), UnknownPart("future"))),
            Message.user("b"),
        )
    )
    assert body(request)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


def test_thinking_goes_back_unchanged_in_its_position() -> None:
    assistant = Message(
        Role.ASSISTANT,
        (
            ThinkingPart("Let me think about Zürich.", signature=SIGNATURE),
            ThinkingPart(REDACTED, redacted=True),
            TextPart("I'll check."),
            ToolCallPart("toolu_01", "get_weather", '{"city": "Zürich"}'),
            ThinkingPart("unsigned thoughts from another provider"),
            UnknownPart("future"),
        ),
    )
    request = ModelRequest(
        (
            Message.user("Weather?"),
            assistant,
            Message.tool_result("toolu_01", "get_weather", "18C"),
        ),
        tools=(WEATHER,),
    )
    assert body(request)["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "Let me think about Zürich.",
                    "signature": SIGNATURE,
                },
                {"type": "redacted_thinking", "data": REDACTED},
                {"type": "text", "text": "I'll check."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "get_weather",
                    "input": {"city": "Zürich"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C"}],
        },
    ]


def test_tool_results_merge_first_into_the_next_user_turn() -> None:
    request = ModelRequest(
        (
            Message.user("Weather in Paris and Rome?"),
            Message.assistant(
                tool_calls=[
                    ToolCallPart("toolu_1", "get_weather", '{"city":"Paris"}'),
                    ToolCallPart("toolu_2", "get_weather", '{"city":"Rome"}'),
                ]
            ),
            Message.tool_result("toolu_1", "get_weather", "18C"),
            Message.tool_result("toolu_2", "get_weather", "boom", failed=True),
            Message.user("And tomorrow?"),
            Message.user("Also Oslo."),
            Message.assistant("Tomorrow: "),
            Message.assistant("sunny."),
        ),
        tools=(WEATHER,),
    )
    assert body(request)["messages"] == [
        user("Weather in Paris and Rome?"),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "boom",
                    "is_error": True,
                },
                {"type": "text", "text": "And tomorrow?"},
                {"type": "text", "text": "Also Oslo."},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Tomorrow: "}, {"type": "text", "text": "sunny."}],
        },
    ]


def test_tool_result_media_and_empty_results() -> None:
    request = ModelRequest(
        (
            Message.assistant(
                tool_calls=[ToolCallPart("t1", "plot", "{}"), ToolCallPart("t2", "noop", "")]
            ),
            Message.tool_result(
                "t1", "plot", [TextPart("chart:"), DataPart(b"GIF8", "image", "image/gif")]
            ),
            Message.tool_result("t2", "noop", ""),
        ),
        tools=(ToolDefinition("plot"), ToolDefinition("noop")),
    )
    messages = body(request)["messages"]
    assert messages[0]["content"][1] == {
        "type": "tool_use",
        "id": "t2",
        "name": "noop",
        "input": {},
    }
    assert messages[1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [
                    {"type": "text", "text": "chart:"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGOA=="},
                    },
                ],
            },
            {"type": "tool_result", "tool_use_id": "t2"},
        ],
    }


def test_truncated_call_is_sent_as_truncated_args() -> None:
    cut = ToolCallPart("toolu_9", "write_file", '{"path": "notes.md", "content": "# No')
    request = ModelRequest(
        (Message.assistant(tool_calls=[cut]), Message.tool_result("toolu_9", "write_file", "x")),
        tools=(ToolDefinition("write_file"),),
    )
    assert body(request)["messages"][0]["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_9",
            "name": "write_file",
            "input": {"truncated_args": '{"path": "notes.md", "content": "# No'},
        }
    ]


def test_without_tools_calls_and_results_are_text() -> None:
    request = ModelRequest(
        (
            Message.user("Weather?"),
            Message.assistant(
                "Checking.",
                tool_calls=[ToolCallPart("toolu_1", "get_weather", '{"city":"Paris"}')],
                thinking=[ThinkingPart("think", signature="sig")],
            ),
            Message.tool_result("toolu_1", "get_weather", "18C"),
            Message.user("Summarize."),
        )
    )
    assert body(request)["messages"] == [
        user("Weather?"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "think", "signature": "sig"},
                {"type": "text", "text": "Checking."},
                {"type": "text", "text": '[tool call get_weather (id toolu_1)] {"city":"Paris"}'},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[tool result get_weather (id toolu_1)] 18C"},
                {"type": "text", "text": "Summarize."},
            ],
        },
    ]
    assert "tools" not in body(request)


def test_settings_tools_and_tool_choice() -> None:
    request = ModelRequest(
        (Message.user("Hi"),),
        instructions="sys",
        tools=(WEATHER, ToolDefinition("now")),
        tool_choice_required=True,
        settings=ModelSettings(
            max_tokens=100, temperature=0.2, top_p=0.9, stop=("END",), parallel_tool_calls=False
        ),
    )
    assert body(request, stream=True) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "sys",
        "messages": [user("Hi")],
        "tools": [
            {
                "name": "get_weather",
                "description": "The weather in a city.",
                "input_schema": {**WEATHER.parameters, "additionalProperties": False},
                "strict": True,  # strict tool use on Claude 4.5 (ADR 0130)
            },
            {
                "name": "now",
                "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
                "strict": True,
            },
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "temperature": 0.2,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "stream": True,
    }
    parallel_off = ModelRequest(
        (Message.user("Hi"),), tools=(WEATHER,), settings=ModelSettings(parallel_tool_calls=False)
    )
    assert body(parallel_off)["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_crashed_history_repaired_then_encoded() -> None:
    history = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            tool_calls=[
                ToolCallPart("toolu_1", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("toolu_2", "get_weather", '{"city":"Rome"}'),
            ]
        ),
        Message.tool_result("toolu_1", "get_weather", "18C"),
    )
    request = ModelRequest(repair_history(history), tools=(WEATHER,))
    assert body(request)["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": "interrupted before execution; no result was produced",
            },
        ],
    }


def test_encoding_is_deterministic() -> None:
    request = ModelRequest((Message.user("Hi"),), tools=(WEATHER,), instructions="x")
    first = json.dumps(body(request))
    assert all(json.dumps(body(request)) == first for _ in range(3))


# -- responses -------------------------------------------------------------------------


def decode(payload: object) -> Message:
    result = anthropic.decode_response(payload)
    assert isinstance(result, Success), result
    message: Message = result.unwrap()
    return message


def test_decode_text_response_usage_counts_every_prompt_token() -> None:
    assert decode(fixture_json("anthropic/message_text.json")) == Message(
        Role.ASSISTANT,
        (TextPart("The capital of France is Paris."),),
        model="claude-sonnet-4-5-20250929",
        usage=Usage(
            input_tokens=12 + 100 + 2000,
            output_tokens=9,
            cache_read_tokens=2000,
            cache_write_tokens=100,
        ),
        finish_reason="end_turn",
    )


def test_decode_thinking_redacted_text_and_tool_use() -> None:
    message = decode(fixture_json("anthropic/message_thinking_tool_use.json"))
    assert message.parts == (
        ThinkingPart(
            "The user wants the weather in Zürich. I should call get_weather.", signature=SIGNATURE
        ),
        ThinkingPart(REDACTED, redacted=True),
        TextPart("I'll check the weather."),
        ToolCallPart(
            "toolu_01HWLQbwAa5e2BJwdX1nreqa",
            "get_weather",
            '{"city":"Zürich","unit":"celsius"}',
        ),
    )
    assert message.finish_reason == "tool_use"
    assert message.usage == Usage(472, 151, cache_read_tokens=0, cache_write_tokens=0)


def test_decode_then_encode_replays_the_turn_unchanged() -> None:
    payload = fixture_json("anthropic/message_thinking_tool_use.json")
    message = decode(payload)
    request = ModelRequest(
        (
            Message.user("Weather in Zürich?"),
            message,
            Message.tool_result("toolu_01HWLQbwAa5e2BJwdX1nreqa", "get_weather", "18C"),
        ),
        tools=(WEATHER,),
    )
    assert body(request)["messages"][1] == {"role": "assistant", "content": payload["content"]}


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("x", "malformed Anthropic response: expected an object, got a string"),
        ({"type": "message"}, "malformed Anthropic response.content: required field is missing"),
        (
            {"content": [{"type": "text"}]},
            "malformed Anthropic response.content[0].text: required field is missing",
        ),
        (
            {"content": [{"type": "tool_use", "id": "t", "name": "n"}]},
            "malformed Anthropic response.content[0].input: required field is missing",
        ),
        (
            {"content": [], "model": 5},
            "malformed Anthropic response.model: expected a string, got a number",
        ),
    ],
)
def test_decode_malformed_bodies_name_the_path(payload: object, reason: str) -> None:
    result = anthropic.decode_response(payload)
    assert result == Failure(WireError(ModelErrorKind.BAD_RESPONSE, reason))


def test_decode_skips_block_types_outside_the_contract() -> None:
    payload = {
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "text", "text": "ok"},
        ]
    }
    assert decode(payload).parts == (TextPart("ok"),)


# -- streams ----------------------------------------------------------------------------


def run_stream(
    data: bytes, chunk: int = 1
) -> tuple[anthropic.StreamDecoder, list[ModelDelta], list[WireError]]:
    decoder = anthropic.StreamDecoder()
    sse = SSEDecoder()
    deltas: list[ModelDelta] = []
    failures: list[WireError] = []
    for i in range(0, len(data), chunk):
        for event in sse.feed(data[i : i + chunk]):
            match decoder.feed(event):
                case Success(found):
                    deltas.extend(found)
                case Failure(error):
                    failures.append(error)
    sse.close()
    return decoder, deltas, failures


@pytest.mark.parametrize(
    ("stream", "response"),
    [
        ("anthropic/stream_text.sse", "anthropic/message_text.json"),
        ("anthropic/stream_text_crlf.sse", "anthropic/message_text.json"),
        ("anthropic/stream_thinking_tool_use.sse", "anthropic/message_thinking_tool_use.json"),
    ],
)
@pytest.mark.parametrize("chunk", [1, 2, 5, 13, 100_000])
def test_stream_equals_the_response_at_any_chunking(stream: str, response: str, chunk: int) -> None:
    decoder, _, failures = run_stream(fixture_bytes(stream), chunk)
    assert failures == []
    assert decoder.finish() == Success(decode(fixture_json(response)))


def test_stream_thinking_deltas() -> None:
    _, deltas, _ = run_stream(fixture_bytes("anthropic/stream_thinking_tool_use.sse"), 64)
    assert deltas == [
        ThinkingDelta("", 0),
        ThinkingDelta("The user wants the weather in Zürich.", 0),
        ThinkingDelta(" I should call get_weather.", 0),
        ThinkingDelta("", 0, signature=SIGNATURE),
        ThinkingDelta(REDACTED, 1, redacted=True),
        TextDelta("I'll check the weather.", 2),
        ToolCallDelta(3, "toolu_01HWLQbwAa5e2BJwdX1nreqa", "get_weather", ""),
        ToolCallDelta(3, arguments='{"ci'),
        ToolCallDelta(3, arguments='ty":"Z'),
        ToolCallDelta(3, arguments='ürich","un'),
        ToolCallDelta(3, arguments='it":"celsius"}'),
    ]


def test_stream_max_tokens_mid_tool_keeps_the_arguments_verbatim() -> None:
    decoder, _, failures = run_stream(fixture_bytes("anthropic/stream_max_tokens_mid_tool.sse"), 9)
    assert failures == []
    assert decoder.finish() == Success(
        Message(
            Role.ASSISTANT,
            (
                TextPart("Writing the file."),
                ToolCallPart(
                    "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                    "write_file",
                    '{"path": "notes.md", "content": "# Notes\\n\\nFirst li',
                ),
            ),
            model="claude-sonnet-4-5-20250929",
            usage=Usage(380, 20, cache_read_tokens=0, cache_write_tokens=0),
            finish_reason="max_tokens",
        )
    )


def test_stream_tool_without_arguments_is_an_empty_object() -> None:
    decoder, deltas, _ = run_stream(fixture_bytes("anthropic/stream_no_argument_tool.sse"), 1000)
    assert deltas[-1] == ToolCallDelta(0, arguments="{}")
    message = decoder.finish().unwrap()
    assert message.parts == (ToolCallPart("toolu_01NoArgs000000000000000a", "get_time", "{}"),)
    # message_delta's cumulative usage overwrote message_start's figures
    assert message.usage == Usage(300, 12, cache_read_tokens=0, cache_write_tokens=0)


def test_stream_error_event_fails_with_its_kind() -> None:
    _, _, failures = run_stream(fixture_bytes("anthropic/stream_error_overloaded.sse"))
    assert failures == [
        WireError(
            ModelErrorKind.OVERLOADED, "Overloaded", request_id="req_011CSHoEeqs5C35K2UUqR7Fy"
        )
    ]


def test_stream_cut_is_interrupted() -> None:
    decoder, deltas, failures = run_stream(fixture_bytes("anthropic/stream_cut.sse"))
    assert failures == []
    assert deltas == [TextDelta("The capital", 0)]
    result = decoder.finish()
    assert isinstance(result, Failure)
    assert result.failure().kind is ModelErrorKind.STREAM_INTERRUPTED


def test_stream_event_that_cannot_be_read_is_a_bad_response() -> None:
    data = b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{}}\n\n'
    _, _, failures = run_stream(data, 1000)
    assert failures == [
        WireError(
            ModelErrorKind.BAD_RESPONSE,
            "malformed Anthropic content_block_delta.index: expected a non-negative integer, "
            "got null",
        )
    ]


# -- errors -----------------------------------------------------------------------------


def err(name: str, status: int, headers: dict[str, str] | None = None) -> WireError:
    return anthropic.decode_error(status, headers or {}, fixture_bytes(name), now_unix=0.0)


def test_error_overloaded() -> None:
    error = err("anthropic/error_529_overloaded.json", 529)
    assert error == WireError(
        ModelErrorKind.OVERLOADED,
        "Overloaded",
        status=529,
        request_id="req_011CSHoEeqs5C35K2UUqR7Fy",
    )


def test_error_rate_limit_with_retry_after() -> None:
    error = err(
        "anthropic/error_429_rate_limit.json",
        429,
        {"retry-after": "12", "request-id": "req_011CRbF3MxGpBWGwC1qkUjC9"},
    )
    assert (error.kind, error.retry_after, error.request_id) == (
        ModelErrorKind.RATE_LIMIT,
        12.0,
        "req_011CRbF3MxGpBWGwC1qkUjC9",
    )


def test_error_spend_limit_without_retry_after_is_quota() -> None:
    assert err("anthropic/error_429_spend_limit.json", 429).kind is ModelErrorKind.QUOTA
    with_wait = err("anthropic/error_429_spend_limit.json", 429, {"retry-after": "5"})
    assert with_wait.kind is ModelErrorKind.RATE_LIMIT


def test_error_pairing_and_prompt_too_long() -> None:
    pairing = err("anthropic/error_400_pairing.json", 400)
    assert pairing.kind is ModelErrorKind.INVALID_REQUEST
    assert pairing.message.startswith("messages.1: `tool_use` ids were found without")
    assert pairing.request_id == "req_011CZkFHNaKTWQxx7YemGnii"
    too_long = err("anthropic/error_400_prompt_too_long.json", 400)
    assert too_long.kind is ModelErrorKind.CONTEXT_TOO_LONG


def test_error_authentication() -> None:
    error = err("anthropic/error_401_authentication.json", 401)
    assert (error.kind, error.message) == (ModelErrorKind.AUTHENTICATION, "invalid x-api-key")
