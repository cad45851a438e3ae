"""OpenAIResponsesModel against the real loopback HTTP server: the README's (and the
conversations guide's) tour, a tool round trip with reasoning kept across turns, streams in
byte and random chunkings, resume after a crash, sync calls in a row, history from
Anthropic, errors and retries."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    Reply,
    anyio_backend_fixture,
    fixture_bytes,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
    sse_reply,
)

from golem_core import (
    INTERRUPTED_RESULT_TEXT,
    Message,
    ModelErrorKind,
    ModelRequest,
    RetryPolicy,
    Role,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    URLPart,
    decode_history,
    encode_history,
)
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import openai as openai_wire
from golem_core.wire import openai_responses as wire
from golem_shell import Agent, ModelError, OpenAIResponsesModel, UsageError, tool
from golem_shell.models import Model, infer_model

F = "openai_responses/"
KEY = "sk-resp-4f9c2a7e81d3b6055e0a9c1d7f3b2e68"
FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)
WEATHER = ToolDefinition(
    "get_weather",
    "The weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
README = Path(__file__).resolve().parent.parent / "README.md"
GUIDE = README.parent / "docs" / "guides" / "conversations.md"


def model(server: ProviderServer, name: str = "gpt-5", **kw: Any) -> OpenAIResponsesModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 2.0)
    return OpenAIResponsesModel(name, api_key=KEY, base_url=f"{server.url}/v1", **kw)


def ask(text: str = "What is the capital of France?") -> ModelRequest:
    return ModelRequest((Message.user(text),), instructions="Be brief.")


def expected(name: str) -> Message:
    message: Message = wire.decode_response(fixture_json(F + name)).unwrap()
    return message


async def collect(m: Model, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in m.request_stream(request)]


def text_reply(text: str) -> Reply:
    body = fixture_json(F + "response_text.json")
    body["output"][0]["content"][0]["text"] = text
    return json_reply(body)


def call_reply(city: str, call_id: str, *, reasoning: bool = False) -> Reply:
    body = fixture_json(F + "response_reasoning_function_calls.json")
    item = body["output"][1]
    item.update(call_id=call_id, arguments=json.dumps({"city": city}))
    body["output"] = [body["output"][0], item] if reasoning else [item]
    return json_reply(body)


@tool
def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: the city's name.
    """
    return f"18 C in {city}"


# -- plain requests ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_request_sends_the_exact_body_and_returns_the_message(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(json_reply(fixture_json(F + "response_text.json")))
    async with model(provider_server, "gpt-4o-mini") as m:
        message = await m.request(ask())
    assert bare(message) == expected("response_text.json")
    [sent] = provider_server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/responses")
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body == (
        b'{"model":"gpt-4o-mini","instructions":"Be brief.","input":[{"role":"user",'
        b'"content":"What is the capital of France?"}],"store":false}'
    )


@pytest.mark.anyio
async def test_reasoning_is_kept_and_sent_back_on_the_next_turn(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(call_reply("Paris", "call_r1", reasoning=True), text_reply("18 C"))
    async with model(provider_server, reasoning_effort="low") as m:
        agent = Agent(m, instructions="Be brief.", tools=[get_weather])
        result = await agent.run("Weather in Paris?")
    assert result.output == "18 C"
    first, second = (r.json() for r in provider_server.requests)
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"effort": "low"} and first["store"] is False
    reasoning_item = second["input"][1]
    assert reasoning_item["type"] == "reasoning"
    assert reasoning_item["id"] == "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"
    assert reasoning_item["encrypted_content"].startswith("gAAAAAB")
    assert [i.get("type") for i in second["input"][2:]] == ["function_call", "function_call_output"]
    assert second["input"][3] == {
        "type": "function_call_output",
        "call_id": "call_r1",
        "output": "18 C in Paris",
    }
    # the conversation survives storage with its reasoning, and replays the same bytes
    stored = decode_history(encode_history(result.messages)).unwrap()
    assert stored == result.messages
    thinking = next(p for m in stored for p in m.parts if isinstance(p, ThinkingPart))
    assert wire.reasoning_item(thinking) == reasoning_item


# -- streams --------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["text", "reasoning_function_calls", "function_calls_parallel"])
async def test_streams_in_byte_and_random_chunkings_equal_the_plain_response(
    provider_server: ProviderServer, name: str
) -> None:
    data = fixture_bytes(F + f"stream_{name}.sse")
    rng = random.Random(name)
    cuts = sorted(rng.sample(range(1, len(data)), 40))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    provider_server.enqueue(
        sse_reply(data, chunk_size=1),
        Reply(headers={"content-type": "text/event-stream"}, chunks=pieces),
    )
    plain = expected(f"response_{name}.json")
    async with model(provider_server) as m:
        for _ in range(2):
            events = await collect(m, ask())
            assert bare(events[-1]) == StreamDone(plain)
            assert sum(isinstance(e, StreamDone) for e in events) == 1
    assert provider_server.requests[0].json()["stream"] is True
    assert provider_server.requests[0].headers["accept"] == "text/event-stream"


@pytest.mark.anyio
async def test_a_stream_cut_mid_arguments_raises_after_deltas_without_retry(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes(F + "stream_cut_mid_arguments.sse"), chunk_size=50, cut=True),
        json_reply(fixture_json(F + "response_text.json")),
    )
    seen: list[StreamEvent] = []
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            async for event in m.request_stream(ask()):
                seen.append(event)
    assert caught.value.kind is ModelErrorKind.STREAM_INTERRUPTED
    assert seen[0] == TextDelta("Let me", 0)
    assert len(provider_server.requests) == 1


@pytest.mark.anyio
async def test_stream_errors_before_output_are_retried_after_output_raised(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes(F + "stream_error_before_output.sse")),
        sse_reply(fixture_bytes(F + "stream_text.sse")),
        sse_reply(fixture_bytes(F + "stream_failed.sse")),
    )
    async with model(provider_server) as m:
        events = await collect(m, ask())
        assert bare(events[-1]) == StreamDone(expected("response_text.json"))
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.SERVER_ERROR
    assert len(provider_server.requests) == 3  # the failure after a delta is not retried


@pytest.mark.anyio
async def test_an_incomplete_stream_is_a_message_whose_cut_call_is_never_run(
    provider_server: ProviderServer,
) -> None:
    ran: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Weather.

        Args:
            city: the city.
        """
        ran.append(city)
        return "sunny"

    provider_server.enqueue(
        sse_reply(fixture_bytes(F + "stream_incomplete_mid_arguments.sse"), chunk_size=9),
        sse_reply(fixture_bytes(F + "stream_text.sse")),
    )
    async with model(provider_server) as m:
        result = await Agent(m, tools=[get_weather]).run_stream("Weather?", on_delta=lambda e: None)
    assert ran == []
    turn = next(m for m in result.messages if m.tool_calls)
    assert turn.tool_calls[0].arguments == '{"city":"Par'
    assert turn.finish_reason == "max_output_tokens"
    second = provider_server.requests[1].json()["input"]
    assert second[1]["arguments"] == '{"truncated_args":"{\\"city\\":\\"Par"}'
    assert second[2]["type"] == "function_call_output"


# -- agent runs -------------------------------------------------------------------------------


def test_resume_after_a_crash_repairs_a_history_cut_after_a_tool_call(
    provider_server: ProviderServer,
) -> None:
    crashed = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            tool_calls=[
                ToolCallPart("call_1", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("call_2", "get_weather", '{"city":"Rome"}'),
            ]
        ),
        Message.tool_result("call_1", "get_weather", "18 C in Paris"),
    )
    stored = encode_history(crashed)  # what a crashed process left behind
    provider_server.enqueue(text_reply("Paris 18 C; Rome unknown"))
    agent = Agent(model(provider_server), tools=[get_weather])
    result = agent.run_with_history_sync(decode_history(stored).unwrap(), None)
    assert result.output == "Paris 18 C; Rome unknown"
    sent = provider_server.requests[0].json()["input"]
    assert sent[-2:] == [
        {"type": "function_call_output", "call_id": "call_1", "output": "18 C in Paris"},
        {"type": "function_call_output", "call_id": "call_2", "output": INTERRUPTED_RESULT_TEXT},
    ]


def test_two_sync_calls_in_a_row_on_one_agent(
    provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", provider_server.url + "/v1")
    agent = Agent("openai-responses:gpt-5", instructions="Be terse.", tools=[get_weather])
    for round_no in range(3):
        provider_server.enqueue(
            call_reply("Paris", f"call_s{round_no}"), text_reply(f"sunny {round_no}")
        )
        assert agent.run_sync("Weather in Paris?").output == f"sunny {round_no}"
        provider_server.enqueue(sse_reply(fixture_bytes(F + "stream_text.sse"), chunk_size=7))
        streamed = agent.run_stream_sync("Say hi", on_delta=lambda _: None)
        assert streamed.output == "The capital of France is Paris."
    assert len(provider_server.requests) == 9
    assert {r.path for r in provider_server.requests} == {"/v1/responses"}


def tour_sources() -> list[tuple[Path, str]]:
    """The README's short tour and the whole one of the conversations guide (issue 45
    item 6): they make the same requests, so one script of replies serves both."""
    found = []
    for path in (README, GUIDE):
        text = path.read_text(encoding="utf-8")
        match = re.search(r"## A short tour\s+```python\n(.*?)```", text, re.S)
        assert match is not None, f"{path.name} has no tour"
        found.append((path, match.group(1)))
    return found


def test_the_readme_tour_runs_twice_in_a_row(
    provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", provider_server.url + "/v1")
    for path, source in tour_sources():
        assert '"openai:gpt-4o-mini"' in source
        source = source.replace('"openai:gpt-4o-mini"', '"openai-responses:gpt-5"', 1)
        for round_no in range(2):
            provider_server.enqueue(
                call_reply("Paris", f"call_t{round_no}", reasoning=True),
                text_reply("18 C in Paris"),
                text_reply("Oslo: 5 C"),
                text_reply("Starting over"),
                text_reply("went"),
            )
            namespace: dict[str, Any] = {"__name__": f"tour_{round_no}"}
            exec(compile(source, str(path), "exec"), namespace)  # the tour as written
            assert namespace["first"].output == "18 C in Paris"
            assert namespace["fork"].conversation_id != namespace["follow"].conversation_id
    assert not provider_server.replies, "the tour made fewer requests than scripted"
    follow = provider_server.requests[2].json()["input"]  # "And in Oslo?" with the history
    assert [i.get("type", i.get("role")) for i in follow] == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
    ]


def test_a_conversation_stored_under_anthropic_continues_on_responses_and_back(
    provider_server: ProviderServer,
) -> None:
    anthropic_turn = anthropic_wire.decode_response(
        fixture_json("anthropic/message_thinking_tool_use.json")
    ).unwrap()
    call = anthropic_turn.tool_calls[0]
    history = (
        Message.user("What is the weather?"),
        anthropic_turn,
        Message.tool_result(call.id, call.name, "18 C"),
        Message.assistant("It is 18 C."),
    )
    stored = encode_history(history)
    provider_server.enqueue(
        call_reply("Rome", "call_rome", reasoning=True), text_reply("Rome: 21 C")
    )
    agent = Agent(model(provider_server), tools=[get_weather])
    result = agent.run_with_history_sync(decode_history(stored).unwrap(), "And in Rome?")
    assert result.output == "Rome: 21 C"
    sent = provider_server.requests[0].json()["input"]
    assert sent == [  # Anthropic's signed and redacted thinking is not sent to OpenAI
        {"role": "user", "content": "What is the weather?"},
        {"role": "assistant", "content": "I'll check the weather."},
        {
            "type": "function_call",
            "call_id": "toolu_01HWLQbwAa5e2BJwdX1nreqa",
            "name": "get_weather",
            "arguments": '{"city":"Zürich","unit":"celsius"}',
        },
        {
            "type": "function_call_output",
            "call_id": "toolu_01HWLQbwAa5e2BJwdX1nreqa",
            "output": "18 C",
        },
        {"role": "assistant", "content": "It is 18 C."},
        {"role": "user", "content": "And in Rome?"},
    ]
    # ... and the Responses turn (with its encrypted reasoning) goes back to Anthropic
    back = anthropic_wire.encode_request(
        ModelRequest(result.messages[1:], tools=(WEATHER,)), model="claude-sonnet-4-5", stream=False
    ).unwrap()
    blocks = [b for m in back["messages"] for b in m["content"]]
    thinking = [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
    assert [b["type"] for b in thinking] == ["thinking", "redacted_thinking"]  # Anthropic's own
    assert "gAAAA" not in json.dumps(back)  # OpenAI's encrypted reasoning never goes there
    assert any(b.get("id") == "call_rome" for b in blocks if b["type"] == "tool_use")


# -- errors and retries ---------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "status", "kind", "attempts"),
    [
        ("error_429_rate_limit.json", 429, ModelErrorKind.RATE_LIMIT, 3),
        ("error_429_insufficient_quota.json", 429, ModelErrorKind.QUOTA, 1),
        ("error_400_invalid_request.json", 400, ModelErrorKind.INVALID_REQUEST, 1),
        ("error_400_context_length.json", 400, ModelErrorKind.CONTEXT_TOO_LONG, 1),
        ("error_401_invalid_key.json", 401, ModelErrorKind.AUTHENTICATION, 1),
        ("error_500_server.json", 500, ModelErrorKind.SERVER_ERROR, 3),
        ("error_503_overloaded.json", 503, ModelErrorKind.OVERLOADED, 3),
    ],
)
async def test_every_error_class_and_its_retries(
    provider_server: ProviderServer, name: str, status: int, kind: ModelErrorKind, attempts: int
) -> None:
    error = json_reply(fixture_json(F + name), status, {"x-request-id": "req_abc"})
    provider_server.enqueue(*[error] * 4)
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert (caught.value.kind, caught.value.status) == (kind, status)
    assert caught.value.request_id == "req_abc"
    assert caught.value.provider == "openai-responses"
    assert len(provider_server.requests) == attempts


@pytest.mark.anyio
async def test_429_retry_after_then_success(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(fixture_json(F + "error_429_rate_limit.json"), 429, {"retry-after-ms": "150"}),
        json_reply(fixture_json(F + "response_text.json")),
    )
    async with model(provider_server) as m:
        started = time.monotonic()
        assert bare(await m.request(ask())) == expected("response_text.json")
        assert time.monotonic() - started >= 0.15


@pytest.mark.anyio
async def test_a_failed_response_with_status_200_is_raised(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json(F + "response_failed.json")))
    async with model(provider_server, retry=RetryPolicy.never()) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.SERVER_ERROR


@pytest.mark.anyio
async def test_the_key_never_appears_in_errors(provider_server: ProviderServer) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}
    provider_server.enqueue(json_reply(echo, 401))
    m = model(provider_server)
    async with m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.message == "Incorrect API key provided: [redacted]."
    assert KEY not in repr(m) and KEY not in str(caught.value)


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):  # read at the first request
        await OpenAIResponsesModel("gpt-5").request(ModelRequest(messages=(Message.user("x"),)))
    with pytest.raises(UsageError, match="reasoning_effort"):
        OpenAIResponsesModel("gpt-5", api_key=KEY, reasoning_effort="huge")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="reasoning_summary"):
        OpenAIResponsesModel("gpt-5", api_key=KEY, reasoning_summary="long")  # type: ignore[arg-type]
    m = OpenAIResponsesModel("gpt-5", api_key=KEY)
    assert (m.url, m.name, m.encrypted_reasoning) == (
        "https://api.openai.com/v1/responses",
        "openai-responses:gpt-5",
        True,
    )
    assert not OpenAIResponsesModel("gpt-4o-mini", api_key=KEY).encrypted_reasoning
    assert OpenAIResponsesModel(
        "my-model", api_key=KEY, encrypted_reasoning=True
    ).encrypted_reasoning
    assert isinstance(m, Model)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    inferred = infer_model("openai-responses:gpt-5-mini")
    assert isinstance(inferred, OpenAIResponsesModel)
    assert inferred.url == "http://127.0.0.1:9/v1/responses"
    assert infer_model("openai:gpt-4o-mini").name == "openai:gpt-4o-mini"


@pytest.mark.anyio
async def test_content_it_cannot_take_travels_as_its_stand_in(
    provider_server: ProviderServer,
) -> None:
    video = ModelRequest((Message.user("Watch", URLPart("https://example.com/v.mp4", "video")),))
    async with model(provider_server) as m:  # ADR 0067: sent, never refused
        sent = json.loads(m._body(video, stream=False))
    assert sent["input"][0]["content"][1]["text"] == (
        "[video by URL (https://example.com/v.mp4): not sent, OpenAI Responses cannot take it]"
    )


@attrs.frozen
class City:
    name: str
    population: int


def test_structured_output_through_the_output_tool(provider_server: ProviderServer) -> None:
    body = fixture_json(F + "response_function_calls_parallel.json")
    body["output"] = [
        {
            **body["output"][0],
            "name": "final_result",
            "call_id": "call_out",
            "arguments": '{"name":"Oslo","population":700000}',
        }
    ]
    provider_server.enqueue(json_reply(body))
    result = Agent(model(provider_server), output_type=City).run_sync("Biggest city of Norway?")
    assert result.output == City("Oslo", 700000)
    sent = provider_server.requests[0].json()
    assert sent["tool_choice"] == "required"
    assert [t["name"] for t in sent["tools"]] == ["final_result"]
    assert sent["tools"][0]["strict"] is True


def test_a_responses_conversation_continues_on_chat_completions(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(call_reply("Paris", "call_c1", reasoning=True), text_reply("18 C"))
    first = Agent(model(provider_server), tools=[get_weather]).run_sync("Weather in Paris?")
    stored = decode_history(encode_history(first.messages)).unwrap()
    chat = openai_wire.encode_request(
        ModelRequest(tuple(m for m in stored if m.role is not Role.SYSTEM), tools=(WEATHER,)),
        model="gpt-4o-mini",
        stream=False,
    ).unwrap()
    assert "gAAAA" not in json.dumps(chat)  # reasoning stays in the history, unsent
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert chat["messages"][1]["tool_calls"][0]["id"] == "call_c1"


def bare(value: Any) -> Any:
    """A message (or the ``StreamDone`` holding one) without the origin the adapter
    records (ADR 0085) and the model it asked for, to compare with what the pure
    decoder reads from a fixture."""
    if isinstance(value, StreamDone):
        return attrs.evolve(value, message=bare(value.message))
    extra = tuple((k, v) for k, v in value.extra if k != "askedModel")
    return attrs.evolve(value, provider=None, endpoint=None, asked_model=None, extra=extra)
