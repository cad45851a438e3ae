"""Switching provider or model mid-conversation (issue 25, item 3; ADRs 0085-0086).

One conversation runs a tool loop on one provider (its thinking, signatures, redacted
thinking, encrypted reasoning, thought signatures, parallel calls, its call-id style),
then continues, through the stored JSON, on another: all 12 ordered pairs of OpenAI
Chat, Responses, Anthropic and Gemini, and a second model of each provider. Every
request goes to the loopback provider server; each body must satisfy the target's
rules (``properties/wire_rules.py``) and carry no artifact of another issuer, the
conversation must finish, and ``port_report`` must say what did not travel.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    fixture_bytes,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
    sse_reply,
)

from golem_core import (
    HistoryPorted,
    Message,
    ModelRequest,
    Origin,
    Role,
    StreamDone,
    Target,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    decode_history,
    encode_history,
    port_history,
)
from golem_core._retry import RetryPolicy
from golem_core.history._port import describe_report, same_model
from golem_core.wire.gemini import with_thought_signature
from golem_core.wire.openai_responses import reasoning_part
from golem_shell import Agent, Steering, UsageError, tool
from golem_shell.models import AnthropicModel, GeminiModel, OpenAIModel, OpenAIResponsesModel
from golem_shell.models._adapter import HTTPModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "properties"))
from wire_rules import (
    anthropic_violations,
    gemini_violations,
    openai_violations,
    responses_violations,
)

FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)
PROVIDERS = ("openai", "openai-responses", "anthropic", "google")
MODELS = {
    "openai": ("gpt-4o-mini", "gpt-4.1"),
    "openai-responses": ("gpt-5", "o4-mini"),
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1"),
    "google": ("gemini-2.5-flash", "gemini-3-pro-preview"),
}
RULES = {
    "openai": openai_violations,
    "openai-responses": responses_violations,
    "anthropic": anthropic_violations,
    "google": gemini_violations,
}


def artifacts(provider: str, leg: str) -> tuple[str, ...]:
    """The artifacts ``provider``'s replies of run ``leg`` carry: no other issuer (and,
    for Anthropic and Gemini, no other model) may be sent them."""
    if provider == "openai-responses":
        return (f"gAAAAB-encrypted-by-openai-{leg}",)
    if provider == "anthropic":
        return (f"EqQBCkYI-signed-by-anthropic-{leg}", f"EmwKAhgB-redacted-by-anthropic-{leg}")
    if provider == "google":
        return (base64.b64encode(f"signed-by-gemini-{leg}".encode()).decode("ascii"),)
    return ()


# what of a first leg does not travel to another provider (or a model it is bound to):
# Chat's reasoning text; the reasoning item; the signed and the redacted thinking; the
# thought summary and the call's thought signature
LEFT_OFF = {"openai": 1, "openai-responses": 1, "anthropic": 2, "google": 2}


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def make_model(server: ProviderServer, provider: str, name: str) -> HTTPModel:
    kw: dict[str, Any] = {"api_key": "sk-test", "retry": FAST, "timeout": 5.0}
    if provider == "openai":
        return OpenAIModel(name, base_url=f"{server.url}/v1", **kw)
    if provider == "openai-responses":
        return OpenAIResponsesModel(name, base_url=f"{server.url}/v1", **kw)
    if provider == "anthropic":
        return AnthropicModel(name, base_url=server.url, **kw)
    return GeminiModel(name, base_url=f"{server.url}/v1beta", **kw)


# -- each provider's replies: a step with thinking and two parallel calls, then text --------


def call_reply(provider: str, model: str, leg: str) -> Any:
    a, b = f"{leg}1", f"{leg}2"
    args = {"city": "Paris"}
    if provider == "openai":
        calls = [
            {
                "id": f"chatcmpl-tool.{c}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(args)},
            }
            for c in (a, b)
        ]
        message = {
            "role": "assistant",
            "content": None,
            "reasoning_content": "The user wants weather; two calls.",
            "tool_calls": calls,
        }
        return _chat(model, message, "tool_calls")
    if provider == "openai-responses":
        output: list[Any] = [
            {
                "type": "reasoning",
                "id": f"rs_{leg}",
                "summary": [{"type": "summary_text", "text": "Two calls."}],
                "encrypted_content": artifacts(provider, leg)[0],
            }
        ]
        output += [
            {
                "type": "function_call",
                "id": f"fc_{c}",
                "call_id": f"call_{c}" + "R" * 60,
                "name": "get_weather",
                "arguments": json.dumps(args),
            }
            for c in (a, b)
        ]
        return _responses(model, output)
    if provider == "anthropic":
        signature, redacted = artifacts(provider, leg)
        content: list[Any] = [
            {"type": "thinking", "thinking": "Two calls.", "signature": signature},
            {"type": "redacted_thinking", "data": redacted},
        ]
        content += [
            {"type": "tool_use", "id": f"toolu_01{c}", "name": "get_weather", "input": args}
            for c in (a, b)
        ]
        return _anthropic(model, content, "tool_use")
    parts: list[Any] = [{"text": "Two calls.", "thought": True}]
    parts.append(
        {
            "functionCall": {"id": f"gemini:{a}", "name": "get_weather", "args": args},
            "thoughtSignature": artifacts("google", leg)[0],
        }
    )
    parts.append({"functionCall": {"id": f"gemini:{b}", "name": "get_weather", "args": args}})
    return _gemini(model, parts)


def text_reply(provider: str, model: str, text: str) -> Any:
    if provider == "openai":
        return _chat(model, {"role": "assistant", "content": text}, "stop")
    if provider == "openai-responses":
        item = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }
        return _responses(model, [item])
    if provider == "anthropic":
        return _anthropic(model, [{"type": "text", "text": text}], "end_turn")
    return _gemini(model, [{"text": text}])


def _chat(model: str, message: Any, finish: str) -> Any:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _responses(model: str, output: list[Any]) -> Any:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": model,
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    }


def _anthropic(model: str, content: list[Any], stop: str) -> Any:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _gemini(model: str, parts: list[Any]) -> Any:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "modelVersion": model,
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5},
    }


# -- the conversation ----------------------------------------------------------------------


def leg(
    server: ProviderServer,
    provider: str,
    model_name: str,
    history: tuple[Message, ...],
    prompt: str,
    tag: str,
) -> tuple[tuple[Message, ...], list[Any], HTTPModel]:
    """One run on ``provider``: a tool step, then an answer. Returns the conversation
    (through stored JSON), the bodies sent, and the model."""
    server.reset()
    server.enqueue(
        json_reply(call_reply(provider, model_name, tag)),
        json_reply(text_reply(provider, model_name, f"Sunny ({tag}).")),
    )
    model = make_model(server, provider, model_name)
    agent = Agent(model, instructions="Be brief.", tools=[get_weather])
    result = agent.run_with_history_sync(history, prompt)
    assert result.output == f"Sunny ({tag})."
    bodies = [r.json() for r in server.requests]
    assert len(bodies) == 2
    stored = decode_history(encode_history(result.messages)).unwrap()
    return stored, bodies, model


def check_bodies(provider: str, bodies: list[Any], foreign: tuple[str, ...]) -> None:
    for body in bodies:
        problems = RULES[provider](body)
        assert problems == [], (provider, problems, body)
        sent = json.dumps(body)
        for artifact in foreign:
            assert artifact not in sent, (provider, artifact)


def assistant_origins(history: tuple[Message, ...]) -> set[tuple[str | None, str | None]]:
    return {(m.provider, m.model) for m in history if m.role is Role.ASSISTANT}


PAIRS = [(a, b) for a in PROVIDERS for b in PROVIDERS if a != b]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_a_conversation_continues_on_another_provider(
    provider_server: ProviderServer, first: str, second: str
) -> None:
    model_a, model_b = MODELS[first][0], MODELS[second][0]
    history, _, _ = leg(provider_server, first, model_a, (), "Weather in Paris?", "A")
    assert assistant_origins(history) == {(first, model_a)}
    history, bodies, target = leg(provider_server, second, model_b, history, "And Rome?", "B")
    check_bodies(second, bodies, artifacts(first, "A"))
    # the first provider's artifacts stay in the history, recorded with their origin
    stored = json.dumps(json.loads(encode_history(history)))
    for artifact in artifacts(first, "A"):
        assert artifact in stored
    assert assistant_origins(history) == {(first, model_a), (second, model_b)}
    # what did not travel is reported: the first leg's artifacts, never the second's
    first_leg = history[: 1 + next(i for i, m in enumerate(history) if m.text == "And Rome?")]
    report = target.port_report(ModelRequest(first_leg))
    assert len(report.left_off) == LEFT_OFF[first], report
    assert report.as_text == ()  # the first leg's loop is closed: nothing becomes text
    # and the conversation goes back to the first provider, its own artifacts included
    history, bodies, _ = leg(provider_server, first, model_a, history, "And Oslo?", "C")
    check_bodies(first, bodies, artifacts(second, "B"))
    if artifacts(first, "A"):
        assert any(artifacts(first, "A")[0] in json.dumps(b) for b in bodies)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_conversation_continues_on_another_model_of_the_same_provider(
    provider_server: ProviderServer, provider: str
) -> None:
    model_a, model_b = MODELS[provider]
    history, _, _ = leg(provider_server, provider, model_a, (), "Weather in Paris?", "A")
    history, bodies, target = leg(provider_server, provider, model_b, history, "And Rome?", "B")
    bound = provider in ("anthropic", "google")  # signatures bound to the model
    check_bodies(provider, bodies, artifacts(provider, "A") if bound else ())
    if provider == "openai-responses":  # encrypted reasoning is bound to the endpoint only
        assert artifacts(provider, "A")[0] in json.dumps(bodies[0])
    first_leg = history[: 1 + next(i for i, m in enumerate(history) if m.text == "And Rome?")]
    report = target.port_report(ModelRequest(first_leg))
    assert len(report.left_off) == (0 if provider == "openai-responses" else LEFT_OFF[provider])


def test_switching_mid_tool_loop_sends_the_other_models_thinking_as_text(
    provider_server: ProviderServer,
) -> None:
    """A switch inside a tool loop (a fallback after the first step): the reasoning of
    that step travels as text, its signature does not."""
    provider_server.enqueue(json_reply(call_reply("anthropic", MODELS["anthropic"][0], "A")))
    first = make_model(provider_server, "anthropic", MODELS["anthropic"][0])
    request = ModelRequest((Message.user("Weather in Paris?"),))
    step = asyncio.run(first.request(request))
    results = tuple(
        Message.tool_result(c.id, c.name, "18 C") for c in step.tool_calls if c.id is not None
    )
    history = (request.messages[0], step, *results)
    target = make_model(provider_server, "google", MODELS["google"][0])
    report = target.port_report(ModelRequest(history))
    assert [p.what for p in report.as_text] == ["signed thinking"]
    assert [p.what for p in report.left_off] == ["redacted thinking"]
    assert {r.original for r in report.call_ids} == set()  # Gemini takes these ids
    provider_server.reset()
    provider_server.enqueue(json_reply(text_reply("google", MODELS["google"][0], "Sunny.")))
    answer = asyncio.run(target.request(ModelRequest(history)))
    assert answer.text == "Sunny."
    body = provider_server.requests[0].json()
    assert gemini_violations(body) == []
    model_turn = body["contents"][1]["parts"]
    assert model_turn[0] == {"text": "<thinking>\nTwo calls.\n</thinking>"}
    assert all(a not in json.dumps(body) for a in artifacts("anthropic", "A"))


# -- native structured output (issue 25, item 4; ADR 0087) ------------------------------------


@attrs.frozen
class City:
    name: str
    population: int


def native_body(provider: str, sent: Any) -> Any:
    """Where ``provider``'s request carries the schema of native structured output."""
    if provider == "openai-responses":
        return sent["text"]["format"]
    if provider == "google":
        config = sent["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        return config["responseJsonSchema"]
    return sent["output_config"]["format"]


@pytest.mark.parametrize("provider", ["openai-responses", "google", "anthropic"])
def test_native_structured_output(provider_server: ProviderServer, provider: str) -> None:
    """The schema goes natively (Responses ``text.format``, Gemini ``responseJsonSchema``,
    Anthropic ``output_config.format``), no ``final_result`` tool is declared, and the
    JSON text answer is the run's output."""
    name = MODELS[provider][0]
    provider_server.enqueue(
        json_reply(text_reply(provider, name, '{"name": "Oslo", "population": 700000}'))
    )
    model = make_model(provider_server, provider, name)
    assert model.supports_native_output is True  # type: ignore[attr-defined]
    agent = Agent(model, output_type=City, output_mode="native")
    result = agent.run_sync("Biggest city of Norway?")
    assert result.output == City("Oslo", 700000)
    sent = provider_server.requests[0].json()
    assert "tools" not in sent
    spec = native_body(provider, sent)
    if provider == "openai-responses":
        assert spec["type"] == "json_schema" and spec["name"]
        assert spec["schema"]["properties"].keys() == {"name", "population"}
    elif provider == "google":
        assert spec["properties"].keys() == {"name", "population"}
    else:
        assert spec["type"] == "json_schema"
        assert spec["schema"]["additionalProperties"] is False


def test_anthropic_native_output_only_where_the_model_has_it(
    provider_server: ProviderServer,
) -> None:
    """Claude before 4.5 keeps the ``final_result`` tool; ``native_output=`` overrides."""
    old = AnthropicModel("claude-3-7-sonnet-latest", api_key="k", base_url=provider_server.url)
    assert old.supports_native_output is False
    forced = AnthropicModel(
        "claude-3-7-sonnet-latest", api_key="k", base_url=provider_server.url, native_output=True
    )
    assert forced.supports_native_output is True
    call = {
        "type": "tool_use",
        "id": "toolu_01out",
        "name": "final_result",
        "input": {"name": "Oslo", "population": 700000},
    }
    provider_server.enqueue(json_reply(_anthropic("claude-3-7-sonnet", [call], "tool_use")))
    result = Agent(old, output_type=City, output_mode="native").run_sync("Biggest city?")
    assert result.output == City("Oslo", 700000)
    sent = provider_server.requests[0].json()
    assert "output_config" not in sent
    assert [t["name"] for t in sent["tools"]] == ["final_result"]


def test_anthropic_structured_schema_is_closed_and_unconstrained() -> None:
    from golem_core.wire.anthropic import structured_schema

    schema = {
        "type": "object",
        "description": "A city.",
        "properties": {
            "name": {"type": "string", "minLength": 1, "pattern": "^[A-Z]"},
            "tags": {"type": "array", "items": {"type": "object"}, "minItems": 2},
            "population": {"type": "integer", "minimum": 0},
        },
        "required": ["name"],
    }
    out = structured_schema(schema)
    assert out["additionalProperties"] is False
    assert out["properties"]["tags"]["items"] == {"type": "object", "additionalProperties": False}
    assert out["properties"]["name"] == {
        "type": "string",
        "description": 'minLength: 1; pattern: "^[A-Z]"',
    }
    assert out["properties"]["population"]["description"] == "minimum: 0"
    assert "minItems" not in out["properties"]["tags"]
    assert schema["properties"]["name"]["minLength"] == 1  # the input is not changed


# -- origins recorded on streams too; port_history by example ----------------------------------

STREAMS = {
    "openai": "openai/stream_text_crlf.sse",
    "openai-responses": "openai_responses/stream_text.sse",
    "anthropic": "anthropic/stream_text.sse",
    "google": "gemini/stream_text.sse",
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_streamed_answer_records_its_origin(
    provider_server: ProviderServer, provider: str
) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes(STREAMS[provider]), chunk_size=5))
    model = make_model(provider_server, provider, MODELS[provider][0])

    async def last() -> Any:
        return [e async for e in model.request_stream(ModelRequest((Message.user("Hi"),)))][-1]

    done = asyncio.run(last())
    assert isinstance(done, StreamDone)
    host = provider_server.url.removeprefix("http://")
    assert (done.message.provider, done.message.endpoint) == (provider, host)
    assert done.message.model  # the stream's, else the one asked for
    assert model.origin == Origin(provider, MODELS[provider][0], host)


def signed(provider: str, model: str, endpoint: str) -> Message:
    """An assistant step as ``provider`` gives it, with its artifacts."""
    call = ToolCallPart("call.1", "get_weather", "{}")
    thinking = ThinkingPart("Plan.", signature="sig") if provider == "anthropic" else None
    if provider == "google":
        call = with_thought_signature(call, "c2ln")
        thinking = ThinkingPart("Plan.")
    if provider == "openai-responses":
        thinking = reasoning_part("rs_1", ["Plan."], "gAAAA")
    message = Message.assistant(None, tool_calls=[call], thinking=[thinking] if thinking else [])
    return attrs.evolve(message, provider=provider, model=model, endpoint=endpoint)


def test_history_without_origin_is_sent_as_before() -> None:
    step = attrs.evolve(signed("anthropic", "claude-sonnet-4-5", "a"), provider=None)
    history = (Message.user("Go"), step, Message.tool_result("call.1", "get_weather", "18 C"))
    for provider in PROVIDERS:
        ported, report = port_history(history, Target(provider, "any", "b"))
        assert report.as_text == ()
        if provider == "anthropic":
            assert report.left_off == ()
            assert ported[1].parts[0] == step.parts[0]  # the signature is kept
        else:  # no other encoder ever sent it: now the report says so (issue 49, item 7)
            assert [(p.message_index, p.what) for p in report.left_off] == [(1, "signed thinking")]
            assert "no origin recorded" in report.left_off[0].reason
            assert ported[1].parts == step.parts[1:]


def test_same_origin_keeps_everything_and_ids_fit_the_target() -> None:
    step = signed("anthropic", "claude-sonnet-4-5-20250929", "api.anthropic.com")
    history = (Message.user("Go"), step, Message.tool_result("call.1", "get_weather", "18 C"))
    target = Target("anthropic", "claude-sonnet-4-5", "api.anthropic.com")
    ported, report = port_history(history, target)
    assert ported[1].parts[0] == step.parts[0]  # a snapshot is its alias's model
    assert [(r.original, r.sent) for r in report.call_ids] == [("call.1", "call_1")]
    assert ported[2].tool_call_id == "call_1" and report.original_id("call_1") == "call.1"
    assert history[2].tool_call_id == "call.1"  # the history itself never changes


def test_mistral_ids_and_string_content() -> None:
    history = (
        Message(Role.USER, (TextPart("Weather"), TextPart("in Paris?"))),
        signed("openai", "gpt-4o", "api.openai.com"),
        Message.tool_result("call.1", "get_weather", "18 C"),
    )
    model = OpenAIModel("mistral-large-latest", api_key="k", base_url="https://api.mistral.ai/v1")
    assert model.target.quirks == {"mistral-call-ids"}
    ported, report = port_history(history, model.target)
    (rewritten,) = report.call_ids
    assert re.fullmatch(r"[a-zA-Z0-9]{9}", rewritten.sent)
    assert ported[2].tool_call_id == rewritten.sent
    flat = OpenAIModel("m", api_key="k", base_url="http://h/v1", quirks=["string-content"])
    assert port_history(history, flat.target)[0][0].parts == (TextPart("Weather\nin Paris?"),)
    with pytest.raises(UsageError, match="unknown quirks"):
        OpenAIModel("m", api_key="k", base_url="http://h/v1", quirks=["nope"])


def test_thinking_drop_rule_and_the_report_in_words() -> None:
    history = (Message.user("Go"), signed("google", "gemini-2.5-flash", "g"))
    target = Target("anthropic", "claude-sonnet-4-5", "a")
    _, as_text = port_history(history, target)
    assert [p.what for p in as_text.as_text] == ["thinking"]
    assert [p.what for p in as_text.left_off] == ["thought signature"]
    _, dropped = port_history(history, target, thinking="drop")
    assert dropped.as_text == () and len(dropped.left_off) == 2
    words = describe_report(dropped)
    assert words.startswith("ported to anthropic:claude-sonnet-4-5 at a")
    assert "Plan." not in words  # kinds and reasons, never content
    assert same_model("models/gemini-2.5-flash", "gemini-2.5-flash-001")
    assert not same_model("gpt-5", "gpt-5-mini")


def test_a_run_reports_what_it_ported_as_an_event(provider_server: ProviderServer) -> None:
    """A conversation from Anthropic continued on Gemini: the run's observer emits
    ``HistoryPorted`` before the request, saying what became text and what was left off;
    continuing on the same model reports nothing."""
    from golem_core import HistoryPorted

    provider_server.enqueue(json_reply(call_reply("anthropic", MODELS["anthropic"][0], "A")))
    first = make_model(provider_server, "anthropic", MODELS["anthropic"][0])
    request = ModelRequest((Message.user("Weather in Paris?"),))
    step = asyncio.run(first.request(request))
    results = tuple(
        Message.tool_result(c.id, c.name, "18 C") for c in step.tool_calls if c.id is not None
    )
    history = (request.messages[0], step, *results)

    provider_server.reset()
    provider_server.enqueue(json_reply(text_reply("google", MODELS["google"][0], "Sunny.")))
    events: list[object] = []
    agent = Agent(make_model(provider_server, "google", MODELS["google"][0]), tools=[get_weather])
    result = agent.run_with_history_sync(history, None, on_event=events.append)
    assert result.output == "Sunny."
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("HistoryPorted") == kinds.index("RequestStarted") - 1
    (ported,) = [e for e in events if isinstance(e, HistoryPorted)]
    assert ported.request == 1 and ported.model == agent.model.name
    assert [p.what for p in ported.report.as_text] == ["signed thinking"]
    assert [p.what for p in ported.report.left_off] == ["redacted thinking"]

    provider_server.reset()
    provider_server.enqueue(json_reply(text_reply("anthropic", MODELS["anthropic"][0], "Again.")))
    events.clear()
    same = Agent(first, tools=[get_weather])
    same.run_with_history_sync(history, None, on_event=events.append)
    assert not any(isinstance(e, HistoryPorted) for e in events)


# -- thinking sent as text stays text (issue 49, item 7) -------------------------------------
# Thinking of another model that belonged to the tool loop the target took over travels as
# text; it must keep travelling on every later request of that target (a steered message
# after the tool result, an output correction, the next prompt), or the body stops
# extending the previous one and the prompt cache breaks.


def test_thinking_sent_as_text_keeps_travelling_after_a_user_turn(
    provider_server: ProviderServer,
) -> None:
    claude = Message.assistant(
        None,
        tool_calls=[ToolCallPart("toolu_00", "get_weather", '{"city": "Oslo"}')],
        thinking=[ThinkingPart("Claude's plan.", signature="sig-claude")],
    )
    claude = attrs.evolve(
        claude, provider="anthropic", model="claude-sonnet-4-20250514", endpoint="a.test"
    )
    history = [
        Message.user("Oslo?"),
        claude,
        Message.tool_result("toolu_00", "get_weather", "18 C"),
    ]
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "slow_weather", "arguments": '{"city": "Rome"}'},
    }
    provider_server.enqueue(
        json_reply(
            _chat(
                "gpt-4.1",
                {"role": "assistant", "content": None, "tool_calls": [call]},
                "tool_calls",
            )
        ),
        json_reply(_chat("gpt-4.1", {"role": "assistant", "content": "Both sunny."}, "stop")),
        json_reply(_chat("gpt-4.1", {"role": "assistant", "content": "Sunny too."}, "stop")),
    )
    gpt = make_model(provider_server, "openai", "gpt-4.1")
    steering = Steering()

    @tool
    def slow_weather(city: str) -> str:
        """The weather in a city, while the user steers."""
        steering.send("and in Celsius")
        return f"20 C in {city}"

    agent = Agent(gpt, tools=[get_weather, slow_weather])
    events: list[Any] = []
    first = agent.run_with_history_sync(history, None, steering=steering, on_event=events.append)
    assert first.output == "Both sunny."
    assert [m.role for m in first.messages[-3:]] == [Role.TOOL, Role.USER, Role.ASSISTANT]
    second = agent.run_with_history_sync(first.messages, "And Bergen?", on_event=events.append)
    assert second.output == "Sunny too."
    bodies = [r.json()["messages"] for r in provider_server.requests]
    assert len(bodies) == 3
    as_text = "<thinking>\nClaude's plan.\n</thinking>"
    for k, body in enumerate(bodies):
        assert body[1]["content"] == as_text, (k, body[1])  # every request, as text
        if k:
            assert body[: len(bodies[k - 1])] == bodies[k - 1], k  # extends the previous
    reports = [e.report for e in events if isinstance(e, HistoryPorted)]
    assert len(reports) == 3
    assert all([p.what for p in r.as_text] == ["signed thinking"] for r in reports)
