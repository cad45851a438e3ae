"""golem_core.wire.openai: exact request bodies, responses, stream chunks and errors."""

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
    openai,
)

WEATHER = ToolDefinition(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WEATHER_WIRE = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {  # closed for strict mode (ADR 0130)
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


def body(request: ModelRequest, *, stream: bool = False, **kw: Any) -> dict[str, Any]:
    match openai.encode_request(request, model="gpt-4o-mini", stream=stream, **kw):
        case Success(value):
            result: dict[str, Any] = value
            return result
        case Failure(error):
            raise AssertionError(error)
    raise AssertionError("unreachable")


def refusal(request: ModelRequest) -> WireError:
    result = openai.encode_request(request, model="gpt-4o-mini", stream=False)
    assert isinstance(result, Failure), result
    error: WireError = result.failure()
    return error


# -- requests ------------------------------------------------------------------------


def test_instructions_lead_as_one_system_message() -> None:
    request = ModelRequest((Message.user("Hi"),), instructions="Be brief.")
    assert body(request) == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
    }
    assert body(request, system_role="developer")["messages"][0] == {
        "role": "developer",
        "content": "Be brief.",
    }


def test_system_messages_in_the_history_are_never_sent() -> None:
    request = ModelRequest(
        (Message.system("old prompt"), Message.user("Hi"), Message.system("injected")),
        instructions="Current prompt.",
    )
    assert body(request)["messages"] == [
        {"role": "system", "content": "Current prompt."},
        {"role": "user", "content": "Hi"},
    ]


def test_no_instructions_no_system_message() -> None:
    assert body(ModelRequest((Message.user("Hi"),)))["messages"] == [
        {"role": "user", "content": "Hi"}
    ]


def test_user_media_parts() -> None:
    message = Message.user(
        "Describe these.",
        URLPart("https://example.com/cat.png", "image"),
        DataPart(b"\x89PNG", "image", "image/png"),
        DataPart(b"%PDF-1.4", "document", "application/pdf"),
        DataPart(b"RIFF", "audio", "audio/wav"),
        DataPart(b"ID3", "audio", "audio/mpeg"),
    )
    assert body(ModelRequest((message,)))["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe these."},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
                {
                    "type": "file",
                    "file": {
                        "filename": "document.pdf",
                        "file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
                    },
                },
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("part", "what"),
    [
        (URLPart("https://example.com/v.mp4", "video"), "video by URL (https://example.com/v.mp4)"),
        (URLPart("https://example.com/a.mp3", "audio"), "audio by URL (https://example.com/a.mp3)"),
        (URLPart("https://x/d.pdf", "document"), "document by URL (https://x/d.pdf)"),
        (DataPart(b"x", "video", "video/mp4"), "video (video/mp4, 1 byte)"),
        (DataPart(b"x", "audio", "audio/ogg"), "audio (audio/ogg, 1 byte)"),
        (DataPart(b"abc", "document", "text/plain"), "document (text/plain, 3 bytes)"),
        (DataPart(b"<svg/>", "image", "image/svg+xml"), "image (image/svg+xml, 6 bytes)"),
    ],
)
def test_content_openai_cannot_take_is_sent_as_its_stand_in(
    part: URLPart | DataPart, what: str
) -> None:
    """ADR 0067: never a refusal that bricks the conversation; the model reads what was there."""
    request = ModelRequest((Message.user("a"), Message.assistant("b"), Message.user("look", part)))
    assert body(request)["messages"][2]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": f"[{what}: not sent, OpenAI Chat Completions cannot take it]"},
    ]


def test_media_in_an_assistant_message_is_sent_as_its_stand_in() -> None:
    message = Message(Role.ASSISTANT, (URLPart("https://x/y.png", "image"),))
    assert body(ModelRequest((message,)))["messages"] == [
        {
            "role": "assistant",
            "content": "[image by URL (https://x/y.png): not sent,"
            " OpenAI Chat Completions cannot take it]",
        }
    ]


def test_empty_text_is_dropped_and_an_empty_message_is_not_sent() -> None:
    request = ModelRequest(
        (
            Message(Role.USER, (TextPart(""), TextPart("a"), TextPart(""))),
            Message(Role.USER, (TextPart(""), UnknownPart("future"))),
            Message(Role.USER, (TextPart("b"), TextPart("c"))),
        )
    )
    assert body(request)["messages"] == [
        {"role": "user", "content": "a"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "b"}, {"type": "text", "text": "c"}],
        },
    ]


def _calls() -> tuple[ToolCallPart, ToolCallPart]:
    return (
        ToolCallPart("call_1", "get_weather", '{ "city" : "Zürich" }'),
        ToolCallPart("call_2", "get_weather", '{"city":"Rome"}'),
    )


def test_assistant_tool_calls_send_compact_utf8_arguments() -> None:
    assistant = Message.assistant(
        "Checking.",
        tool_calls=_calls(),
        thinking=[ThinkingPart("hmm", signature="sig")],
    )
    request = ModelRequest(
        (
            Message.user("Weather?"),
            assistant,
            Message.tool_result("call_1", "get_weather", "18C"),
            Message.tool_result("call_2", "get_weather", "21C"),
        ),
        tools=(WEATHER,),
    )
    assert body(request)["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Zürich"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "21C"},
    ]


def test_content_is_null_beside_tool_calls_without_text() -> None:
    assistant = Message(Role.ASSISTANT, (ToolCallPart("call_1", "get_weather", "{}"),))
    request = ModelRequest(
        (assistant, Message.tool_result("call_1", "get_weather", "ok")), tools=(WEATHER,)
    )
    assert body(request)["messages"][0] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"},
            }
        ],
    }


def test_truncated_call_is_sent_as_truncated_args() -> None:
    cut = ToolCallPart("call_9", "get_weather", '{"city": "Par')
    request = ModelRequest(
        (Message.assistant(tool_calls=[cut]), Message.tool_result("call_9", "get_weather", "x")),
        tools=(WEATHER,),
    )
    call = body(request)["messages"][0]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"truncated_args":"{\\"city\\": \\"Par"}'
    assert cut.arguments == '{"city": "Par'  # the history is untouched


def test_thinking_only_assistant_message_and_unknown_parts_are_not_sent() -> None:
    request = ModelRequest(
        (
            Message.user("a"),
            Message(Role.ASSISTANT, (ThinkingPart("private", signature="s"), UnknownPart("x"))),
            Message.user("b"),
        )
    )
    assert body(request)["messages"] == [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
    ]


def test_failed_tool_result_keeps_its_text() -> None:
    request = ModelRequest(
        (
            Message.assistant(tool_calls=[ToolCallPart("call_1", "divide", '{"a":1,"b":0}')]),
            Message.tool_result(
                "call_1", "divide", "ZeroDivisionError: division by zero", failed=True
            ),
        ),
        tools=(ToolDefinition("divide"),),
    )
    assert body(request)["messages"][1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "ZeroDivisionError: division by zero",
    }


def test_tool_media_follows_the_run_of_tool_messages_as_one_user_message() -> None:
    chart = DataPart(b"\x89PNG", "image", "image/png")
    request = ModelRequest(
        (
            Message.assistant(
                tool_calls=[ToolCallPart("c1", "plot", "{}"), ToolCallPart("c2", "plot", "{}")]
            ),
            Message.tool_result("c1", "plot", [chart]),
            Message.tool_result("c2", "plot", [TextPart("second"), chart]),
            Message.user("Compare them."),
        ),
        tools=(ToolDefinition("plot"),),
    )
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
    assert body(request)["messages"][1:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "(attachments follow in the next user message)",
        },
        {"role": "tool", "tool_call_id": "c2", "content": "second"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attachments of the result of tool call c1:"},
                image,
                {"type": "text", "text": "Attachments of the result of tool call c2:"},
                image,
            ],
        },
        {"role": "user", "content": "Compare them."},
    ]


def test_without_tools_calls_and_results_are_text() -> None:
    request = ModelRequest(
        (
            Message.user("Weather?"),
            Message.assistant("Checking.", tool_calls=_calls()),
            Message.tool_result("call_1", "get_weather", "18C"),
            Message.tool_result("call_2", "get_weather", "timeout", failed=True),
            Message.user("Summarize the conversation."),
        )
    )
    assert body(request)["messages"] == [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.\n"
            '[tool call get_weather (id call_1)] {"city":"Zürich"}\n'
            '[tool call get_weather (id call_2)] {"city":"Rome"}',
        },
        {"role": "user", "content": "[tool result get_weather (id call_1)] 18C"},
        {"role": "user", "content": "[tool error get_weather (id call_2)] timeout"},
        {"role": "user", "content": "Summarize the conversation."},
    ]


def test_calls_without_id_and_results_without_call_id_are_not_sent() -> None:
    request = ModelRequest(
        (
            Message.assistant("x", tool_calls=[ToolCallPart(None, "get_weather", "{}")]),
            Message.tool_result(None, "get_weather", "orphan"),
        ),
        tools=(WEATHER,),
    )
    assert body(request)["messages"] == [{"role": "assistant", "content": "x"}]


def test_settings_tools_and_stream_options() -> None:
    request = ModelRequest(
        (Message.user("Hi"),),
        tools=(WEATHER,),
        tool_choice_required=True,
        settings=ModelSettings(
            max_tokens=100, temperature=0.2, top_p=0.9, stop=("END",), parallel_tool_calls=False
        ),
    )
    assert body(request, stream=True) == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [WEATHER_WIRE],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "max_tokens": 100,
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["END"],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_tool_settings_need_tools() -> None:
    request = ModelRequest(
        (Message.user("Hi"),),
        tool_choice_required=True,
        settings=ModelSettings(parallel_tool_calls=True),
    )
    assert body(request) == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi"}],
    }


def test_tool_without_description() -> None:
    request = ModelRequest((Message.user("Hi"),), tools=(ToolDefinition("now"),))
    assert body(request)["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "now",
                "parameters": {
                    "type": "object",
                    "properties": {},
                    "required": [],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        }
    ]


def test_crashed_history_repaired_then_encoded() -> None:
    history = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            tool_calls=[
                ToolCallPart("call_1", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("call_2", "get_weather", '{"city":"Rome"}'),
            ]
        ),
        Message.tool_result("call_1", "get_weather", "18C"),
    )
    request = ModelRequest(repair_history(history), tools=(WEATHER,))
    assert body(request)["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": "interrupted before execution; no result was produced",
        },
    ]


def test_encoding_is_deterministic() -> None:
    request = ModelRequest(
        (Message.user("Hi"), Message.assistant(tool_calls=_calls())),
        tools=(WEATHER,),
        instructions="x",
    )
    first = json.dumps(body(request))
    assert all(json.dumps(body(request)) == first for _ in range(3))


# -- responses -------------------------------------------------------------------------


def decode(payload: object) -> Message:
    result = openai.decode_response(payload)
    assert isinstance(result, Success), result
    message: Message = result.unwrap()
    return message


def decode_failure(payload: object) -> WireError:
    result = openai.decode_response(payload)
    assert isinstance(result, Failure), result
    error: WireError = result.failure()
    return error


def test_decode_text_response() -> None:
    assert decode(fixture_json("openai/chat_text.json")) == Message(
        Role.ASSISTANT,
        (TextPart("The capital of France is Paris."),),
        model="gpt-4o-mini-2024-07-18",
        usage=Usage(input_tokens=1214, output_tokens=8, cache_read_tokens=1024, reasoning_tokens=0),
        finish_reason="stop",
    )


def test_decode_tool_calls_keeps_raw_arguments() -> None:
    message = decode(fixture_json("openai/chat_tool_calls.json"))
    assert message.parts == (
        ToolCallPart("call_3rqTYrA6H21AYUaRGP4F66oq", "get_weather", '{"city":"Paris"}'),
        ToolCallPart("call_Xw6O2b4ZzOC5ll3yTlHg4qPi", "get_weather", '{"city":"Zürich"}'),
    )
    assert message.finish_reason == "tool_calls"
    assert message.usage == Usage(82, 48, cache_read_tokens=0, reasoning_tokens=0)


def test_decode_keeps_invalid_argument_bytes() -> None:
    payload = fixture_json("openai/chat_tool_calls.json")
    payload["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": "Pa'
    assert decode(payload).tool_calls[0].arguments == '{"city": "Pa'


def test_decode_refusal_is_text() -> None:
    message = decode(fixture_json("openai/chat_refusal.json"))
    assert message.parts == (TextPart("I'm very sorry, but I can't assist with that."),)
    assert message.finish_reason == "stop"
    assert message.usage == Usage(79, 12)


def test_decode_reasoning_content_of_compatible_servers() -> None:
    payload = {
        "model": "deepseek-reasoner",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2"},
                "finish_reason": "stop",
            }
        ],
    }
    message = decode(payload)
    assert message.parts == (ThinkingPart("2+2"), TextPart("4"))
    assert message.usage is None


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ([], "malformed OpenAI response: expected an object, got an array"),
        ({"id": "x"}, "malformed OpenAI response.choices: required field is missing"),
        ({"choices": {}}, "malformed OpenAI response.choices: expected an array, got an object"),
        ({"choices": []}, "malformed OpenAI response.choices: no choice with index 0"),
        (
            {"choices": [{"index": 0, "message": {"content": 3}}]},
            "malformed OpenAI response.choices[0].message.content: expected a string, got a number",
        ),
        (
            {"choices": [{"index": 0, "message": {"tool_calls": [{"id": "c", "function": {}}]}}]},
            "malformed OpenAI response.choices[0].message.tool_calls[0].function.name: "
            "required field is missing",
        ),
    ],
)
def test_decode_malformed_bodies_name_the_path(payload: object, reason: str) -> None:
    error = decode_failure(payload)
    assert error.kind is ModelErrorKind.BAD_RESPONSE
    assert error.message == reason


def test_decode_an_error_body_with_status_200() -> None:
    error = decode_failure(fixture_json("openai/error_429_rate_limit.json"))
    assert error.kind is ModelErrorKind.RATE_LIMIT


# -- streams ----------------------------------------------------------------------------


def run_stream(
    data: bytes, chunk: int = 1
) -> tuple[openai.StreamDecoder, list[ModelDelta], list[WireError]]:
    decoder = openai.StreamDecoder()
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
        ("openai/stream_text_crlf.sse", "openai/chat_text.json"),
        ("openai/stream_tool_calls_parallel.sse", "openai/chat_tool_calls.json"),
    ],
)
@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 100_000])
def test_stream_equals_the_response_at_any_chunking(stream: str, response: str, chunk: int) -> None:
    decoder, _, failures = run_stream(fixture_bytes(stream), chunk)
    assert failures == []
    assert decoder.finish() == Success(decode(fixture_json(response)))


def test_stream_text_deltas() -> None:
    _, deltas, _ = run_stream(fixture_bytes("openai/stream_text_crlf.sse"), 5)
    assert deltas == [
        TextDelta("The"),
        TextDelta(" capital of"),
        TextDelta(" France is"),
        TextDelta(" Paris."),
    ]


def test_parallel_call_fragments_interleave_by_index() -> None:
    decoder, deltas, _ = run_stream(fixture_bytes("openai/stream_tool_calls_parallel.sse"), 11)
    assert deltas[:4] == [
        ToolCallDelta(0, "call_3rqTYrA6H21AYUaRGP4F66oq", "get_weather", ""),
        ToolCallDelta(1, "call_Xw6O2b4ZzOC5ll3yTlHg4qPi", "get_weather", ""),
        ToolCallDelta(0, arguments='{"'),
        ToolCallDelta(1, arguments='{"ci'),
    ]
    assert decoder.finish_reason == "tool_calls"
    assert decoder.model == "gpt-4o-mini-2024-07-18"


def test_stream_cut_mid_arguments_is_interrupted_and_keeps_the_bytes() -> None:
    decoder, _, failures = run_stream(fixture_bytes("openai/stream_cut_mid_arguments.sse"))
    assert failures == []
    result = decoder.finish()
    assert isinstance(result, Failure)
    assert result.failure().kind is ModelErrorKind.STREAM_INTERRUPTED
    assert decoder.message().parts == (
        TextPart("Let me check."),
        ToolCallPart("call_GzF3uYvC0nT4S5yBvqkPmVvP", "get_weather", '{"city":"Par'),
    )


def test_stream_error_chunk_fails() -> None:
    _, _, failures = run_stream(fixture_bytes("openai/stream_error.sse"))
    assert failures == [
        WireError(
            ModelErrorKind.SERVER_ERROR,
            "The server had an error while processing your request. Sorry about that!",
        )
    ]


def test_stream_chunk_that_is_not_json_is_a_bad_response() -> None:
    _, _, failures = run_stream(b"data: {not json\n\n")
    assert [f.kind for f in failures] == [ModelErrorKind.BAD_RESPONSE]
    assert failures[0].message.startswith("malformed OpenAI stream chunk: not valid JSON")


def test_stream_usage_takes_the_last_report_never_a_sum() -> None:
    chunks = [
        {"model": "m", "choices": [{"index": 0, "delta": {"content": "a"}}], "usage": None},
        {"model": "m", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1}},
        {"model": "m", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
    ]
    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    decoder, _, _ = run_stream(data.encode(), 1000)
    assert decoder.usage == Usage(10, 5)
    assert decoder.finish() == Success(
        Message(Role.ASSISTANT, (TextPart("a"),), model="m", usage=Usage(10, 5))
    )


def test_events_after_done_are_ignored() -> None:
    data = b'data: [DONE]\n\ndata: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\n'
    decoder, deltas, failures = run_stream(data, 1000)
    assert (deltas, failures) == ([], [])
    assert decoder.done


# -- errors -----------------------------------------------------------------------------


def err(name: str, status: int, headers: dict[str, str] | None = None) -> WireError:
    return openai.decode_error(status, headers or {}, fixture_bytes(name), now_unix=0.0)


def test_error_rate_limit_with_retry_after() -> None:
    error = err(
        "openai/error_429_rate_limit.json",
        429,
        {"retry-after": "2", "x-request-id": "req_8a1b2c3d4e5f60718293a4b5c6d7e8f9"},
    )
    assert error.kind is ModelErrorKind.RATE_LIMIT
    assert error.retry_after == 2.0
    assert error.status == 429
    assert error.request_id == "req_8a1b2c3d4e5f60718293a4b5c6d7e8f9"
    assert error.message.startswith("Rate limit reached for gpt-4o-mini")


def test_error_insufficient_quota_is_quota() -> None:
    assert err("openai/error_429_insufficient_quota.json", 429).kind is ModelErrorKind.QUOTA


def test_error_pairing_keeps_the_provider_message() -> None:
    error = err("openai/error_400_pairing.json", 400)
    assert error.kind is ModelErrorKind.INVALID_REQUEST
    assert error.message == fixture_json("openai/error_400_pairing.json")["error"]["message"]


def test_error_context_length() -> None:
    assert err("openai/error_400_context_length.json", 400).kind is ModelErrorKind.CONTEXT_TOO_LONG


def test_error_invalid_key() -> None:
    assert err("openai/error_401_invalid_key.json", 401).kind is ModelErrorKind.AUTHENTICATION


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (403, ModelErrorKind.PERMISSION),
        (404, ModelErrorKind.NOT_FOUND),
        (408, ModelErrorKind.TIMEOUT),
        (409, ModelErrorKind.SERVER_ERROR),
        (422, ModelErrorKind.INVALID_REQUEST),
        (500, ModelErrorKind.SERVER_ERROR),
        (502, ModelErrorKind.SERVER_ERROR),
        (503, ModelErrorKind.OVERLOADED),
    ],
)
def test_error_kinds_by_status(status: int, kind: ModelErrorKind) -> None:
    assert openai.decode_error(status, {}, b"", now_unix=None).kind is kind


def test_error_body_that_is_not_json() -> None:
    error = openai.decode_error(502, {}, b"<html><body>Bad Gateway</body></html>", now_unix=None)
    assert error.kind is ModelErrorKind.SERVER_ERROR
    assert error.message == "OpenAI answered HTTP 502: <html><body>Bad Gateway</body></html>"
    empty = openai.decode_error(500, {}, b"", now_unix=None)
    assert empty.message == "OpenAI answered HTTP 500 with an empty body"


def test_error_of_a_compatible_server_with_a_string_error() -> None:
    error = openai.decode_error(404, {}, b'{"error":"model \'llama9\' not found"}', now_unix=None)
    assert (error.kind, error.message) == (ModelErrorKind.NOT_FOUND, "model 'llama9' not found")
