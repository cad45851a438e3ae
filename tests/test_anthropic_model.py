"""AnthropicModel against a real loopback HTTP server (and httpx.MockTransport)."""

from __future__ import annotations

import json
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
    DataPart,
    Message,
    ModelErrorKind,
    ModelRequest,
    ModelSettings,
    RetryPolicy,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    Usage,
    repair_history,
)
from golem_core.wire import anthropic as wire
from golem_core.wire._cache import strip_cache_markers
from golem_shell import ModelError, UsageError
from golem_shell.models import AnthropicModel, Model

pytestmark = pytest.mark.anyio

KEY = "sk-ant-api03-7d1e9b3c5a2f4e6081b9c3d5e7f9a1b2"
WEATHER = ToolDefinition(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)
SIGNATURE = fixture_json("anthropic/message_thinking_tool_use.json")["content"][0]["signature"]
REDACTED = fixture_json("anthropic/message_thinking_tool_use.json")["content"][1]["data"]


def model(server: ProviderServer, **kw: Any) -> AnthropicModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 2.0)
    return AnthropicModel("claude-sonnet-4-5", api_key=KEY, base_url=server.url, **kw)


def ask(text: str = "What is the capital of France?") -> ModelRequest:
    return ModelRequest((Message.user(text),), instructions="Be brief.")


async def collect(m: Model, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in m.request_stream(request)]


def decoded(name: str) -> Message:
    return wire.decode_response(fixture_json(name)).unwrap()


# -- plain requests ---------------------------------------------------------------------


async def test_request_sends_the_exact_body_and_headers(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("anthropic/message_text.json")))
    async with model(provider_server) as m:
        message = await m.request(ask())
    assert bare(message) == decoded("anthropic/message_text.json")
    assert message.usage == Usage(2112, 9, cache_read_tokens=2000, cache_write_tokens=100)
    assert (message.model, message.finish_reason) == ("claude-sonnet-4-5-20250929", "end_turn")
    [sent] = provider_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body == (
        b'{"model":"claude-sonnet-4-5","max_tokens":4096,"system":[{"type":"text",'
        b'"text":"Be brief.","cache_control":{"type":"ephemeral"}}],'
        b'"messages":[{"role":"user","content":[{"type":"text",'
        b'"text":"What is the capital of France?","cache_control":{"type":"ephemeral"}}]}]}'
    )


async def test_crashed_history_body(provider_server: ProviderServer) -> None:
    """A user prompt, a turn with two calls, one answered, one dangling: repaired, sent."""
    history = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            tool_calls=[
                ToolCallPart("toolu_01A", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("toolu_01B", "get_weather", '{"city":"Rome"}'),
            ]
        ),
        Message.tool_result("toolu_01A", "get_weather", "18C and sunny"),
    )
    provider_server.enqueue(json_reply(fixture_json("anthropic/message_text.json")))
    async with model(provider_server) as m:
        await m.request(ModelRequest(repair_history(history), tools=(WEATHER,)))
    assert strip_cache_markers(provider_server.requests[0].json()) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01A",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_01B",
                        "name": "get_weather",
                        "input": {"city": "Rome"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "18C and sunny"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01B",
                        "content": "interrupted before execution; no result was produced",
                    },
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "The weather in a city.",
                "input_schema": {**WEATHER.parameters, "additionalProperties": False},
                "strict": True,
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
            thinking=[
                ThinkingPart("plan", signature=SIGNATURE),
                ThinkingPart(REDACTED, redacted=True),
            ],
            tool_calls=[
                ToolCallPart("toolu_w", "write_file", '{"path": "notes.md", "content": "# No'),
                ToolCallPart("toolu_d", "divide", '{"a":1,"b":0}'),
            ],
        ),
        Message.tool_result("toolu_w", "write_file", "not executed: arguments were truncated"),
        Message.tool_result("toolu_d", "divide", "ZeroDivisionError", failed=True),
        Message.system("Another system message."),
        Message.user("Well?"),
    )
    provider_server.enqueue(json_reply(fixture_json("anthropic/message_text.json")))
    async with model(provider_server) as m:
        await m.request(
            ModelRequest(
                repair_history(history),
                instructions="Be brief.",
                tools=(ToolDefinition("write_file"), ToolDefinition("divide")),
            )
        )
    sent = strip_cache_markers(provider_server.requests[0].json())
    assert sent["system"] == "Be brief."
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Write notes and divide 1 by 0."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": REDACTED},
                {"type": "text", "text": "On it."},
                {
                    "type": "tool_use",
                    "id": "toolu_w",
                    "name": "write_file",
                    "input": {"truncated_args": '{"path": "notes.md", "content": "# No'},
                },
                {"type": "tool_use", "id": "toolu_d", "name": "divide", "input": {"a": 1, "b": 0}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_w",
                    "content": "not executed: arguments were truncated",
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_d",
                    "content": "ZeroDivisionError",
                    "is_error": True,
                },
                {"type": "text", "text": "Well?"},
            ],
        },
    ]


async def test_max_tokens_default_and_settings(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(fixture_json("anthropic/message_text.json")),
        json_reply(fixture_json("anthropic/message_text.json")),
    )
    async with model(provider_server, max_tokens=512, settings=ModelSettings(temperature=0.3)) as m:
        await m.request(ask())
        await m.request(ModelRequest((Message.user("x"),), settings=ModelSettings(max_tokens=7)))
    first, second = (r.json() for r in provider_server.requests)
    assert (first["max_tokens"], first["temperature"]) == (512, 0.3)
    assert (second["max_tokens"], second["temperature"]) == (7, 0.3)


# -- streams --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "response"),
    [
        ("anthropic/stream_text_crlf.sse", "anthropic/message_text.json"),
        ("anthropic/stream_thinking_tool_use.sse", "anthropic/message_thinking_tool_use.json"),
    ],
)
async def test_stream_equals_the_plain_response(
    provider_server: ProviderServer, stream: str, response: str
) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes(stream), chunk_size=17, delay=0.001),
        json_reply(fixture_json(response)),
    )
    async with model(provider_server) as m:
        events = await collect(m, ask())
        plain = await m.request(ask())
    assert events[-1] == StreamDone(plain)
    assert sum(isinstance(e, StreamDone) for e in events) == 1
    assert provider_server.requests[0].json()["stream"] is True
    assert provider_server.requests[0].headers["accept"] == "text/event-stream"


async def test_stream_thinking_deltas(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes("anthropic/stream_thinking_tool_use.sse")))
    async with model(provider_server) as m:
        events = await collect(m, ask())
    assert events[:2] == [
        ThinkingDelta("", 0),
        ThinkingDelta("The user wants the weather in Zürich.", 0),
    ]
    assert ThinkingDelta("", 0, signature=SIGNATURE) in events
    assert ThinkingDelta(REDACTED, 1, redacted=True) in events


async def test_max_tokens_mid_tool_call_is_kept_verbatim(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("anthropic/stream_max_tokens_mid_tool.sse"), chunk_size=31)
    )
    async with model(provider_server) as m:
        events = await collect(m, ask())
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.message.finish_reason == "max_tokens"
    call = done.message.tool_calls[0]
    assert call.arguments == '{"path": "notes.md", "content": "# Notes\\n\\nFirst li'
    assert not call.arguments_valid


async def test_overloaded_error_event_before_any_delta_is_retried(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("anthropic/stream_error_overloaded.sse")),
        sse_reply(fixture_bytes("anthropic/stream_text.sse")),
    )
    async with model(provider_server) as m:
        events = await collect(m, ask())
    assert bare(events[-1]) == StreamDone(decoded("anthropic/message_text.json"))
    assert len(provider_server.requests) == 2


async def test_overloaded_error_event_when_out_of_retries(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes("anthropic/stream_error_overloaded.sse")))
    async with model(provider_server, retry=RetryPolicy.never()) as m:
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.OVERLOADED
    assert caught.value.request_id == "req_011CSHoEeqs5C35K2UUqR7Fy"


async def test_a_connection_lost_mid_stream(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("anthropic/stream_cut.sse"), chunk_size=64, cut=True)
    )
    seen: list[StreamEvent] = []
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            async for event in m.request_stream(ask()):
                seen.append(event)
    assert caught.value.kind is ModelErrorKind.STREAM_INTERRUPTED
    assert seen == [TextDelta("The capital", 0)]
    assert len(provider_server.requests) == 1


async def test_a_stream_ending_without_message_stop(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes("anthropic/stream_cut.sse")))
    async with model(provider_server) as m:
        with pytest.raises(ModelError, match="before message_stop") as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.STREAM_INTERRUPTED


# -- errors and retries ---------------------------------------------------------------------


async def test_529_overloaded_is_retried(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(fixture_json("anthropic/error_529_overloaded.json"), 529),
        json_reply(fixture_json("anthropic/message_text.json")),
    )
    async with model(provider_server) as m:
        assert bare(await m.request(ask())) == decoded("anthropic/message_text.json")
    assert len(provider_server.requests) == 2


async def test_429_with_retry_after_waits(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(
            fixture_json("anthropic/error_429_rate_limit.json"), 429, {"retry-after": "0.2"}
        ),
        json_reply(fixture_json("anthropic/message_text.json")),
    )
    async with model(provider_server) as m:
        started = time.monotonic()
        await m.request(ask())
    assert time.monotonic() - started >= 0.2
    assert len(provider_server.requests) == 2


async def test_spend_limit_is_quota_and_not_retried(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("anthropic/error_429_spend_limit.json"), 429))
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.QUOTA
    assert len(provider_server.requests) == 1


async def test_pairing_error(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(
            fixture_json("anthropic/error_400_pairing.json"),
            400,
            {"request-id": "req_011CZkFHNaKTWQxx7YemGnii"},
        )
    )
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    error = caught.value
    assert (error.kind, error.status, error.request_id) == (
        ModelErrorKind.INVALID_REQUEST,
        400,
        "req_011CZkFHNaKTWQxx7YemGnii",
    )
    assert "toolu_01HWLQbwAa5e2BJwdX1nreqa" in error.message
    assert "[request req_011CZkFHNaKTWQxx7YemGnii]" in str(error)


async def test_prompt_too_long(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(fixture_json("anthropic/error_400_prompt_too_long.json"), 400)
    )
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.CONTEXT_TOO_LONG


async def test_a_server_that_hangs_past_the_timeout(provider_server: ProviderServer) -> None:
    hang = sse_reply(fixture_bytes("anthropic/stream_text.sse"))
    hang.hang = 3.0
    provider_server.enqueue(hang)
    async with model(provider_server, timeout=0.3, retry=RetryPolicy.never()) as m:
        started = time.monotonic()
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.TIMEOUT
    assert time.monotonic() - started < 2.0


async def test_connection_reset(reset_server: ResetServer) -> None:
    m = AnthropicModel(
        "claude-sonnet-4-5", api_key=KEY, base_url=reset_server.url, retry=RetryPolicy.never()
    )
    async with m:
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.CONNECTION
    assert reset_server.connections == 1


async def test_the_key_never_appears_in_errors(provider_server: ProviderServer) -> None:
    echo = {"type": "error", "error": {"type": "authentication_error", "message": f"bad {KEY}"}}
    provider_server.enqueue(json_reply(echo, 401))
    m = model(provider_server)
    async with m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.AUTHENTICATION
    for text in (str(caught.value), repr(caught.value), repr(m)):
        assert KEY not in text


# -- configuration ---------------------------------------------------------------------------


async def test_missing_key_names_the_variable_at_the_first_request() -> None:
    model = AnthropicModel("claude-sonnet-4-5")  # made without a key: read when first used
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        await model.request(ModelRequest(messages=(Message.user("hi"),)))


async def test_key_and_base_url_from_the_environment(
    provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider_server.url)
    provider_server.enqueue(json_reply(fixture_json("anthropic/message_text.json")))
    async with AnthropicModel("claude-sonnet-4-5") as m:
        assert m.url == f"{provider_server.url}/v1/messages"
        await m.request(ask())
    assert provider_server.requests[0].headers["x-api-key"] == KEY


def test_default_base_url_and_name() -> None:
    m = AnthropicModel("claude-sonnet-4-5", api_key=KEY)
    assert m.url == "https://api.anthropic.com/v1/messages"
    assert m.name == "anthropic:claude-sonnet-4-5"
    assert KEY not in repr(m)
    assert isinstance(m, Model)


async def test_audio_travels_as_its_stand_in(provider_server: ProviderServer) -> None:
    request = ModelRequest((Message.user("Listen", DataPart(b"RIFF", "audio", "audio/wav")),))
    async with model(provider_server) as m:  # ADR 0067: sent, never refused
        sent = strip_cache_markers(json.loads(m._body(request, stream=False)))
    assert sent["messages"][0]["content"][1] == {
        "type": "text",
        "text": "[audio (audio/wav, 4 bytes): not sent, Anthropic cannot take it]",
    }


async def test_mock_transport() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["x-api-key"] == KEY
        return httpx.Response(200, json=fixture_json("anthropic/message_thinking_tool_use.json"))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with AnthropicModel("claude-sonnet-4-5", api_key=KEY, http_client=client) as m:
        message = await m.request(ask())
    assert bare(message) == decoded("anthropic/message_thinking_tool_use.json")
    assert not client.is_closed
    await client.aclose()


def bare(value: Any) -> Any:
    """A message (or the ``StreamDone`` holding one) without the origin the adapter
    records (ADR 0085) and the model it asked for, to compare with what the pure
    decoder reads from a fixture."""
    if isinstance(value, StreamDone):
        return attrs.evolve(value, message=bare(value.message))
    extra = tuple((k, v) for k, v in value.extra if k != "askedModel")
    return attrs.evolve(value, provider=None, endpoint=None, asked_model=None, extra=extra)
