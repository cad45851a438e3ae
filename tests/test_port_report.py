"""Thinking left off is reported (issue 33, item 6): a Responses tool loop on a reasoning
model continued on a model that takes no reasoning items at the same endpoint reports the
item in ``left_off`` and emits ``HistoryPorted``; ``describe_cut`` blames thinking only
when thinking was dropped."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)

from golem_core import (
    HistoryPorted,
    Message,
    ModelRequest,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    describe_cut,
)
from golem_core.providers import Target, port_history
from golem_core.retry import RetryPolicy
from golem_core.wire import anthropic, gemini, openai, openai_responses
from golem_core.wire.gemini import with_thought_signature
from golem_core.wire.openai_responses import reasoning_part
from golem_shell import Agent, tool
from golem_shell.models import OpenAIModel, OpenAIResponsesModel

FAST = RetryPolicy(max_attempts=2, base=0.01, cap=0.02)
ENCRYPTED = "gAAAAB-encrypted-by-openai"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def responses(model: str, output: list[Any]) -> Any:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": model,
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    }


def test_reasoning_left_off_for_a_model_without_it_is_reported(
    provider_server: ProviderServer,
) -> None:
    url = f"{provider_server.url}/v1"
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "One call."}],
        "encrypted_content": ENCRYPTED,
    }
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Oslo"}',
    }
    provider_server.enqueue(json_reply(responses("o4-mini", [reasoning, call])))
    o4 = OpenAIResponsesModel("o4-mini", api_key="k", base_url=url, retry=FAST)
    ask = Message.user("Oslo?")
    step = asyncio.run(o4.request(ModelRequest((ask,), tools=(get_weather.definition,))))
    history = (ask, step, Message.tool_result("call_1", "get_weather", "18 C in Oslo"))

    provider_server.reset()
    text = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Sunny."}],
    }
    provider_server.enqueue(json_reply(responses("gpt-4.1", [text])))
    gpt = OpenAIResponsesModel("gpt-4.1", api_key="k", base_url=url, retry=FAST)
    events: list[Any] = []
    result = Agent(gpt, tools=[get_weather]).run_with_history_sync(
        history, None, on_event=events.append
    )
    assert result.output == "Sunny."
    body = json.dumps(provider_server.requests[0].json())
    assert ENCRYPTED not in body and "One call." not in body  # left off, as before
    (ported,) = [e for e in events if isinstance(e, HistoryPorted)]
    (left,) = ported.report.left_off
    assert (left.message_index, left.part_index, left.what) == (1, 0, "reasoning item")
    assert "encrypted reasoning is off" in left.reason
    # the same loop continued on a reasoning model keeps the item: nothing to report
    assert o4.port_report(ModelRequest(history)).changed is False


def test_describe_cut_names_thinking_only_when_thinking_was_dropped() -> None:
    answer = Message.assistant("Sunny.")
    first = ModelRequest((Message.user("Oslo?"), answer, Message.user("Rome?")))
    stamped = attrs.evolve(
        answer,
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        usage=Usage(input_tokens=3, output_tokens=1),
        run_id="run-2",
    )
    second = attrs.evolve(first, messages=(first.messages[0], stamped, first.messages[2]))
    assert describe_cut(first, second) is None  # stamps and usage never reach a provider
    thought = Message.assistant("Sunny.", thinking=[ThinkingPart("Plan.")])
    before = ModelRequest((Message.user("Oslo?"), thought, Message.user("Rome?")))
    after = attrs.evolve(before, messages=(before.messages[0], answer, before.messages[2]))
    gap = describe_cut(before, after)
    assert gap is not None and gap.cause == "thinking"
    edited = attrs.evolve(answer, parts=(TextPart("Rainy."),))
    gap = describe_cut(first, attrs.evolve(first, messages=(first.messages[0], edited)))
    assert gap is not None and gap.cause == "edited"


# -- whatever does not travel is reported (issue 49, item 7) -------------------------------
# A thinking part is either in the body a target is sent (natively, or as text) or in the
# report's ``left_off``: its own model's thinking without an artifact the target reads
# back (Chat Completions reasoning, unsigned Anthropic thinking, an unsigned Gemini
# thought, a reasoning item without its encrypted content) and thinking of no recorded
# origin that the target cannot send were dropped by the encoders without a word.


def _origin(message: Message, provider: str | None, model: str, endpoint: str) -> Message:
    return attrs.evolve(message, provider=provider, model=model, endpoint=endpoint)


def _thinking_turns() -> list[tuple[str, Message]]:
    """One assistant turn per kind of thinking, each part's text a unique marker."""
    claude = ("anthropic", "claude-sonnet-4-20250514", "api.anthropic.com")
    o3 = ("openai-responses", "o3-2025-04-16", "api.openai.com")
    turns = {
        "anthropic-signed": (ThinkingPart("MARK-a-signed", signature="sig-a"), claude),
        "anthropic-unsigned": (ThinkingPart("MARK-a-unsigned"), claude),
        "anthropic-redacted": (ThinkingPart("MARK-a-redacted", redacted=True), claude),
        "responses-encrypted": (reasoning_part("rs_1", ["MARK-r-enc"], ENCRYPTED), o3),
        "responses-plain": (reasoning_part("rs_2", ["MARK-r-plain"], None), o3),
        "chat-reasoning": (ThinkingPart("MARK-c"), ("openai", "deepseek-reasoner", "ds.test")),
        "gemini-signed": (
            with_thought_signature(ThinkingPart("MARK-g-signed"), "c2ln"),
            ("google", "gemini-2.5-flash", "g.test"),
        ),
        "gemini-unsigned": (
            ThinkingPart("MARK-g-unsigned"),
            ("google", "gemini-2.5-flash", "g.test"),
        ),
        "no-origin-signed": (ThinkingPart("MARK-n-signed", signature="sig-n"), (None, "x", "y")),
        "no-origin-plain": (ThinkingPart("MARK-n-plain"), (None, "x", "y")),
    }
    call = ToolCallPart("call_1", "get_weather", '{"city": "Oslo"}')
    return [
        (name, _origin(Message.assistant(None, tool_calls=[call], thinking=[part]), *origin))
        for name, (part, origin) in turns.items()
    ]


TARGETS = [
    Target("anthropic", "claude-sonnet-4-0", "api.anthropic.com"),
    Target("openai-responses", "gpt-4.1", "api.openai.com", replays_reasoning=False),
    Target("openai-responses", "o3", "api.openai.com"),
    Target("openai", "deepseek-reasoner", "ds.test"),
    Target("google", "gemini-2.5-flash", "g.test"),
]


def _encoded(request: ModelRequest, target: Target) -> str:
    model = target.model
    match target.provider.value:
        case "anthropic":
            body = anthropic.encode_request(request, model=model, stream=False)
        case "openai-responses":
            body = openai_responses.encode_request(
                request, model=model, stream=False, encrypted_reasoning=target.replays_reasoning
            )
        case "openai":
            body = openai.encode_request(request, model=model, stream=False)
        case _:
            body = gemini.encode_request(request, model=model)
    return json.dumps(body.unwrap())


@pytest.mark.parametrize("target", TARGETS, ids=str)
@pytest.mark.parametrize("closed", [False, True], ids=["current-loop", "closed-loop"])
def test_every_thinking_part_is_sent_or_reported(target: Target, closed: bool) -> None:
    unreported: list[str] = []
    for name, turn in _thinking_turns():
        history = [Message.user("Oslo?"), turn, Message.tool_result("call_1", "get_weather", "18")]
        if closed:
            history.append(Message.user("And Rome?"))
        ported, report = port_history(history, target)
        body = _encoded(ModelRequest(ported, tools=(get_weather.definition,)), target)
        mark = turn.parts[0].text  # type: ignore[union-attr]
        sent = mark in body
        left = [p for p in report.left_off if (p.message_index, p.part_index) == (1, 0)]
        as_text = [p for p in report.as_text if (p.message_index, p.part_index) == (1, 0)]
        if sent == bool(left) or bool(as_text) != (sent and "<thinking>" in body):
            unreported.append(f"{name}: sent={sent} left_off={left} as_text={as_text}")
        assert port_history(ported, target)[1].changed is False  # idempotent
    assert unreported == []


def test_a_reasoning_models_own_reasoning_it_cannot_send_is_reported(
    provider_server: ProviderServer,
) -> None:
    def chat(message: dict[str, Any]) -> Any:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "deepseek-reasoner",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    provider_server.enqueue(
        json_reply(
            chat(
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "One call.",
                    "tool_calls": [call],
                }
            )
        ),
        json_reply(chat({"role": "assistant", "content": "Sunny."})),
    )
    model = OpenAIModel(
        "deepseek-reasoner", api_key="k", base_url=f"{provider_server.url}/v1", retry=FAST
    )
    events: list[Any] = []
    result = Agent(model, tools=[get_weather]).run_sync("Oslo?", on_event=events.append)
    assert result.output == "Sunny."
    assert [type(p) for p in result.messages[1].parts] == [ThinkingPart, ToolCallPart]
    assert "One call." not in json.dumps(provider_server.requests[1].json())  # never sent
    (ported,) = [e for e in events if isinstance(e, HistoryPorted)]
    (left,) = ported.report.left_off
    assert (left.message_index, left.part_index, left.what) == (1, 0, "thinking")
    assert "takes back no thinking" in left.reason


def test_thinking_of_no_recorded_origin_sent_to_responses_is_reported(
    provider_server: ProviderServer,
) -> None:
    """An Anthropic turn stored without its origin (written by another tool), continued
    on ``gpt-4.1`` through Responses: its signed thinking cannot be sent there, and the
    ``HistoryPorted`` event says so."""
    step = Message.assistant(
        None,
        tool_calls=[ToolCallPart("toolu_01", "get_weather", '{"city": "Oslo"}')],
        thinking=[ThinkingPart("One call.", signature="sig")],
    )
    history = (Message.user("Oslo?"), step, Message.tool_result("toolu_01", "get_weather", "18"))
    text = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Sunny."}],
    }
    provider_server.enqueue(json_reply(responses("gpt-4.1", [text])))
    gpt = OpenAIResponsesModel(
        "gpt-4.1", api_key="k", base_url=f"{provider_server.url}/v1", retry=FAST
    )
    events: list[Any] = []
    result = Agent(gpt, tools=[get_weather]).run_with_history_sync(
        history, None, on_event=events.append
    )
    assert result.output == "Sunny."
    assert "One call." not in json.dumps(provider_server.requests[0].json())
    (ported,) = [e for e in events if isinstance(e, HistoryPorted)]
    assert ported.report.as_text == ()
    (left,) = ported.report.left_off
    assert (left.message_index, left.part_index, left.what) == (1, 0, "signed thinking")
    assert "no origin recorded" in left.reason
