"""The compaction record (issue 35 item 1, ADR 0140): a fold names the messages it replaced
by reference, its processor, the tokens before and after and its outcome; the record
survives the JSON codec, SQLite and PostgreSQL stores, and never reaches a provider; a run
reports its folds as ``CompactionStarted`` / ``CompactionFinished`` and span events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from returns.result import Success
from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Store,
    backend,
    store,
    store_database,
)

from golem_core import (
    COMPACTED,
    DECLINED_NOTHING_TO_FOLD,
    DECLINED_PENDING_CALL,
    CompactionFinished,
    CompactionRecord,
    CompactionStarted,
    HistoryProcessed,
    Message,
    ModelRequest,
    ToolCallPart,
    Usage,
    approximate_tokens,
    check_pairing,
    clear_old_tool_results,
    clear_tool_results,
    compaction_of,
    decode_history,
    encode_history,
    is_summary,
    message_ref,
    plan_compaction,
    plan_summary,
)
from golem_core.wire import anthropic, gemini, openai, openai_responses
from golem_shell import Agent, FunctionModel, ScriptedModel
from golem_shell.context._summarize import DEFAULT_SUMMARY_PREFIX, summarize_history

pytestmark = pytest.mark.anyio


def conversation() -> tuple[Message, ...]:
    return (
        Message.user("plan a trip to Oslo").with_ids("r1", "c1"),
        Message.assistant(None, tool_calls=[ToolCallPart("k1", "weather", '{"city":"Oslo"}')]),
        Message.tool_result("k1", "weather", "rain all week"),
        Message.assistant("Pack a raincoat."),
        Message.user("and hotels?"),
        Message.assistant("The Grand is central."),
        Message.user("book it"),
        Message.assistant("Booked."),
    )


def summarizer_answer(text: str) -> FunctionModel:
    def answer(request: ModelRequest) -> Message:
        reply = Message.assistant(text)
        return Message(reply.role, reply.parts, usage=Usage(input_tokens=120, output_tokens=9))

    return FunctionModel(answer)


async def summarized() -> tuple[tuple[Message, ...], Message]:
    processor = summarize_history(
        summarizer_answer("Oslo trip; rain; raincoat."), keep_last_turns=1, step_turns=0
    )
    out = (await processor(conversation())).unwrap()
    return out, out[0]


async def test_a_summary_names_what_it_replaced_by_reference() -> None:
    history = conversation()
    out, summary = await summarized()
    record = compaction_of(summary)
    assert record is not None
    assert record.kind == "summary" and record.outcome == COMPACTED
    assert record.processor.startswith("summarize_history(")
    assert record.replaced == tuple(message_ref(m) for m in history[:6])
    assert len(set(record.replaced)) == 6  # each message by its own reference
    kept = sum(approximate_tokens(m) for m in history[6:])
    assert record.tokens_before == sum(approximate_tokens(m) for m in history)
    assert record.tokens_after == approximate_tokens(summary) + kept
    assert record.tokens_after < record.tokens_before
    assert record.usage == Usage(input_tokens=120, output_tokens=9)
    assert summary.text.startswith(DEFAULT_SUMMARY_PREFIX)
    assert "summarized" in DEFAULT_SUMMARY_PREFIX
    assert out[1:] == history[6:]
    assert check_pairing(out) == ()


async def test_a_reference_does_not_depend_on_the_place() -> None:
    history = conversation()
    assert message_ref(history[4]) == message_ref(conversation()[4])
    assert message_ref(history[4]) != message_ref(history[6])  # "and hotels?" / "book it"
    # a cut before it, a round trip: the same reference
    again = decode_history(encode_history(history[3:])).unwrap()
    assert message_ref(again[1]) == message_ref(history[4])


async def test_the_recall_hint_joins_the_note() -> None:
    processor = summarize_history(
        summarizer_answer("s"), keep_last_turns=1, step_turns=0, recall_hint="Call recall(q)."
    )
    out = (await processor(conversation())).unwrap()
    assert out[0].text == DEFAULT_SUMMARY_PREFIX + "Call recall(q).\n\ns"


async def test_the_record_round_trips_through_the_json_contract() -> None:
    out, summary = await summarized()
    data = encode_history(out)
    written = json.loads(data)[0]
    assert written["summary"] == {"messages": 6}
    assert written["compaction"]["outcome"] == "compacted"
    assert written["compaction"]["tokensBefore"] > written["compaction"]["tokensAfter"]
    decoded = decode_history(data).unwrap()
    assert decoded == out
    assert compaction_of(decoded[0]) == compaction_of(summary)
    assert is_summary(decoded[0])


async def test_the_record_survives_every_store(store: Store) -> None:  # noqa: F811
    out, summary = await summarized()
    await store.append(OWNER, "conv", out, expected_length=0)
    loaded = await store.load(OWNER, "conv")
    assert loaded == out
    assert compaction_of(loaded[0]) == compaction_of(summary)


async def test_every_wire_encoder_takes_the_summary_and_never_sends_the_record() -> None:
    out, summary = await summarized()
    record = compaction_of(summary)
    assert record is not None
    request = ModelRequest(messages=out)
    bodies = [
        openai.encode_request(request, model="gpt-4o", stream=False),
        anthropic.encode_request(request, model="claude-sonnet-4-5", stream=False),
        gemini.encode_request(request, model="gemini-2.5-flash"),
        openai_responses.encode_request(request, model="gpt-4o", stream=False),
    ]
    for body in bodies:
        assert isinstance(body, Success), body
        text = json.dumps(body.unwrap())
        assert "Oslo trip; rain; raincoat." in text  # the summary's text travels
        assert "compaction" not in text and record.replaced[0] not in text


def test_a_clear_names_the_results_it_cleared() -> None:
    history = tuple(
        m
        for i in range(5)
        for m in (
            Message.user(f"q{i}"),
            Message.assistant(None, tool_calls=[ToolCallPart(f"k{i}", "look", "{}")]),
            Message.tool_result(f"k{i}", "look", "x" * 400),
        )
    )
    out, report = clear_old_tool_results(history, keep_last=1, step=2, record=True)
    cleared = [r.message_index for r in report.cleared]
    assert cleared == [2, 5, 8, 11]
    record = compaction_of(out[11])  # on the newest result it emptied
    assert record is not None and record.kind == "cleared"
    assert record.replaced == tuple(message_ref(history[i]) for i in cleared)
    assert record.processor == "clear_tool_results(keep_last=1, step=2)"
    assert record.tokens_after < record.tokens_before
    assert all(compaction_of(out[i]) is None for i in (2, 5, 8))
    assert record == report.record
    again, report_again = clear_old_tool_results(out, keep_last=1, step=2, record=True)
    assert again == out and not report_again.changed  # idempotent
    plain, _ = clear_old_tool_results(history, keep_last=1, step=2)
    assert compaction_of(plain[11]) is None  # the report holds it; the history need not
    processed = clear_tool_results(keep_last=1, step=2)(history).unwrap()
    assert processed == out  # the processor writes it


def pending_approval() -> tuple[Message, ...]:
    return (
        Message.user("delete the repo"),
        Message.assistant(None, tool_calls=[ToolCallPart("k9", "delete_repo", "{}")]),
    )


def test_a_fold_never_takes_a_pending_call() -> None:
    """With ``keep_last_turns=0`` a summary took everything, the pending call included
    (the result of an approval would then answer a call the history no longer holds)."""
    history = (
        Message.user("hello"),
        Message.assistant("hi"),
        *pending_approval(),
    )
    plan = plan_summary(history, keep_last_turns=0)
    assert plan is not None
    assert plan.kept == history[2:]  # the pending turn stays whole
    assert plan_compaction(pending_approval(), keep_last_turns=0) == DECLINED_PENDING_CALL
    assert plan_summary(pending_approval(), keep_last_turns=0) is None


def test_declines_say_why() -> None:
    assert plan_compaction(conversation(), keep_last_turns=9) == DECLINED_NOTHING_TO_FOLD
    assert (
        plan_compaction(conversation(), keep_last_turns=1, max_tokens=10_000)
        == DECLINED_NOTHING_TO_FOLD
    )


def test_a_record_this_version_cannot_read_is_kept_not_read() -> None:
    foreign = Message("user", Message.user("x").parts, extra=(("compaction", '{"kind":"x"}'),))
    assert compaction_of(foreign) is None
    assert decode_history(encode_history((foreign,))).unwrap() == (foreign,)
    assert CompactionRecord.from_json({"processor": "p", "kind": "summary"}) is None


async def test_a_run_reports_its_fold_as_events() -> None:
    events: list[Any] = []
    agent = Agent(
        ScriptedModel(["Done.", "Done."]),
        history_processor=summarize_history(
            summarizer_answer("Oslo trip."), keep_last_turns=1, step_turns=0
        ),
    )
    result = await agent.run_with_history(conversation(), "next?", on_event=events.append)
    names = [type(e).__name__ for e in events]
    assert names[:4] == [
        "RunStarted",
        "HistoryProcessed",
        "CompactionStarted",
        "CompactionFinished",
    ]
    started, finished = events[2], events[3]
    assert isinstance(started, CompactionStarted) and isinstance(finished, CompactionFinished)
    assert isinstance(events[1], HistoryProcessed)
    assert started.trigger == finished.trigger == "processor"
    assert started.messages == len(conversation())
    assert finished.outcome == COMPACTED
    assert finished.record is not None
    assert finished.record == compaction_of(result.messages[0])
    assert finished.record.replaced == tuple(message_ref(m) for m in conversation()[:6])

    events.clear()  # a history with nothing to fold: no compaction event
    await agent.run_with_history(conversation()[-2:], "next?", on_event=events.append)
    assert not any(isinstance(e, CompactionStarted | CompactionFinished) for e in events)
