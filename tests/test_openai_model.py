"""OpenAIModel against a real loopback HTTP server (and httpx.MockTransport)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import attrs
import httpx
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    ResetServer,
    anyio_backend_fixture,
    fixture_bytes,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
    reset_server_fixture,
    sse_reply,
)

from golem_core import (
    Message,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    RetryPolicy,
    StreamDone,
    StreamEvent,
    TextDelta,
    TextPart,
    ThinkingPart,
    ToolCallDelta,
    ToolCallPart,
    ToolDefinition,
    URLPart,
    Usage,
    repair_history,
)
from golem_core.wire import openai as wire
from golem_shell import ModelError, UsageError
from golem_shell.models import Model, OpenAIModel, infer_model

pytestmark = pytest.mark.anyio

KEY = "sk-test-4f9c2a7e81d3b6055e0a9c1d7f3b2e68"
WEATHER = ToolDefinition(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)


def model(server: ProviderServer, **kw: Any) -> OpenAIModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 2.0)
    return OpenAIModel("gpt-4o-mini", api_key=KEY, base_url=f"{server.url}/v1", **kw)


def ask(text: str = "What is the capital of France?") -> ModelRequest:
    return ModelRequest((Message.user(text),), instructions="Be brief.")


async def collect(m: Model, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in m.request_stream(request)]


def expected_text() -> Message:
    return wire.decode_response(fixture_json("openai/chat_text.json")).unwrap()


# -- plain requests ---------------------------------------------------------------------


async def test_request_sends_the_exact_body_and_returns_the_message(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai/chat_text.json")))
    async with model(provider_server) as m:
        message = await m.request(ask())
    assert bare(message) == expected_text()
    assert message.model == "gpt-4o-mini-2024-07-18"
    assert message.usage == Usage(1214, 8, cache_read_tokens=1024, reasoning_tokens=0)
    assert message.finish_reason == "stop"
    assert message.created_at is None
    [sent] = provider_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    assert sent.body == (
        b'{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},'
        b'{"role":"user","content":"What is the capital of France?"}]}'
    )


async def test_tool_calls_response(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai/chat_tool_calls.json")))
    async with model(provider_server) as m:
        message = await m.request(ModelRequest((Message.user("Weather?"),), tools=(WEATHER,)))
    assert message.tool_calls == (
        ToolCallPart("call_3rqTYrA6H21AYUaRGP4F66oq", "get_weather", '{"city":"Paris"}'),
        ToolCallPart("call_Xw6O2b4ZzOC5ll3yTlHg4qPi", "get_weather", '{"city":"Zürich"}'),
    )
    assert provider_server.requests[0].json()["tools"][0]["function"]["name"] == "get_weather"


async def test_crashed_history_body(provider_server: ProviderServer) -> None:
    """A user prompt, a turn with two calls, one answered, one dangling: repaired, sent."""
    history = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            tool_calls=[
                ToolCallPart("call_1", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("call_2", "get_weather", '{"city":"Rome"}'),
            ]
        ),
        Message.tool_result("call_1", "get_weather", "18C and sunny"),
    )
    provider_server.enqueue(json_reply(fixture_json("openai/chat_text.json")))
    async with model(provider_server) as m:
        await m.request(ModelRequest(repair_history(history), tools=(WEATHER,)))
    assert provider_server.requests[0].json() == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"},
            {
                "role": "tool",
                "tool_call_id": "call_2",
                "content": "interrupted before execution; no result was produced",
            },
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parameters": {**WEATHER.parameters, "additionalProperties": False},
                    "strict": True,
                },
            }
        ],
    }


async def test_history_with_system_messages_truncated_call_failed_result_and_thinking(
    provider_server: ProviderServer,
) -> None:
    history = (
        Message.system("You are a pirate."),
        Message.user("Write notes and divide 1 by 0."),
        Message.assistant(
            "On it.",
            thinking=[ThinkingPart("plan", signature="sig-abc")],
            tool_calls=[
                ToolCallPart("call_w", "write_file", '{"path": "notes.md", "content": "# No'),
                ToolCallPart("call_d", "divide", '{"a":1,"b":0}'),
            ],
        ),
        Message.tool_result("call_w", "write_file", "not executed: arguments were truncated"),
        Message.tool_result("call_d", "divide", "ZeroDivisionError", failed=True),
    )
    provider_server.enqueue(json_reply(fixture_json("openai/chat_text.json")))
    async with model(provider_server) as m:
        await m.request(
            ModelRequest(
                repair_history(history),
                instructions="Be brief.",
                tools=(ToolDefinition("write_file"), ToolDefinition("divide")),
            )
        )
    assert provider_server.requests[0].json()["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Write notes and divide 1 by 0."},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {
                    "id": "call_w",
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": '{"truncated_args":"{\\"path\\": \\"notes.md\\", '
                        '\\"content\\": \\"# No"}',
                    },
                },
                {
                    "id": "call_d",
                    "type": "function",
                    "function": {"name": "divide", "arguments": '{"a":1,"b":0}'},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_w",
            "content": "not executed: arguments were truncated",
        },
        {"role": "tool", "tool_call_id": "call_d", "content": "ZeroDivisionError"},
    ]


async def test_settings_defaults_merge_under_the_request(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai/chat_text.json")))
    defaults = ModelSettings(max_tokens=50, temperature=0.5)
    async with model(provider_server, settings=defaults, system_role="developer") as m:
        await m.request(
            ModelRequest(
                (Message.user("Hi"),), instructions="x", settings=ModelSettings(temperature=0)
            )
        )
    sent = provider_server.requests[0].json()
    assert sent["messages"][0] == {"role": "developer", "content": "x"}
    assert (sent["max_tokens"], sent["temperature"]) == (50, 0)


# -- streams --------------------------------------------------------------------------------


async def test_stream_with_crlf_comments_and_tiny_chunks(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("openai/stream_text_crlf.sse"), chunk_size=7, delay=0.001)
    )
    async with model(provider_server) as m:
        events = await collect(m, ask())
    assert [*events[:-1], bare(events[-1])] == [
        TextDelta("The"),
        TextDelta(" capital of"),
        TextDelta(" France is"),
        TextDelta(" Paris."),
        StreamDone(expected_text()),
    ]
    sent = provider_server.requests[0]
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.json()["stream"] is True
    assert sent.json()["stream_options"] == {"include_usage": True}


async def test_stream_parallel_calls_equal_the_plain_response(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("openai/stream_tool_calls_parallel.sse"), chunk_size=13)
    )
    provider_server.enqueue(json_reply(fixture_json("openai/chat_tool_calls.json")))
    request = ModelRequest((Message.user("Weather?"),), tools=(WEATHER,))
    async with model(provider_server) as m:
        events = await collect(m, request)
        plain = await m.request(request)
    assert isinstance(events[-1], StreamDone)
    assert events[-1].message == plain
    assert sum(isinstance(e, StreamDone) for e in events) == 1
    assert events[0] == ToolCallDelta(0, "call_3rqTYrA6H21AYUaRGP4F66oq", "get_weather", "")


async def test_stream_cut_mid_arguments_raises_after_deltas_without_retry(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("openai/stream_cut_mid_arguments.sse"), chunk_size=50, cut=True),
        json_reply(fixture_json("openai/chat_text.json")),
    )
    seen: list[StreamEvent] = []
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            async for event in m.request_stream(ask()):
                seen.append(event)
    assert caught.value.kind is ModelErrorKind.STREAM_INTERRUPTED
    assert seen[0] == TextDelta("Let me check.")
    assert len(provider_server.requests) == 1  # deltas were handed out: never retried


async def test_stream_ending_without_done_is_interrupted(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes("openai/stream_cut_mid_arguments.sse")))
    async with model(provider_server, retry=RetryPolicy.never()) as m:
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.STREAM_INTERRUPTED
    assert "[DONE]" in caught.value.message


async def test_stream_failing_before_any_delta_is_retried(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("openai/stream_error.sse")),
        sse_reply(fixture_bytes("openai/stream_text_crlf.sse")),
    )
    async with model(provider_server) as m:
        events = await collect(m, ask())
    assert bare(events[-1]) == StreamDone(expected_text())
    assert len(provider_server.requests) == 2


async def test_stream_error_chunk_after_deltas_is_raised(provider_server: ProviderServer) -> None:
    data = (
        b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
        b'data: {"error":{"message":"Overloaded","type":"server_error","code":null}}\n\n'
    )
    provider_server.enqueue(sse_reply(data))
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.SERVER_ERROR
    assert caught.value.message == "Overloaded"
    assert len(provider_server.requests) == 1


async def test_stream_answered_with_an_error_status(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai/error_400_pairing.json"), 400))
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.INVALID_REQUEST
    assert caught.value.status == 400


async def test_closing_a_stream_early_releases_it(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("openai/stream_text_crlf.sse"), chunk_size=40, delay=0.01)
    )
    async with model(provider_server) as m:
        stream = m.request_stream(ask())
        first = await anext(aiter(stream))
        await stream.aclose()  # type: ignore[attr-defined]
    assert first == TextDelta("The")


# -- errors and retries ---------------------------------------------------------------------


async def test_429_with_retry_after_is_retried_after_the_wait(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        json_reply(
            fixture_json("openai/error_429_rate_limit.json"), 429, {"retry-after-ms": "150"}
        ),
        json_reply(fixture_json("openai/chat_text.json")),
    )
    async with model(provider_server) as m:
        started = time.monotonic()
        message = await m.request(ask())
        waited = time.monotonic() - started
    assert bare(message) == expected_text()
    assert len(provider_server.requests) == 2
    assert waited >= 0.15


async def test_retries_give_up_after_max_attempts(provider_server: ProviderServer) -> None:
    error = json_reply(
        fixture_json("openai/error_429_rate_limit.json"), 429, {"x-request-id": "req_abc"}
    )
    provider_server.enqueue(error, error, error, error)
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert len(provider_server.requests) == 3  # the first attempt and two retries
    assert caught.value.kind is ModelErrorKind.RATE_LIMIT
    assert caught.value.request_id == "req_abc"
    assert caught.value.provider == "openai"


async def test_insufficient_quota_is_not_retried(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(fixture_json("openai/error_429_insufficient_quota.json"), 429)
    )
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.QUOTA
    assert not caught.value.retryable
    assert len(provider_server.requests) == 1


async def test_pairing_error_keeps_the_provider_message(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai/error_400_pairing.json"), 400))
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.INVALID_REQUEST
    assert "call_5YAezpf1OoeEZ23TYnDOv2s2" in caught.value.message
    assert len(provider_server.requests) == 1


async def test_server_error_then_success(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply({"error": {"message": "The server had an error", "type": "server_error"}}, 500),
        json_reply(fixture_json("openai/chat_text.json")),
    )
    async with model(provider_server) as m:
        assert bare(await m.request(ask())) == expected_text()


async def test_a_server_that_hangs_past_the_timeout(provider_server: ProviderServer) -> None:
    hang = json_reply(fixture_json("openai/chat_text.json"))
    hang.hang = 3.0
    provider_server.enqueue(hang, json_reply(fixture_json("openai/chat_text.json")))
    async with model(
        provider_server, timeout=0.3, retry=RetryPolicy(max_attempts=1, base=0.01)
    ) as m:
        started = time.monotonic()
        message = await m.request(ask())
    assert bare(message) == expected_text()  # the timeout was retried
    assert time.monotonic() - started < 2.0
    assert len(provider_server.requests) == 2


async def test_a_stream_that_stalls_times_out(provider_server: ProviderServer) -> None:
    stalled = sse_reply(fixture_bytes("openai/stream_text_crlf.sse"), chunk_size=400, delay=3.0)
    provider_server.enqueue(stalled)
    async with model(provider_server, timeout=0.3, retry=RetryPolicy.never()) as m:
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.TIMEOUT


async def test_connection_reset(reset_server: ResetServer) -> None:
    m = OpenAIModel(
        "gpt-4o-mini",
        api_key=KEY,
        base_url=reset_server.url,
        retry=RetryPolicy(max_attempts=1, base=0.01),
    )
    async with m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.CONNECTION
    assert reset_server.connections == 2


async def test_connection_refused() -> None:
    m = OpenAIModel(
        "gpt-4o-mini", api_key=KEY, base_url="http://127.0.0.1:9", retry=RetryPolicy.never()
    )
    async with m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.CONNECTION


async def test_html_200_is_a_bad_response(provider_server: ProviderServer) -> None:
    page = json_reply(b"<html>captive portal</html>", headers={"content-type": "text/html"})
    provider_server.enqueue(page, page)
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
        assert caught.value.kind is ModelErrorKind.BAD_RESPONSE
        assert "text/html" in caught.value.message
        with pytest.raises(ModelError) as streamed:
            await collect(m, ask())
        assert streamed.value.kind is ModelErrorKind.BAD_RESPONSE
    assert len(provider_server.requests) == 2  # bad responses are not retried


async def test_json_that_is_not_a_response(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply({"choices": "nope"}), json_reply(b"{not json"))
    async with model(provider_server) as m:
        with pytest.raises(ModelError, match=r"response\.choices: expected an array"):
            await m.request(ask())
        with pytest.raises(ModelError, match="not JSON"):
            await m.request(ask())


async def test_a_body_larger_than_the_limit_is_refused(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(fixture_json("openai/chat_text.json")),
        sse_reply(fixture_bytes("openai/stream_text_crlf.sse"), chunk_size=100),
    )
    async with model(provider_server, max_response_bytes=256) as m:
        with pytest.raises(ModelError, match="larger than 256 bytes"):
            await m.request(ask())
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.BAD_RESPONSE


async def test_the_key_never_appears_in_errors_or_logs(
    provider_server: ProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}
    provider_server.enqueue(
        json_reply(echo, 500),  # retried, so it is logged
        json_reply(echo, 401),
    )
    caplog.set_level(logging.DEBUG)
    m = model(provider_server)
    async with m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    error = caught.value
    assert error.kind is ModelErrorKind.AUTHENTICATION
    assert error.message == "Incorrect API key provided: [redacted]."
    for text in (str(error), repr(error), error.message, repr(m), caplog.text):
        assert KEY not in text
    assert "retry 1 of 2" in caplog.text


# -- configuration ---------------------------------------------------------------------------


async def test_missing_key_names_the_variable_at_the_first_request() -> None:
    model = OpenAIModel("gpt-4o-mini")  # made without a key: read when first used
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        await model.request(ModelRequest(messages=(Message.user("hi"),)))


async def test_key_and_base_url_from_the_environment(
    provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{provider_server.url}/v1/")
    provider_server.enqueue(json_reply(fixture_json("openai/chat_text.json")))
    async with OpenAIModel("gpt-4o-mini") as m:
        assert m.url == f"{provider_server.url}/v1/chat/completions"
        await m.request(ask())
    assert provider_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(m)


async def test_a_local_server_needs_no_key(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai/chat_text.json")))
    async with OpenAIModel("llama3.2", base_url=f"{provider_server.url}/v1") as m:
        await m.request(ask())
    assert "authorization" not in provider_server.requests[0].headers


def test_default_base_url_and_name() -> None:
    m = OpenAIModel("gpt-4o-mini", api_key=KEY)
    assert m.url == "https://api.openai.com/v1/chat/completions"
    assert m.name == "openai:gpt-4o-mini"
    assert repr(m) == (
        "OpenAIModel('gpt-4o-mini', url='https://api.openai.com/v1/chat/completions')"
    )
    assert isinstance(m, Model)


@pytest.mark.parametrize("base_url", ["localhost:8080", "ftp://example.com"])
def test_a_base_url_must_be_http(base_url: str) -> None:
    with pytest.raises(UsageError, match="http"):
        OpenAIModel("m", base_url=base_url)


async def test_unsupported_content_travels_as_its_stand_in(
    provider_server: ProviderServer,
) -> None:
    request = ModelRequest(
        (Message.user("Watch this", URLPart("https://example.com/v.mp4", "video")),)
    )
    async with model(provider_server) as m:  # ADR 0067: sent, never refused
        for stream in (False, True):
            sent = json.loads(m._body(request, stream=stream))
            assert sent["messages"][0]["content"][1]["text"] == (
                "[video by URL (https://example.com/v.mp4): not sent,"
                " OpenAI Chat Completions cannot take it]"
            )


async def test_a_schema_that_is_not_json_is_a_usage_error(provider_server: ProviderServer) -> None:
    bad = ToolDefinition("t", parameters={"type": "object", "default": float("nan")})
    async with model(provider_server) as m:
        with pytest.raises(UsageError, match="cannot be sent as JSON"):
            await m.request(ModelRequest((Message.user("x"),), tools=(bad,)))


async def test_a_callers_client_and_mock_transport() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=fixture_json("openai/chat_text.json"))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with OpenAIModel("gpt-4o-mini", api_key=KEY, http_client=client) as m:
        message = await m.request(ask())
    assert message.text == "The capital of France is Paris."
    assert str(seen[0].url) == "https://api.openai.com/v1/chat/completions"
    assert not client.is_closed  # the caller's client stays the caller's
    await client.aclose()


async def test_an_owned_client_is_closed() -> None:
    m = OpenAIModel("gpt-4o-mini", api_key=KEY)
    client = m._http._client
    await m.aclose()
    assert client.is_closed
    assert m._http._client is not client  # a later request opens a fresh one


async def test_mock_transport_streaming_and_text_content_fallback() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=fixture_bytes("openai/stream_text_crlf.sse"),
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with OpenAIModel("gpt-4o-mini", api_key=KEY, http_client=client) as m:
        events = await collect(m, ask())
    assert bare(events[-1]) == StreamDone(expected_text())
    assert next(e for e in events if isinstance(e, TextDelta)) == TextDelta("The")
    assert TextPart("The capital of France is Paris.") in expected_text().parts
    await client.aclose()


def test_infer_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    openai_model = infer_model("openai:gpt-4o-mini")
    assert isinstance(openai_model, OpenAIModel)
    assert openai_model.name == "openai:gpt-4o-mini"
    assert infer_model("anthropic:claude-sonnet-4-5").name == "anthropic:claude-sonnet-4-5"
    assert infer_model(openai_model) is openai_model
    with pytest.raises(UsageError, match="unknown model 'frobco:frob-large'"):
        infer_model("frobco:frob-large")
    with pytest.raises(UsageError, match="'anthropic:', 'gemini:', 'google:'"):
        infer_model("gpt-4o-mini")
    with pytest.raises(UsageError, match="names no model"):
        infer_model("openai:")


def bare(value: Any) -> Any:
    """A message (or the ``StreamDone`` holding one) without the origin the adapter
    records (ADR 0085) and the model it asked for, to compare with what the pure
    decoder reads from a fixture."""
    if isinstance(value, StreamDone):
        return attrs.evolve(value, message=bare(value.message))
    extra = tuple((k, v) for k, v in value.extra if k != "askedModel")
    return attrs.evolve(value, provider=None, endpoint=None, asked_model=None, extra=extra)
