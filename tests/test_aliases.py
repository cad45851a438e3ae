"""An alias keeps its own artifacts (issue 33, item 2): an answer records the model its
adapter asked for beside the one the provider answered with, and an artifact goes back
to the model as asked; ``same_model``'s guess from names is only a fallback, and never
takes one version for another."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)
from returns.result import Success

from golem_core import (
    HistoryPorted,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    decode_history,
    encode_history,
)
from golem_core.providers import (
    Provider,
    Target,
    asked_model_of,
    port_history,
    record_asked_model,
    same_model,
)
from golem_core.retry import RetryPolicy
from golem_core.wire._cache import strip_cache_markers
from golem_shell import Agent, tool
from golem_shell.models import AnthropicModel, GeminiModel

FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)
SIGNATURE = "EqQBCkYI-signed-by-anthropic"
THOUGHT = "c2lnbmVkLWJ5LWdlbWluaQ=="


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def claude(model: str, content: list[Any], stop: str) -> Any:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def claude_step(answered: str) -> Any:
    content = [
        {"type": "thinking", "thinking": "One call.", "signature": SIGNATURE},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    return claude(answered, content, "tool_use")


def claude_loop(server: ProviderServer, asked: str, answered: str) -> tuple[Any, list[Any]]:
    """A tool loop on ``asked``, answered as ``answered``: the run's messages and events."""
    server.enqueue(
        json_reply(claude_step(answered)),
        json_reply(claude(answered, [{"type": "text", "text": "Sunny."}], "end_turn")),
    )
    model = AnthropicModel(asked, api_key="k", base_url=server.url, retry=FAST)
    events: list[Any] = []
    result = Agent(model, tools=[get_weather]).run_sync("Oslo?", on_event=events.append)
    assert result.output == "Sunny."
    return result, events


def sent_thinking(body: Any) -> list[Any]:
    return [
        block
        for m in body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for block in m["content"]
        if block["type"] in ("thinking", "text")
    ]


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("claude-sonnet-4-0", "claude-sonnet-4-20250514"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219"),
        ("claude-opus-4-1", "claude-opus-4-1-20250805"),
    ],
)
def test_an_alias_keeps_its_signed_thinking_in_its_own_tool_loop(
    provider_server: ProviderServer, asked: str, answered: str
) -> None:
    result, events = claude_loop(provider_server, asked, answered)
    step = next(m for m in result.messages if m.tool_calls)
    assert (step.model, asked_model_of(step)) == (answered, asked)
    second = provider_server.requests[1].json()
    assert sent_thinking(second) == [
        {"type": "thinking", "thinking": "One call.", "signature": SIGNATURE}
    ]
    assert not any(isinstance(e, HistoryPorted) for e in events)  # nothing to report


def test_a_stored_alias_answer_goes_back_to_that_alias_only(
    provider_server: ProviderServer,
) -> None:
    result, _ = claude_loop(provider_server, "claude-sonnet-4-0", "claude-sonnet-4-20250514")
    stored = decode_history(encode_history(result.messages)).unwrap()
    assert b'"askedModel":"claude-sonnet-4-0"' in encode_history(stored).replace(b" ", b"")
    closed = (*stored, Message.user("And Rome?"))
    loop = stored[:-1]  # the tool loop still open: its thinking is the current loop's
    host = provider_server.url.removeprefix("http://")
    same = Target(Provider.ANTHROPIC, "claude-sonnet-4-0", host)
    assert port_history(closed, same)[1].changed is False
    other = Target(Provider.ANTHROPIC, "claude-sonnet-4-5", host)
    _, report = port_history(loop, other)
    assert [p.what for p in report.as_text] == ["signed thinking"]
    assert "binds it to that model" in report.as_text[0].reason


def test_a_gemini_latest_alias_keeps_its_thought_signature(
    provider_server: ProviderServer,
) -> None:
    def reply(parts: list[Any]) -> Any:
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "modelVersion": "gemini-2.5-flash-preview-09-2025",
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5},
        }

    call = {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
    provider_server.enqueue(
        json_reply(reply([{**call, "thoughtSignature": THOUGHT}])),
        json_reply(reply([{"text": "Sunny."}])),
    )
    model = GeminiModel(
        "gemini-flash-latest", api_key="k", base_url=f"{provider_server.url}/v1beta", retry=FAST
    )
    result = Agent(model, tools=[get_weather]).run_sync("Oslo?")
    assert result.output == "Sunny."
    turn = provider_server.requests[1].json()["contents"][1]
    assert turn["role"] == "model"
    assert turn["parts"][0]["thoughtSignature"] == THOUGHT


def test_names_alone_never_take_one_version_for_another() -> None:
    assert not same_model("claude-sonnet-4", "claude-sonnet-4-5")
    assert not same_model("claude-sonnet-4-5", "claude-sonnet-4")
    assert not same_model("gemini-2.5-flash", "gemini-2.5-flash-lite")
    assert same_model("claude-sonnet-4-5", "claude-sonnet-4-5-20250929")
    assert same_model("gpt-4o", "gpt-4o-2024-08-06")
    assert same_model("claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219")
    # a history recorded without the model asked for: the fallback reports the switch
    step = Message.assistant("Hi.", thinking=[ThinkingPart("Plan.", signature="sig")])
    step = attrs.evolve(step, provider="anthropic", model="claude-sonnet-4", endpoint="a")
    _, report = port_history(
        (Message.user("Go"), step), Target("anthropic", "claude-sonnet-4-5", "a")
    )
    assert [p.what for p in report.as_text] == ["signed thinking"]
    assert "sig" not in json.dumps([p.reason for p in report.as_text])


# -- the asked model is a field of the message (correctness round 4) -----------------------
# ``Message.asked_model``: the model an adapter asked for is a field (JSON ``askedModel``),
# and history written while it lived in ``extra`` reads into the field.


WRITTEN_BEFORE = json.dumps(
    [
        {
            "role": "assistant",
            "parts": [{"type": "text", "text": "hi"}],
            "model": "claude-sonnet-4-20250514",
            "provider": "anthropic",
            "askedModel": "claude-sonnet-4-0",
        }
    ]
).encode()


def test_json_written_as_askedModel_decodes_into_the_field() -> None:
    decoded = decode_history(WRITTEN_BEFORE)
    assert isinstance(decoded, Success)
    (message,) = decoded.unwrap()
    assert message.asked_model == "claude-sonnet-4-0"
    assert message.extra == ()  # not an unknown field any more
    assert asked_model_of(message) == "claude-sonnet-4-0"
    again = json.loads(encode_history((message,)))
    assert again[0]["askedModel"] == "claude-sonnet-4-0"


def test_record_asked_model_sets_the_field_and_is_idempotent() -> None:
    message = Message("assistant", (TextPart("hi"),), model="gpt-4o-2024-08-06")
    recorded = record_asked_model(message, "gpt-4o")
    assert recorded.asked_model == "gpt-4o"
    assert recorded.extra == ()
    assert record_asked_model(recorded, "gpt-4o") == recorded
    assert asked_model_of(message) is None
    assert b'"askedModel":"gpt-4o"' in encode_history((recorded,)).replace(b" ", b"")


# -- an alias and its snapshot are one model, on every request (issue 49, item 7) ----------
# ``claude-sonnet-4-0`` is answered as ``claude-sonnet-4-20250514``: thinking one of the
# two names produced goes back natively to an adapter naming the other, and every request
# of that adapter extends the previous one (no ``<thinking>`` text that a later request
# would send otherwise).


def open_loop(asked: str | None, answered: str, endpoint: str) -> list[Message]:
    """A tool loop left open by an adapter that asked for ``asked`` (``None``: history
    stored before the asked model was recorded), answered as ``answered``."""
    step = Message.assistant(
        None,
        tool_calls=[ToolCallPart("toolu_00", "get_weather", '{"city": "Oslo"}')],
        thinking=[ThinkingPart("First plan.", signature=SIGNATURE + "0")],
    )
    step = attrs.evolve(
        step, provider="anthropic", model=answered, endpoint=endpoint, asked_model=asked
    )
    return [Message.user("Oslo?"), step, Message.tool_result("toolu_00", "get_weather", "18 C")]


@pytest.mark.parametrize(
    ("history_asked", "answered", "adapter"),
    [
        # the snapshot's thinking, on the alias
        ("claude-sonnet-4-20250514", "claude-sonnet-4-20250514", "claude-sonnet-4-0"),
        # stored before askedModel was, on the alias
        (None, "claude-sonnet-4-20250514", "claude-sonnet-4-0"),
        # the alias's thinking, on the snapshot
        ("claude-sonnet-4-0", "claude-sonnet-4-20250514", "claude-sonnet-4-20250514"),
        ("claude-opus-4-0", "claude-opus-4-20250514", "claude-opus-4-20250514"),
    ],
)
def test_an_alias_and_its_snapshot_send_each_others_thinking_on_every_request(
    provider_server: ProviderServer, history_asked: str | None, answered: str, adapter: str
) -> None:
    host = provider_server.url.removeprefix("http://")
    history = open_loop(history_asked, answered, host)
    provider_server.enqueue(
        json_reply(claude_step(answered)),
        json_reply(claude(answered, [{"type": "text", "text": "Sunny."}], "end_turn")),
    )
    model = AnthropicModel(adapter, api_key="k", base_url=provider_server.url, retry=FAST)
    events: list[Any] = []
    result = Agent(model, tools=[get_weather]).run_with_history_sync(
        history, None, on_event=events.append
    )
    assert result.output == "Sunny."
    bodies = [strip_cache_markers(r.json()) for r in provider_server.requests]
    assert len(bodies) == 2
    first_thinking = {"type": "thinking", "thinking": "First plan.", "signature": SIGNATURE + "0"}
    for body in bodies:
        assert sent_thinking(body)[0] == first_thinking  # natively, every time
        assert "<thinking>" not in json.dumps(body)
    first, second = (b["messages"] for b in bodies)
    assert second[: len(first)] == first  # the second request extends the first
    assert not any(isinstance(e, HistoryPorted) for e in events)  # nothing changed


def test_a_minor_version_zero_names_its_major_version() -> None:
    assert same_model("claude-sonnet-4-0", "claude-sonnet-4-20250514")
    assert same_model("claude-opus-4-20250514", "claude-opus-4-0")
    assert same_model("claude-sonnet-4-0", "claude-sonnet-4")
    assert not same_model("claude-sonnet-4-0", "claude-sonnet-4-5")
    assert not same_model("claude-sonnet-4-0", "claude-sonnet-4-5-20250929")
    assert not same_model("claude-opus-4-0", "claude-opus-4-1-20250805")
    # an answer asked as the alias goes to its snapshot, never to a later one
    step = open_loop("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "a")[1]
    for model, kept in [
        ("claude-sonnet-4-5", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-sonnet-4-5-20251231", False),
    ]:
        ported, report = port_history((Message.user("Go"), step), Target("anthropic", model, "a"))
        assert (ported[1].parts[0] == step.parts[0]) is kept, model
        assert report.changed is not kept
