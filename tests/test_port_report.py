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
    Usage,
    describe_cut,
)
from golem_core.retry import RetryPolicy
from golem_shell import Agent, tool
from golem_shell.models import OpenAIResponsesModel

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
