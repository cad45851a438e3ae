"""GeminiModel against a real loopback HTTP server (and httpx.MockTransport): the README
tour, a tool round trip, streaming, resume after a crash, and histories from other
providers continuing on Gemini."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import attrs
import httpx
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    anyio_backend_fixture,
    fixture_bytes,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
    sse_reply,
)

from golem_core import (
    Message,
    ModelErrorKind,
    ModelRequest,
    RetryPolicy,
    Role,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallPart,
    check_pairing,
    decode_history,
    encode_history,
    trim_history,
)
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import gemini as wire
from golem_core.wire import openai as openai_wire
from golem_shell import (
    Agent,
    GeminiModel,
    ModelError,
    RunError,
    UsageError,
    infer_model,
    new_id,
    tool,
)
from golem_shell.models import Model

pytestmark = pytest.mark.anyio

KEY = "gemini-test-key-0123456789abcdef"
FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)
PATH = "/v1beta/models/gemini-2.5-flash"


@pytest.fixture(autouse=True)
def _no_gemini_environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield


def model(server: ProviderServer, **kw: Any) -> GeminiModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 2.0)
    return GeminiModel("gemini-2.5-flash", api_key=KEY, base_url=f"{server.url}/v1beta", **kw)


def ask(text: str = "What is the capital of France?") -> ModelRequest:
    return ModelRequest((Message.user(text),), instructions="Be brief.")


async def collect(m: Model, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in m.request_stream(request)]


def text_answer(text: str) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 5, "totalTokenCount": 25},
        "modelVersion": "gemini-2.5-flash",
    }


def call_answer(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    parts = [{"functionCall": {"name": name, "args": args}} for name, args in calls]
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 9, "totalTokenCount": 39},
        "modelVersion": "gemini-2.5-flash",
    }


def as_stream(answer: dict[str, Any]) -> bytes:
    """An answer as Gemini streams it: one chunk per part, the finish on the last."""
    candidate = answer["candidates"][0]
    parts = candidate["content"]["parts"]
    out = b""
    for i, part in enumerate(parts):
        chunk: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
        if i == len(parts) - 1:
            chunk["finishReason"] = candidate["finishReason"]
        data = {"candidates": [chunk], "usageMetadata": answer["usageMetadata"]}
        data["modelVersion"] = answer["modelVersion"]
        out += b"data: " + json.dumps(data, separators=(",", ": ")).encode() + b"\r\n\r\n"
    return out


@tool
def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: the city's name.
    """
    return f"18 C in {city}"


def responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p["functionResponse"]
        for c in body["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]


def assert_gemini_pairing(body: dict[str, Any]) -> None:
    """Every functionCall answered, in order and by name, by the next content's responses."""
    contents = body["contents"]
    for k, content in enumerate(contents):
        calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
        if content["role"] != "model" or not calls:
            continue
        after = contents[k + 1]
        assert after["role"] == "user"
        answers = [p["functionResponse"] for p in after["parts"] if "functionResponse" in p]
        assert [(a["id"], a["name"]) for a in answers[: len(calls)]] == [
            (c["id"], c["name"]) for c in calls
        ]
        assert "thoughtSignature" in next(p for p in content["parts"] if "functionCall" in p)


# -- plain requests ---------------------------------------------------------------------


async def test_request_sends_the_exact_body_and_headers(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("gemini/generate_text.json")))
    async with model(provider_server) as m:
        message = await m.request(ask())
    assert bare(message) == wire.decode_response(fixture_json("gemini/generate_text.json")).unwrap()
    [sent] = provider_server.requests
    assert (sent.method, sent.path, sent.query) == ("POST", f"{PATH}:generateContent", "")
    assert sent.headers["x-goog-api-key"] == KEY
    assert KEY not in sent.path + sent.query
    assert sent.body == (
        b'{"systemInstruction":{"parts":[{"text":"Be brief."}]},'
        b'"contents":[{"role":"user","parts":[{"text":"What is the capital of France?"}]}]}'
    )


async def test_stream_byte_by_byte_equals_the_plain_response(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(
        sse_reply(fixture_bytes("gemini/stream_thinking.sse"), chunk_size=1),
        json_reply(fixture_json("gemini/generate_thinking.json")),
    )
    async with model(provider_server, include_thoughts=True) as m:
        events = await collect(m, ask())
        plain = await m.request(ask())
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.message.parts == plain.parts  # thought, then the signed answer
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == plain.text
    streamed, sent = provider_server.requests
    assert (streamed.path, streamed.query) == (f"{PATH}:streamGenerateContent", "alt=sse")
    assert streamed.headers["accept"] == "text/event-stream"
    assert streamed.json()["generationConfig"] == {"thinkingConfig": {"includeThoughts": True}}
    assert streamed.body == sent.body  # the stream is chosen by the path alone


async def test_an_error_chunk_before_any_delta_is_retried(provider_server: ProviderServer) -> None:
    error = (
        b'data: {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}\r\n\r\n'
    )
    provider_server.enqueue(sse_reply(error), sse_reply(fixture_bytes("gemini/stream_text.sse")))
    async with model(provider_server) as m:
        events = await collect(m, ask())
    assert isinstance(events[-1], StreamDone)
    assert events[-1].message.text == "The capital of France is Paris."
    assert len(provider_server.requests) == 2


async def test_an_error_after_deltas_is_not_retried(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes("gemini/stream_error.sse")))
    got: list[StreamEvent] = []
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            async for event in m.request_stream(ask()):
                got.append(event)
    assert caught.value.kind is ModelErrorKind.OVERLOADED
    assert [e.text for e in got if isinstance(e, TextDelta)] == ["The capital of France"]
    assert len(provider_server.requests) == 1


async def test_a_stream_cut_mid_arguments(provider_server: ProviderServer) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes("gemini/stream_cut_mid_arguments.sse")))
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await collect(m, ask())
    assert caught.value.kind is ModelErrorKind.STREAM_INTERRUPTED


async def test_429_with_retry_info_is_retried(provider_server: ProviderServer) -> None:
    quota = fixture_json("gemini/error_429_resource_exhausted.json")
    quota["error"]["details"][-1]["retryDelay"] = "0.05s"
    provider_server.enqueue(json_reply(quota, 429), json_reply(text_answer("Paris.")))
    async with model(provider_server) as m:
        message = await m.request(ask())
    assert message.text == "Paris."
    assert len(provider_server.requests) == 2


@pytest.mark.parametrize(
    ("name", "kind", "sent"),
    [
        ("error_500_internal.json", ModelErrorKind.SERVER_ERROR, 3),
        ("error_503_unavailable.json", ModelErrorKind.OVERLOADED, 3),
        ("error_429_daily_quota.json", ModelErrorKind.QUOTA, 1),
        ("error_400_invalid_argument.json", ModelErrorKind.INVALID_REQUEST, 1),
        ("error_400_api_key_invalid.json", ModelErrorKind.AUTHENTICATION, 1),
        ("error_401_unauthenticated.json", ModelErrorKind.AUTHENTICATION, 1),
        ("error_403_permission_denied.json", ModelErrorKind.PERMISSION, 1),
    ],
)
async def test_errors_are_classified_and_retried_like_the_others(
    provider_server: ProviderServer, name: str, kind: ModelErrorKind, sent: int
) -> None:
    status = int(name.split("_")[1])
    provider_server.enqueue(*[json_reply(fixture_json(f"gemini/{name}"), status)] * 3)
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert (caught.value.kind, caught.value.status) == (kind, status)
    assert caught.value.provider == "google"  # one spelling (ADR 0095)
    assert len(provider_server.requests) == sent


async def test_the_key_never_appears_in_errors(provider_server: ProviderServer) -> None:
    echo = {
        "error": {"code": 400, "message": f"API key {KEY} not valid", "status": "INVALID_ARGUMENT"}
    }
    provider_server.enqueue(json_reply(echo, 400))
    m = model(provider_server)
    async with m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    for text in (str(caught.value), repr(caught.value), repr(m), m.url, m.stream_url):
        assert KEY not in text


async def test_safety_blocks_are_clear_failures(provider_server: ProviderServer) -> None:
    provider_server.enqueue(json_reply(fixture_json("gemini/generate_safety_blocked.json")))
    async with model(provider_server) as m:
        with pytest.raises(ModelError) as caught:
            await m.request(ask())
    assert caught.value.kind is ModelErrorKind.INVALID_REQUEST
    assert "withheld its answer (finishReason SAFETY)" in str(caught.value)
    assert len(provider_server.requests) == 1


async def test_a_bad_signature_is_refused_before_any_request(
    provider_server: ProviderServer,
) -> None:
    bad = ToolCallPart("c1", "get_weather", "{}", extra=(("thoughtSignature", "42"),))
    request = ModelRequest(
        (Message.user("q"), Message(Role.ASSISTANT, (bad,)), Message.tool_result("c1", "g", "x")),
        tools=(get_weather.definition,),
    )
    async with model(provider_server) as m:
        with pytest.raises(UsageError, match="message 1 part 0: its Gemini thought signature"):
            await m.request(request)
    assert provider_server.requests == []


# -- configuration ----------------------------------------------------------------------


async def test_missing_key_names_the_variables_at_the_first_request() -> None:
    model = GeminiModel("gemini-2.5-flash")  # made without a key: read when first used
    with pytest.raises(UsageError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        await model.request(ModelRequest(messages=(Message.user("hi"),)))
    with pytest.raises(UsageError, match="model name"):
        GeminiModel(" ", api_key=KEY)


async def test_keys_and_base_url_from_the_environment(
    provider_server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    monkeypatch.setenv("GEMINI_BASE_URL", f"{provider_server.url}/v1beta/")
    provider_server.enqueue(json_reply(text_answer("a")), json_reply(text_answer("b")))
    async with GeminiModel("gemini-2.5-flash") as m:
        assert m.url == f"{provider_server.url}{PATH}:generateContent"
        await m.request(ask())
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")  # the SDK's order: GOOGLE_ first
    async with GeminiModel("gemini-2.5-flash") as m:
        await m.request(ask())
    assert [r.headers["x-goog-api-key"] for r in provider_server.requests] == [
        "gemini-key",
        "google-key",
    ]


def test_default_base_url_names_and_infer_model(monkeypatch: pytest.MonkeyPatch) -> None:
    m = GeminiModel("gemini-2.5-flash", api_key=KEY)
    assert m.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert m.stream_url.endswith("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    assert m.name == "google:gemini-2.5-flash"
    assert KEY not in repr(m)
    assert isinstance(m, Model)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    for spelled in (
        "google:gemini-2.5-flash",
        "google-gla:gemini-2.5-flash",
        "gemini:gemini-2.5-flash",
    ):
        inferred = infer_model(spelled)
        assert isinstance(inferred, GeminiModel)
        assert inferred.url == m.url


async def test_mock_transport() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["x-goog-api-key"] == KEY
        assert request.url.path.endswith(":generateContent")
        return httpx.Response(200, json=fixture_json("gemini/generate_parallel_calls.json"))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with GeminiModel("gemini-3-pro-preview", api_key=KEY, http_client=client) as m:
        message = await m.request(ask())
    assert [c.name for c in message.tool_calls] == ["get_weather", "get_weather"]
    assert not client.is_closed
    await client.aclose()


# -- runs: the README tour, tools, streaming, resume, other providers' histories --------


def test_the_readme_tour(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply(call_answer(("get_weather", {"city": "Paris"}))),
        json_reply(text_answer("18 C in Paris.")),
        json_reply(call_answer(("get_weather", {"city": "Oslo"}))),
        json_reply(text_answer("18 C in Oslo too.")),
        json_reply(text_answer("Starting over.")),
        json_reply(call_answer(("get_weather", {"city": "Rome"}))),
        json_reply(fixture_json("gemini/error_500_internal.json"), 500),
        json_reply(text_answer("Rome is 18 C.")),
    )
    agent = Agent(
        model(provider_server, retry=RetryPolicy.never()),
        instructions="You are terse.",
        tools=[get_weather],
        history_processor=trim_history(20),
    )
    first = agent.run_sync("Weather in Paris?")
    assert first.output == "18 C in Paris."
    follow = agent.run_with_history_sync(first.messages, "And in Oslo?")
    assert follow.conversation_id == first.conversation_id
    assert follow.output == "18 C in Oslo too."
    stored: bytes = encode_history(follow.messages)
    history = decode_history(stored).unwrap()
    assert history == follow.messages
    fork = agent.run_with_history_sync(history, "Start over", conversation_id=new_id())
    assert fork.conversation_id != first.conversation_id
    with pytest.raises(RunError) as caught:
        agent.run_sync("go")
    partial = caught.value.partial
    assert partial is not None and partial.requests == 1 and partial.tool_executions == 1
    resumed = agent.run_with_history_sync(partial.messages, "continue")
    assert resumed.output == "Rome is 18 C."
    bodies = [r.json() for r in provider_server.requests]
    [sent] = responses(bodies[1])
    answered = dict(sent)
    assert re.fullmatch(r"golem_(\w+_)?1_0", answered.pop("id"))  # minted: the run's tag
    assert answered == {"name": "get_weather", "response": {"output": "18 C in Paris"}}
    for body in bodies:
        assert body["systemInstruction"] == {"parts": [{"text": "You are terse."}]}
        assert_gemini_pairing(body)
    assert len(bodies[3]["contents"]) == 7  # the follow-up carries the whole conversation


async def test_a_tool_round_trip_streamed_with_parallel_calls(
    provider_server: ProviderServer,
) -> None:
    calls = call_answer(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}))
    calls["candidates"][0]["content"]["parts"][0]["thoughtSignature"] = "c2lnbmF0dXJl"
    provider_server.enqueue(
        sse_reply(as_stream(calls), chunk_size=5),
        sse_reply(fixture_bytes("gemini/stream_text.sse"), chunk_size=11),
    )
    agent = Agent(model(provider_server), instructions="Be terse.", tools=[get_weather])
    deltas: list[Any] = []
    result = await agent.run_stream("Weather in Paris and Rome?", on_delta=deltas.append)
    assert result.output == "The capital of France is Paris."
    assert deltas
    second = provider_server.requests[1].json()
    model_turn = second["contents"][1]["parts"]
    assert model_turn[0]["thoughtSignature"] == "c2lnbmF0dXJl"  # the real one goes back
    assert "thoughtSignature" not in model_turn[1]
    assert [r["response"]["output"] for r in responses(second)] == ["18 C in Paris", "18 C in Rome"]
    assert_gemini_pairing(second)
    [turn] = [m for m in result.messages if m.role is Role.ASSISTANT and m.tool_calls]
    assert wire.thought_signature(turn.tool_calls[0]) == "c2lnbmF0dXJl"


async def test_resume_after_a_crash_cut_after_a_tool_call(provider_server: ProviderServer) -> None:
    """A history stored as the process died: two calls, one answered; golem repairs it."""
    crashed = (
        Message.user("Weather in Paris and Rome?"),
        Message.assistant(
            tool_calls=[
                ToolCallPart("golem_1_0", "get_weather", '{"city":"Paris"}'),
                ToolCallPart("golem_1_1", "get_weather", '{"city":"Rome'),
            ]
        ),
        Message.tool_result("golem_1_0", "get_weather", "18 C in Paris"),
    )
    assert check_pairing(crashed) != ()
    provider_server.enqueue(json_reply(text_answer("Paris is 18 C; Rome is unknown.")))
    agent = Agent(model(provider_server), tools=[get_weather])
    result = await agent.run_with_history(crashed, "continue")
    assert result.output == "Paris is 18 C; Rome is unknown."
    body = provider_server.requests[0].json()
    assert_gemini_pairing(body)
    assert responses(body) == [
        {"id": "golem_1_0", "name": "get_weather", "response": {"output": "18 C in Paris"}},
        {
            "id": "golem_1_1",
            "name": "get_weather",
            "response": {"output": "interrupted before execution; no result was produced"},
        },
    ]
    call = body["contents"][1]["parts"][1]["functionCall"]
    assert call["args"] == {"truncated_args": '{"city":"Rome'}
    assert body["contents"][2]["parts"][-1] == {"text": "continue"}


@pytest.mark.parametrize("origin", ["anthropic", "openai"])
async def test_a_conversation_stored_under_another_provider_continues_on_gemini(
    provider_server: ProviderServer, origin: str
) -> None:
    if origin == "anthropic":
        turn = anthropic_wire.decode_response(
            fixture_json("anthropic/message_thinking_tool_use.json")
        ).unwrap()
    else:
        turn = openai_wire.decode_response(fixture_json("openai/chat_tool_calls.json")).unwrap()
    history: tuple[Message, ...] = (Message.user("What's the weather?"), turn)
    history += tuple(
        Message.tool_result(c.id, c.name, f"18 C in {json.loads(c.arguments)['city']}")
        for c in turn.tool_calls
    )
    stored = decode_history(encode_history(history)).unwrap()  # through storage
    provider_server.enqueue(json_reply(text_answer("It is 18 C.")))
    agent = Agent(model(provider_server), instructions="Be terse.", tools=[get_weather])
    result = await agent.run_with_history(stored, "Thanks!")
    assert result.output == "It is 18 C."
    body = provider_server.requests[0].json()
    assert_gemini_pairing(body)
    model_turn = body["contents"][1]["parts"]
    calls = [p for p in model_turn if "functionCall" in p]
    assert [c["functionCall"]["id"] for c in calls] == [c.id for c in turn.tool_calls]
    assert calls[0]["thoughtSignature"] == wire.SKIP_SIGNATURE  # no Gemini signature: placeholder
    assert all("thought" not in p for p in model_turn)  # foreign thinking is not sent
    assert [r["id"] for r in responses(body)] == [c.id for c in turn.tool_calls]
    assert result.messages[1 : len(stored) + 1] == stored  # after the instructions


async def test_a_gemini_conversation_continues_on_anthropic_and_openai(
    provider_server: ProviderServer,
) -> None:
    """Gemini's signatures and thought summaries stay with Gemini: the other encoders
    send the calls, results and text, and nothing of Gemini's reasoning."""
    thinking = fixture_json("gemini/generate_thinking.json")
    calls = fixture_json("gemini/generate_parallel_calls.json")
    provider_server.enqueue(json_reply(calls), json_reply(thinking))
    agent = Agent(model(provider_server, include_thoughts=True), tools=[get_weather])
    result = await agent.run("Weather in Paris and Rome?")
    history = decode_history(encode_history(result.messages)).unwrap()
    signatures = {calls["candidates"][0]["content"]["parts"][0]["thoughtSignature"]}
    signatures.add(thinking["candidates"][0]["content"]["parts"][1]["thoughtSignature"])
    request = ModelRequest(
        (*tuple(m for m in history if m.role is not Role.SYSTEM), Message.user("And tomorrow?")),
        tools=(get_weather.definition,),
    )
    bodies = {
        "anthropic": anthropic_wire.encode_request(request, model="claude", stream=False),
        "openai": openai_wire.encode_request(request, model="gpt-4o-mini", stream=False),
    }
    for provider, encoded in bodies.items():
        text = json.dumps(encoded.unwrap())
        assert "thoughtSignature" not in text, provider
        assert not any(s[:40] in text for s in signatures), provider
        minted = (r"golem_(\w+_)?1_0", r"golem_(\w+_)?1_1")
        assert all(re.search(m, text) for m in minted), provider  # the loop's ids
        assert "Crossing safely" not in text, provider  # Gemini's thought summary stays
    anthropic = bodies["anthropic"].unwrap()["messages"]
    assert [b["type"] for b in anthropic[1]["content"]] == ["tool_use", "tool_use"]


def bare(value: Any) -> Any:
    """A message (or the ``StreamDone`` holding one) without the origin the adapter
    records (ADR 0085) and the model it asked for, to compare with what the pure
    decoder reads from a fixture."""
    if isinstance(value, StreamDone):
        return attrs.evolve(value, message=bare(value.message))
    extra = tuple((k, v) for k, v in value.extra if k != "askedModel")
    return attrs.evolve(value, provider=None, endpoint=None, asked_model=None, extra=extra)
