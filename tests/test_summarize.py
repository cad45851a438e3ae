"""summarize_history: the shell half of summarization, driven by a scripted model."""

from __future__ import annotations

import json

import pytest
from returns.result import Failure, Success

from golem_core import (
    Message,
    ModelErrorKind,
    Role,
    ToolCallPart,
    check_pairing,
    encode_history,
    is_summary,
)
from golem_shell import ModelError, ScriptedModel
from golem_shell.context._summarize import (
    DEFAULT_SUMMARY_INSTRUCTIONS,
    DEFAULT_SUMMARY_PREFIX,
    run_history_processor,
    summarize_history,
)

pytestmark = pytest.mark.anyio


def conversation() -> tuple[Message, ...]:
    return (
        Message.system("be brief"),
        Message.user("plan a trip to Oslo"),
        Message.assistant(None, tool_calls=[ToolCallPart("c1", "weather", '{"city":"Oslo"}')]),
        Message.tool_result("c1", "weather", "rain all week"),
        Message.assistant("Pack a raincoat."),
        Message.user("and hotels?"),
        Message.assistant("The Grand is central."),
        Message.user("book it"),
        Message.assistant("Booked."),
    )


async def test_the_older_turns_become_one_marked_summary() -> None:
    model = ScriptedModel(["Oslo trip; rain expected; raincoat advised."])
    processor = summarize_history(model, keep_last_turns=2, step_turns=0)
    history = conversation()
    out = (await processor(history)).unwrap()
    assert out[0] == history[0]  # system messages before the cut stay in front
    summary = out[1]
    assert is_summary(summary)
    assert summary.role is Role.USER
    assert summary.text == DEFAULT_SUMMARY_PREFIX + "Oslo trip; rain expected; raincoat advised."
    assert out[2:] == history[5:]
    assert check_pairing(out) == ()
    assert json.loads(encode_history((summary,)))[0]["summary"] == {"messages": 4}
    (request,) = model.requests
    assert request.instructions == DEFAULT_SUMMARY_INSTRUCTIONS
    assert request.tools == ()
    assert request.messages[:-1] == history[1:5]
    assert request.messages[-1].role is Role.USER


async def test_the_callers_history_is_not_changed_and_a_summary_is_not_summarized_again() -> None:
    model = ScriptedModel(["summary"])
    processor = summarize_history(model, keep_last_turns=1, step_turns=0)
    history = conversation()
    before = encode_history(history)
    out = (await processor(history)).unwrap()
    assert encode_history(history) == before
    assert await processor(out) == Success(out)  # nothing left to summarize: no request
    assert len(model.requests) == 1


async def test_nothing_to_summarize_makes_no_request() -> None:
    model = ScriptedModel([])
    history = conversation()
    assert await summarize_history(model, keep_last_turns=4, step_turns=0)(history) == Success(
        history
    )
    big = summarize_history(model, keep_last_turns=1, max_tokens=100_000)
    assert await big(history) == Success(history)
    assert model.requests == []


async def test_a_dangling_call_is_repaired_in_the_summarizing_request() -> None:
    model = ScriptedModel(["s"])
    history = (
        Message.user("a"),
        Message.assistant(None, tool_calls=[ToolCallPart("c9", "search", "{}")]),
        Message.user("b"),
        Message.assistant("c"),
    )
    out = (await summarize_history(model, keep_last_turns=1, step_turns=0)(history)).unwrap()
    assert out[1:] == history[2:]
    assert check_pairing(model.requests[0].messages) == ()


async def test_a_failed_summary_request_is_a_history_failure() -> None:
    error = ModelError(ModelErrorKind.OVERLOADED, "busy", provider="anthropic")
    processor = summarize_history(ScriptedModel([error]), keep_last_turns=1, step_turns=0)
    result = await run_history_processor(processor, conversation())
    assert isinstance(result, Failure)
    assert "the summarizing request failed" in str(result.failure())
    assert "busy" in str(result.failure())


async def test_an_answer_without_text_is_a_failure() -> None:
    processor = summarize_history(ScriptedModel(["   "]), keep_last_turns=1, step_turns=0)
    result = await processor(conversation())
    assert isinstance(result, Failure)
    assert "answered without text" in str(result.failure())


async def test_custom_prefix_and_instructions() -> None:
    model = ScriptedModel(["x"])
    processor = summarize_history(
        model, keep_last_turns=1, step_turns=0, prefix="", instructions="Be terse."
    )
    out = (await processor(conversation())).unwrap()
    assert out[1].text == "x"
    assert model.requests[0].instructions == "Be terse."
    assert repr(processor) == "summarize_history('scripted', keep_last_turns=1, step_turns=0)"


def test_bad_arguments_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="keep_last_turns"):
        summarize_history(ScriptedModel([]), keep_last_turns=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        summarize_history(ScriptedModel([]), max_tokens=0)


async def test_by_default_a_summary_waits_for_a_step_and_then_stays_put() -> None:
    """Issue 23: summarization cuts in steps. With ``step_turns`` (4 by default) nothing is
    summarized until more than ``keep_last_turns + step_turns`` turns follow the last
    summary; between compactions the summary and the turns after it are byte-identical
    (the prefix a prompt cache serves), and each compaction replaces the old summary."""

    def turns(start: int, n: int) -> tuple[Message, ...]:
        return tuple(
            m
            for i in range(start, start + n)
            for m in (Message.user(f"q{i}"), Message.assistant(f"a{i}"))
        )

    model = ScriptedModel(["first summary", "second summary"])
    processor = summarize_history(model, keep_last_turns=1)
    assert repr(processor) == "summarize_history('scripted', keep_last_turns=1, step_turns=4)"
    history = turns(0, 5)  # 5 turns: 1 kept + 4 of step: not yet
    assert (await processor(history)).unwrap() == history
    history = turns(0, 6)
    first = (await processor(history)).unwrap()
    assert is_summary(first[0]) and first[1:] == turns(5, 1)
    grown = first
    for n in range(6, 10):  # four more turns: the summary stays put, the prefix grows
        grown = (*grown, *turns(n, 1))
        assert (await processor(grown)).unwrap() == grown
    grown = (*grown, *turns(10, 1))  # 6 turns after the summary: the next compaction
    second = (await processor(grown)).unwrap()
    assert is_summary(second[0]) and "second summary" in second[0].text
    assert second[1:] == turns(10, 1)
    assert len(model.requests) == 2
