"""golem_core.wire.openai_responses: exact request bodies, responses, stream events, errors."""

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
    decode_history,
    encode_history,
    repair_history,
)
from golem_core.wire import (
    SSEDecoder,
    StreamAccumulator,
    WireError,
)
from golem_core.wire import openai_responses as wire

F = "openai_responses/"
WEATHER = ToolDefinition(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WEATHER_WIRE = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {**WEATHER.parameters, "additionalProperties": False},  # ADR 0130
    "strict": True,
}
ENC = "gAAAAABoyXvynDJ_tG_Xp4Uzjn4eVm80xJOnBKO9"
REASONED = wire.reasoning_part("rs_0050471a34b36ae6", ["**Plan**\n\nCall the tool."], ENC)


def body(request: ModelRequest, *, stream: bool = False, **kw: Any) -> dict[str, Any]:
    match wire.encode_request(request, model="gpt-5", stream=stream, **kw):
        case Success(value):
            result: dict[str, Any] = value
            return result
        case Failure(error):
            raise AssertionError(error)
    raise AssertionError("unreachable")


def refusal(request: ModelRequest, **kw: Any) -> WireError:
    result = wire.encode_request(request, model="gpt-5", stream=False, **kw)
    assert isinstance(result, Failure), result
    error: WireError = result.failure()
    return error


def decode(name: str) -> Message:
    result = wire.decode_response(fixture_json(F + name))
    assert isinstance(result, Success), result
    message: Message = result.unwrap()
    return message


# -- requests ------------------------------------------------------------------------


def test_a_prompt_with_instructions() -> None:
    request = ModelRequest((Message.system("old"), Message.user("Hi")), instructions="Be brief.")
    assert body(request) == {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": "Hi"}],
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    assert "include" not in body(request, encrypted_reasoning=False)


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("gpt-5", True),
        ("gpt-5-mini", True),
        ("o3", True),
        ("o4-mini", True),
        ("gpt-5-chat-latest", False),
        ("gpt-4o-mini", False),
        ("gpt-4.1", False),
    ],
)
def test_encrypted_reasoning_follows_the_model(model: str, reasoning: bool) -> None:
    assert wire.supports_encrypted_reasoning(model) is reasoning
    sent = wire.encode_request(ModelRequest((Message.user("x"),)), model=model, stream=False)
    assert ("include" in sent.unwrap()) is reasoning


def test_user_media_and_refusals() -> None:
    message = Message.user(
        "Describe these.",
        URLPart("https://example.com/cat.png", "image"),
        DataPart(b"\x89PNG", "image", "image/png"),
        DataPart(b"%PDF-1.4", "document", "application/pdf"),
        URLPart("https://example.com/d.pdf", "document"),
    )
    assert body(ModelRequest((message,)))["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Describe these."},
                {
                    "type": "input_image",
                    "image_url": "https://example.com/cat.png",
                    "detail": "auto",
                },
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,iVBORw==",
                    "detail": "auto",
                },
                {
                    "type": "input_file",
                    "filename": "document.pdf",
                    "file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
                },
                {"type": "input_file", "file_url": "https://example.com/d.pdf"},
            ],
        }
    ]
    for part, what in [  # ADR 0067: sent as a stand-in, never refused
        (URLPart("https://example.com/v.mp4", "video"), "video by URL (https://example.com/v.mp4)"),
        (DataPart(b"x", "audio", "audio/wav"), "audio (audio/wav, 1 byte)"),
        (DataPart(b"xy", "image", "image/tiff"), "image (image/tiff, 2 bytes)"),
    ]:
        sent = body(ModelRequest((Message.user("a"), Message.user("look", part))))["input"][1]
        assert sent["content"] == [
            {"type": "input_text", "text": "look"},
            {"type": "input_text", "text": f"[{what}: not sent, OpenAI Responses cannot take it]"},
        ]
    media = Message(Role.ASSISTANT, (URLPart("https://x/y.png", "image"),))
    assert body(ModelRequest((media,)))["input"] == [
        {
            "role": "assistant",
            "content": "[image by URL (https://x/y.png): not sent,"
            " OpenAI Responses cannot take it]",
        }
    ]


def test_stop_sequences_do_not_exist_in_this_api() -> None:
    error = refusal(ModelRequest((Message.user("x"),), settings=ModelSettings(stop=("END",))))
    assert error.kind is ModelErrorKind.UNSUPPORTED_CONTENT
    assert "settings.stop" in error.message


def test_a_tool_round_trip_with_reasoning_replayed() -> None:
    history = (
        Message.user("Weather in Paris?"),
        Message(
            Role.ASSISTANT,
            (
                REASONED,
                TextPart("Checking."),
                ToolCallPart("call_1", "get_weather", '{ "city" : "Zürich" }'),
            ),
        ),
        Message.tool_result("call_1", "get_weather", "18C"),
    )
    request = ModelRequest(history, instructions="Be brief.", tools=(WEATHER,))
    assert body(request) == {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "reasoning",
                "id": "rs_0050471a34b36ae6",
                "summary": [{"type": "summary_text", "text": "**Plan**\n\nCall the tool."}],
                "encrypted_content": ENC,
            },
            {"role": "assistant", "content": "Checking."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Zürich"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
        ],
        "tools": [WEATHER_WIRE],
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    # a model without encrypted reasoning never sees the item
    items = body(request, encrypted_reasoning=False)["input"]
    assert [i.get("type", i.get("role")) for i in items] == [
        "user",
        "assistant",
        "function_call",
        "function_call_output",
    ]


def test_calls_come_after_the_turns_text_so_each_is_answered_first() -> None:
    turn = Message(
        Role.ASSISTANT,
        (
            ToolCallPart("c1", "get_weather", "{}"),
            TextPart("and also"),
            ToolCallPart("c2", "get_weather", "{}"),
        ),
    )
    request = ModelRequest(
        (
            turn,
            Message.tool_result("c1", "get_weather", "a"),
            Message.tool_result("c2", "get_weather", "b"),
        ),
        tools=(WEATHER,),
    )
    kinds = [(i.get("type") or i["role"], i.get("call_id")) for i in body(request)["input"]]
    assert kinds == [
        ("assistant", None),
        ("function_call", "c1"),
        ("function_call", "c2"),
        ("function_call_output", "c1"),
        ("function_call_output", "c2"),
    ]


def test_reasoning_with_nothing_after_it_and_foreign_thinking_are_not_sent() -> None:
    request = ModelRequest(
        (
            Message.user("a"),
            Message(Role.ASSISTANT, (REASONED,)),  # nothing follows it in its turn
            Message(
                Role.ASSISTANT, (ThinkingPart("plan", signature="anthropic-sig"), TextPart("x"))
            ),
            Message(Role.ASSISTANT, (ThinkingPart("data", redacted=True), TextPart("y"))),
            Message(
                Role.ASSISTANT,
                (ThinkingPart("reasoning_content of a compatible server"), TextPart("z")),
            ),
            Message(Role.ASSISTANT, (TextPart("w"), REASONED)),  # trailing
            Message(Role.USER, (TextPart(""), UnknownPart("future"))),
            Message.user("b"),
        )
    )
    assert body(request)["input"] == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "x"},
        {"role": "assistant", "content": "y"},
        {"role": "assistant", "content": "z"},
        {"role": "assistant", "content": "w"},
        {"role": "user", "content": "b"},
    ]


def test_truncated_arguments_failed_results_and_tool_media() -> None:
    cut = ToolCallPart("call_9", "get_weather", '{"city": "Par')
    chart = DataPart(b"\x89PNG", "image", "image/png")
    request = ModelRequest(
        (
            Message.assistant(tool_calls=[cut, ToolCallPart("call_p", "plot", "{}")]),
            Message.tool_result("call_9", "get_weather", "not executed: truncated", failed=True),
            Message.tool_result("call_p", "plot", [TextPart("chart:"), chart]),
        ),
        tools=(WEATHER, ToolDefinition("plot")),
    )
    items = body(request)["input"]
    assert items[0]["arguments"] == '{"truncated_args":"{\\"city\\": \\"Par"}'
    assert cut.arguments == '{"city": "Par'  # the history is untouched
    assert items[2] == {
        "type": "function_call_output",
        "call_id": "call_9",
        "output": "not executed: truncated",
    }
    assert items[3]["output"] == [
        {"type": "input_text", "text": "chart:"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"},
    ]


def test_call_ids_openai_refuses_are_renamed_on_the_wire_only() -> None:
    long_id = "functions.get_weather:0/" + "x" * 60
    history = (
        Message.assistant(tool_calls=[ToolCallPart(long_id, "get_weather", "{}")]),
        Message.tool_result(long_id, "get_weather", "a"),
        Message.assistant(tool_calls=[ToolCallPart("call_0", "get_weather", "{}")]),
        Message.tool_result("call_0", "get_weather", "b"),
        Message.assistant(tool_calls=[ToolCallPart("call_0", "get_weather", "{}")]),
        Message.tool_result("call_0", "get_weather", "c"),
    )
    items = body(ModelRequest(history, tools=(WEATHER,)))["input"]
    ids = [i["call_id"] for i in items]
    assert len(ids[0]) == 64 and ids[0] == ids[1]
    assert ids[2:] == ["call_0", "call_0", "call_0_2", "call_0_2"]
    assert history[0].tool_calls[0].id == long_id


def test_a_turn_repeating_an_id_answers_every_call() -> None:
    turn = Message.assistant(
        tool_calls=[ToolCallPart("x", "get_weather", "{}"), ToolCallPart("x", "get_weather", "{}")]
    )
    items = body(ModelRequest(repair_history((turn,)), tools=(WEATHER,)))["input"]
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    outputs = [i["call_id"] for i in items if i["type"] == "function_call_output"]
    assert len(set(calls)) == 2 and sorted(calls) == sorted(outputs)


def test_without_tools_calls_and_results_are_text() -> None:
    request = ModelRequest(
        (
            Message.user("Weather?"),
            Message.assistant(
                "Checking.", tool_calls=[ToolCallPart("c1", "get_weather", '{"city":"Rome"}')]
            ),
            Message.tool_result("c1", "get_weather", "timeout", failed=True),
        )
    )
    assert body(request, encrypted_reasoning=False)["input"] == [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": 'Checking.\n[tool call get_weather (id c1)] {"city":"Rome"}',
        },
        {"role": "user", "content": "[tool error get_weather (id c1)] timeout"},
    ]
    after = Message(Role.ASSISTANT, (ToolCallPart("c2", "now", "{}"), TextPart("Done.")))
    assert body(ModelRequest((after,)))["input"] == [
        {"role": "assistant", "content": "[tool call now (id c2)] {}\nDone."}
    ]


def test_settings_tools_reasoning_and_stream() -> None:
    request = ModelRequest(
        (Message.user("Hi"),),
        tools=(ToolDefinition("now"),),
        tool_choice_required=True,
        settings=ModelSettings(
            max_tokens=100, temperature=0.2, top_p=0.9, parallel_tool_calls=False
        ),
    )
    assert body(request, stream=True, reasoning={"effort": "low"}) == {
        "model": "gpt-5",
        "input": [{"role": "user", "content": "Hi"}],
        "tools": [
            {
                "type": "function",
                "name": "now",
                "parameters": {
                    "type": "object",
                    "properties": {},
                    "required": [],
                    "additionalProperties": False,
                },
                "strict": True,
            }
        ],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "max_output_tokens": 100,
        "temperature": 0.2,
        "top_p": 0.9,
        "reasoning": {"effort": "low"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": True,
    }


def test_encoding_is_deterministic() -> None:
    request = ModelRequest(
        (Message.user("Hi"), Message(Role.ASSISTANT, (REASONED, ToolCallPart("c", "now", "{}")))),
        tools=(ToolDefinition("now"),),
        instructions="x",
    )
    first = json.dumps(body(request))
    assert all(json.dumps(body(request)) == first for _ in range(3))


# -- the reasoning part (ADR 0049) ------------------------------------------------------------


def test_a_reasoning_part_survives_storage_and_no_other_encoder_replays_it() -> None:
    message = decode("response_reasoning_function_calls.json")
    thinking = message.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.signature is None and not thinking.redacted
    stored = json.loads(encode_history([message]))
    assert (
        stored[0]["parts"][0]["openaiReasoningId"]
        == "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"
    )
    assert stored[0]["parts"][0]["openaiEncryptedContent"].startswith("gAAAAAB")
    (back,) = decode_history(encode_history([message])).unwrap()
    assert back == message
    item = wire.reasoning_item(back.parts[0])  # type: ignore[arg-type]
    assert item is not None and item["encrypted_content"] == thinking_extra(thinking)


def thinking_extra(part: ThinkingPart) -> str:
    return str(json.loads(dict(part.extra)[wire.ENCRYPTED_CONTENT_KEY]))


# -- responses ----------------------------------------------------------------------------


def test_decode_text() -> None:
    assert decode("response_text.json") == Message(
        Role.ASSISTANT,
        (TextPart("The capital of France is Paris."),),
        model="gpt-4o-2024-08-06",
        usage=Usage(1214, 8, cache_read_tokens=1024, cache_write_tokens=0, reasoning_tokens=0),
        finish_reason="completed",
    )


def test_decode_parallel_function_calls_keep_raw_arguments() -> None:
    assert decode("response_function_calls_parallel.json").parts == (
        ToolCallPart("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_weather", '{"city":"Paris"}'),
        ToolCallPart("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_weather", '{"city":"Zürich"}'),
    )


def test_decode_reasoning_with_encrypted_content_and_usage() -> None:
    message = decode("response_reasoning_function_calls.json")
    output = fixture_json(F + "response_reasoning_function_calls.json")["output"]
    assert message.parts[0] == wire.reasoning_part(
        output[0]["id"], [s["text"] for s in output[0]["summary"]], output[0]["encrypted_content"]
    )
    assert message.parts[0].text.startswith("**Checking the weather**")  # type: ignore[union-attr]
    assert "\n\n**Calling in parallel**" in message.parts[0].text  # type: ignore[union-attr]
    assert [c.id for c in message.tool_calls] == [
        "call_CWXgs68YprAjp6t0371hiPOI",
        "call_Xw6O2b4ZzOC5ll3yTlHg4qPi",
    ]
    assert message.usage == Usage(
        1290, 362, cache_read_tokens=1152, cache_write_tokens=138, reasoning_tokens=320
    )


def test_a_refusal_is_text_with_finish_reason_refusal() -> None:
    message = decode("response_refusal.json")
    assert message.parts == (TextPart("I'm sorry, but I can't help with that."),)
    assert message.finish_reason == "refusal"


def test_incomplete_answers_keep_what_came_and_say_why() -> None:
    message = decode("response_incomplete_max_output_tokens.json")
    assert message.finish_reason == "max_output_tokens"
    assert message.text.endswith("1. Find a")
    cut = decode("response_incomplete_mid_arguments.json")
    assert cut.finish_reason == "max_output_tokens"
    assert cut.tool_calls == (
        ToolCallPart("call_3rqTYrA6H21AYUaRGP4F66oq", "get_weather", '{"city":"Par'),
    )
    assert not cut.tool_calls[0].arguments_valid  # the loop answers it, never runs it (ADR 0026)


def test_a_failed_response_is_its_error() -> None:
    result = wire.decode_response(fixture_json(F + "response_failed.json"))
    assert isinstance(result, Failure)
    assert result.failure().kind is ModelErrorKind.SERVER_ERROR
    assert result.failure().message.startswith("The model produced invalid content.")
    error_body = wire.decode_response(fixture_json(F + "error_429_insufficient_quota.json"))
    assert error_body.failure().kind is ModelErrorKind.QUOTA  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ([], "malformed OpenAI Responses response: expected an object, got an array"),
        ({"id": "x"}, "malformed OpenAI Responses response.output: required field is missing"),
        (
            {"output": {}},
            "malformed OpenAI Responses response.output: expected an array, got an object",
        ),
        (
            {"status": "queued", "output": []},
            "malformed OpenAI Responses response.status: expected a finished response,"
            " got 'queued'",
        ),
        (
            {"output": [{"type": "function_call", "name": "f"}]},
            "malformed OpenAI Responses response.output[0].call_id: required field is missing",
        ),
        (
            {"output": [{"type": "message", "content": [{"type": "output_text", "text": 3}]}]},
            "malformed OpenAI Responses response.output[0].content[0].text: expected a string,"
            " got a number",
        ),
    ],
)
def test_malformed_bodies_name_the_path(payload: object, reason: str) -> None:
    result = wire.decode_response(payload)
    assert isinstance(result, Failure)
    assert (result.failure().kind, result.failure().message) == (
        ModelErrorKind.BAD_RESPONSE,
        reason,
    )


def test_hosted_tool_items_are_not_part_of_the_contract() -> None:
    payload = fixture_json(F + "response_text.json")
    payload["output"].insert(0, {"type": "web_search_call", "id": "ws_1", "status": "completed"})
    assert decode_payload(payload).parts == (TextPart("The capital of France is Paris."),)


def decode_payload(payload: object) -> Message:
    message: Message = wire.decode_response(payload).unwrap()
    return message


# -- streams ----------------------------------------------------------------------------


def run_stream(
    data: bytes, chunk: int = 1
) -> tuple[wire.StreamDecoder, list[ModelDelta], list[WireError]]:
    decoder = wire.StreamDecoder()
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


PAIRS = [
    ("stream_text.sse", "response_text.json"),
    ("stream_function_calls_parallel.sse", "response_function_calls_parallel.json"),
    ("stream_reasoning_function_calls.sse", "response_reasoning_function_calls.json"),
    ("stream_refusal.sse", "response_refusal.json"),
    ("stream_incomplete_mid_arguments.sse", "response_incomplete_mid_arguments.json"),
]


@pytest.mark.parametrize(("stream", "response"), PAIRS)
@pytest.mark.parametrize("chunk", [1, 3, 64, 100_000])
def test_a_stream_equals_the_response_at_any_chunking(
    stream: str, response: str, chunk: int
) -> None:
    decoder, _, failures = run_stream(fixture_bytes(F + stream), chunk)
    assert failures == []
    assert decoder.done
    assert decoder.finish() == Success(decode(response))


@pytest.mark.parametrize(("stream", "response"), PAIRS)
def test_the_deltas_build_the_same_parts(stream: str, response: str) -> None:
    _, deltas, _ = run_stream(fixture_bytes(F + stream), 100_000)

    built = StreamAccumulator().add_all(deltas).parts
    expected = decode(response).parts
    assert [type(p) for p in built] == [type(p) for p in expected]
    for got, want in zip(built, expected, strict=True):
        if isinstance(want, ToolCallPart):
            assert got == want
        else:
            assert got.text == want.text  # type: ignore[union-attr]


def test_stream_deltas() -> None:
    _, deltas, _ = run_stream(fixture_bytes(F + "stream_reasoning_function_calls.sse"), 100_000)
    assert deltas[0] == ThinkingDelta("", 0)
    assert ToolCallDelta(1, "call_CWXgs68YprAjp6t0371hiPOI", "get_weather", "") in deltas
    assert ToolCallDelta(2, arguments='{"ci') in deltas
    separators = [d for d in deltas if isinstance(d, ThinkingDelta) and d.text.startswith("\n\n")]
    assert len(separators) == 1  # between the two summaries
    _, text, _ = run_stream(fixture_bytes(F + "stream_text.sse"), 100_000)
    assert text == [
        TextDelta("The"),
        TextDelta(" capital of"),
        TextDelta(" France is"),
        TextDelta(" Paris."),
    ]


def test_a_stream_cut_mid_arguments_is_interrupted_and_keeps_the_bytes() -> None:
    decoder, _, failures = run_stream(fixture_bytes(F + "stream_cut_mid_arguments.sse"), 5)
    assert failures == []
    result = decoder.finish()
    assert isinstance(result, Failure)
    assert result.failure().kind is ModelErrorKind.STREAM_INTERRUPTED
    assert "response.completed" in result.failure().message
    assert decoder.message().parts == (
        TextPart("Let me check."),
        ToolCallPart("call_GzF3uYvC0nT4S5yBvqkPmVvP", "get_weather", '{"city":"Par'),
    )


@pytest.mark.parametrize(
    ("name", "kind", "start"),
    [
        ("stream_error.sse", ModelErrorKind.SERVER_ERROR, "The server had an error"),
        ("stream_error_before_output.sse", ModelErrorKind.RATE_LIMIT, "Rate limit reached"),
        ("stream_failed.sse", ModelErrorKind.SERVER_ERROR, "The model produced invalid content."),
    ],
)
def test_errors_in_a_stream_fail_it(name: str, kind: ModelErrorKind, start: str) -> None:
    decoder, _, failures = run_stream(fixture_bytes(F + name), 100_000)
    assert [f.kind for f in failures] == [kind]
    assert failures[0].message.startswith(start)
    assert not decoder.done


def test_an_error_event_with_a_nested_error_and_unknown_codes() -> None:
    data = (
        b'event: error\ndata: {"type":"error","error":{"type":"invalid_request_error",'
        b'"code":"context_length_exceeded","message":"Your input exceeds the context window."}}\n\n'
    )
    _, _, failures = run_stream(data, 1000)
    assert [f.kind for f in failures] == [ModelErrorKind.CONTEXT_TOO_LONG]
    _, _, invalid = run_stream(
        b'event: error\ndata: {"type":"error","code":"invalid_prompt","message":"no"}\n\n', 1000
    )
    assert [f.kind for f in invalid] == [ModelErrorKind.INVALID_REQUEST]


def test_an_event_that_is_not_json_is_a_bad_response() -> None:
    _, _, failures = run_stream(b"event: response.output_text.delta\ndata: {not json\n\n", 1000)
    assert [f.kind for f in failures] == [ModelErrorKind.BAD_RESPONSE]
    assert "OpenAI Responses" in failures[0].message


def test_events_after_the_end_are_ignored_and_unknown_events_too() -> None:
    data = fixture_bytes(F + "stream_text.sse") + (
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
        b'"output_index":0,"delta":"late"}\n\n'
    )
    data = b'event: response.future_thing\ndata: {"type":"response.future_thing"}\n\n' + data
    decoder, deltas, failures = run_stream(data, 1000)
    assert failures == [] and TextDelta("late") not in deltas
    assert decoder.finish() == Success(decode("response_text.json"))


def test_a_completed_event_without_output_uses_the_done_items() -> None:
    raw = fixture_bytes(F + "stream_function_calls_parallel.sse").decode()
    head, _, last = raw.rstrip("\n").rpartition("\n\n")
    event = json.loads(last.split("data: ", 1)[1])
    event["response"]["output"] = []
    data = (head + "\n\nevent: response.completed\ndata: " + json.dumps(event) + "\n\n").encode()
    decoder, _, _ = run_stream(data, 1000)
    assert decoder.finish() == Success(decode("response_function_calls_parallel.json"))


# -- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "status", "kind"),
    [
        ("error_400_invalid_request.json", 400, ModelErrorKind.INVALID_REQUEST),
        ("error_400_context_length.json", 400, ModelErrorKind.CONTEXT_TOO_LONG),
        ("error_400_encrypted_content_unsupported.json", 400, ModelErrorKind.INVALID_REQUEST),
        ("error_401_invalid_key.json", 401, ModelErrorKind.AUTHENTICATION),
        ("error_429_rate_limit.json", 429, ModelErrorKind.RATE_LIMIT),
        ("error_429_insufficient_quota.json", 429, ModelErrorKind.QUOTA),
        ("error_500_server.json", 500, ModelErrorKind.SERVER_ERROR),
        ("error_503_overloaded.json", 503, ModelErrorKind.OVERLOADED),
    ],
)
def test_every_error_class(name: str, status: int, kind: ModelErrorKind) -> None:
    error = wire.decode_error(
        status,
        {"x-request-id": "req_8a1b", "retry-after": "2"},
        fixture_bytes(F + name),
        now_unix=0.0,
    )
    assert (error.kind, error.status, error.request_id) == (kind, status, "req_8a1b")
    assert error.message == fixture_json(F + name)["error"]["message"]
    assert error.retry_after == 2.0
    assert error.kind.retryable is (
        kind in {ModelErrorKind.RATE_LIMIT, ModelErrorKind.SERVER_ERROR, ModelErrorKind.OVERLOADED}
    )


def test_an_error_body_that_is_not_json() -> None:
    error = wire.decode_error(502, {}, b"<html>Bad Gateway</html>", now_unix=None)
    assert error.message == "OpenAI Responses answered HTTP 502: <html>Bad Gateway</html>"


# -- a terminal event that lists no output: the stream's own items (issue 33, item 10) ---------


def _events_sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _cut_response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        **fixture_json(F + "response_text.json"),
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": output,
    }


def test_a_call_cut_before_its_done_event_stays_in_the_call_list() -> None:
    first = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "arguments": '{"city":"Paris"}',
        "call_id": "call_1",
        "name": "get_weather",
    }
    second = {
        **first,
        "id": "fc_2",
        "call_id": "call_2",
        "status": "incomplete",
        "arguments": '{"city":"Ro',
    }
    opened = {**second, "arguments": "", "status": "in_progress"}
    events = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**first, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": first["arguments"],
        },
        {"type": "response.output_item.done", "output_index": 0, "item": first},
        {"type": "response.output_item.added", "output_index": 1, "item": opened},
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "fc_2",
            "delta": '{"city":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "fc_2",
            "delta": '"Ro',
        },
        {
            "type": "response.incomplete",
            "response": {k: v for k, v in _cut_response([]).items() if k != "output"},
        },
    ]
    decoder, _, failures = run_stream(_events_sse(events), 1000)
    assert failures == []
    streamed = decoder.finish().unwrap()
    assert [(c.id, c.arguments) for c in streamed.tool_calls] == [
        ("call_1", '{"city":"Paris"}'),
        ("call_2", '{"city":"Ro'),
    ]
    assert streamed == wire.decode_response(_cut_response([first, second])).unwrap()


def test_a_message_cut_before_its_done_event_keeps_its_phase_and_refusal() -> None:
    item = {
        "id": "msg_1",
        "type": "message",
        "status": "incomplete",
        "role": "assistant",
        "phase": "commentary",
        "content": [
            {"type": "output_text", "annotations": [], "logprobs": [], "text": "Let me"},
            {"type": "refusal", "refusal": " no."},
        ],
    }
    ids = {"item_id": "msg_1", "output_index": 0}
    events = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {
            "type": "response.content_part.added",
            **ids,
            "content_index": 0,
            "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
        },
        {
            "type": "response.output_text.delta",
            **ids,
            "content_index": 0,
            "delta": "Let ",
            "logprobs": [],
        },
        {
            "type": "response.output_text.delta",
            **ids,
            "content_index": 0,
            "delta": "me",
            "logprobs": [],
        },
        {
            "type": "response.content_part.added",
            **ids,
            "content_index": 1,
            "part": {"type": "refusal", "refusal": ""},
        },
        {"type": "response.refusal.delta", **ids, "content_index": 1, "delta": " no."},
        {
            "type": "response.incomplete",
            "response": {k: v for k, v in _cut_response([]).items() if k != "output"},
        },
    ]
    decoder, _, failures = run_stream(_events_sse(events), 1000)
    assert failures == []
    streamed = decoder.finish().unwrap()
    assert streamed == wire.decode_response(_cut_response([item])).unwrap()
    assert streamed.finish_reason == "refusal"
    assert streamed.parts[0].extra == ((wire.PHASE_KEY, '"commentary"'),)
