"""Invariants of the context processors and the history schema, on the shared strategies."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st
from strategies import damaged_histories, histories, messages, tool_turns, valid_histories

from golem_core import (
    Message,
    Role,
    TextPart,
    ThinkingPart,
    check_pairing,
    clear_old_tool_results,
    clear_tool_results,
    compose,
    drop_thinking,
    encode_history,
    is_summary,
    plan_summary,
    summary_message,
    trim_history,
    turn_starts,
)
from golem_shell import history_schema

any_histories = st.one_of(histories(), damaged_histories(), valid_histories())
keeps = st.integers(0, 8)


@st.composite
def thoughtful_histories(draw: st.DrawFn) -> tuple[Message, ...]:
    """User turns, tool exchanges with thinking, and assistant messages of any parts."""
    pieces = st.one_of(
        messages(role=Role.USER).map(lambda m: (m,)),
        tool_turns(id_prefix=draw(st.sampled_from(["a", "b"]))),
        messages(role=Role.ASSISTANT).map(lambda m: (m,)),
        messages(role=Role.SYSTEM).map(lambda m: (m,)),
    )
    return tuple(m for piece in draw(st.lists(pieces, max_size=8)) for m in piece)


def skeleton(m: Message) -> tuple[object, ...]:
    return (m.role, m.tool_call_id, m.tool_name, m.failed, m.run_id, m.conversation_id, m.extra)


# -- clear_tool_results ------------------------------------------------------------------------


@given(any_histories, keeps)
def test_clearing_keeps_every_message_but_the_old_results_content(
    history: tuple[Message, ...], keep: int
) -> None:
    out, report = clear_old_tool_results(history, keep_last=keep)
    assert len(out) == len(history)
    assert [skeleton(m) for m in out] == [skeleton(m) for m in history]
    results = [i for i, m in enumerate(history) if m.role is Role.TOOL]
    newest = set(results[len(results) - keep :]) if keep else set()
    cleared = {e.message_index for e in report.cleared}
    for i, (before, after) in enumerate(zip(history, out, strict=True)):
        if i in cleared:
            assert before.role is Role.TOOL and i not in newest
            assert after.parts == (TextPart("[tool result cleared to save context]"),)
            assert before.parts != after.parts
        else:
            assert after is before
    assert check_pairing(out) == check_pairing(history)


@given(any_histories, keeps, keeps)
def test_clearing_is_idempotent_and_monotone(history: tuple[Message, ...], a: int, b: int) -> None:
    small, large = min(a, b), max(a, b)
    once = clear_tool_results(keep_last=small)(history).unwrap()
    assert clear_tool_results(keep_last=small)(once).unwrap() is once
    _, fewer = clear_old_tool_results(history, keep_last=large)
    _, more = clear_old_tool_results(history, keep_last=small)
    assert {e.message_index for e in fewer.cleared} <= {e.message_index for e in more.cleared}


# -- drop_thinking -----------------------------------------------------------------------------


@given(st.one_of(thoughtful_histories(), any_histories), keeps)
def test_dropping_thinking_touches_only_old_assistant_thinking(
    history: tuple[Message, ...], keep: int
) -> None:
    out = drop_thinking(keep_last_turns=keep, step=1)(history).unwrap()
    starts = turn_starts(history)
    boundary = len(history) if keep == 0 else (0 if len(starts) <= keep else starts[-keep])
    assert len(out) == len(history)
    for i, (before, after) in enumerate(zip(history, out, strict=True)):
        assert skeleton(after) == skeleton(before)
        kept = tuple(p for p in before.parts if type(p) is not ThinkingPart)
        if i >= boundary or before.role is not Role.ASSISTANT or not kept:
            assert after is before
        else:
            assert after.parts == kept
    assert check_pairing(out) == check_pairing(history)
    assert drop_thinking(keep_last_turns=keep, step=1)(out).unwrap() == out


# -- plan_summary ------------------------------------------------------------------------------


@given(st.one_of(any_histories, thoughtful_histories()), keeps)
def test_the_plan_cuts_at_a_turn_and_partitions_the_history(
    history: tuple[Message, ...], keep: int
) -> None:
    plan = plan_summary(history, keep_last_turns=keep)
    if plan is None:
        return
    assert plan.cut in (*turn_starts(history), len(history))
    assert plan.kept == history[plan.cut :]
    older = history[: plan.cut]
    assert plan.head == tuple(m for m in older if m.role is Role.SYSTEM)
    assert plan.to_summarize == tuple(m for m in older if m.role is not Role.SYSTEM)
    assert not all(is_summary(m) for m in plan.to_summarize)
    if keep:
        assert len([s for s in turn_starts(history) if s >= plan.cut]) >= keep
    # no kept result answers a call that only the summarized part makes
    before = {
        c.id
        for m in plan.to_summarize
        if m.role is Role.ASSISTANT
        for c in m.tool_calls
        if c.id is not None
    }
    seen: set[str | None] = set()
    for m in plan.kept:
        seen.update(c.id for c in m.tool_calls if m.role is Role.ASSISTANT)
        if m.role is Role.TOOL and m.tool_call_id in before:
            assert m.tool_call_id in seen


@given(valid_histories(max_turns=8), st.integers(0, 4))
def test_a_summarized_valid_history_stays_valid_and_is_summarized_once(
    history: tuple[Message, ...], keep: int
) -> None:
    plan = plan_summary(history, keep_last_turns=keep)
    if plan is None:
        return
    out = plan.apply(summary_message("summary", summarized=len(plan.to_summarize)))
    assert check_pairing(out) == ()
    assert out[len(plan.head)].role is Role.USER
    assert plan_summary(out, keep_last_turns=keep) is None


@given(any_histories, keeps, st.integers(1, 12))
def test_the_context_processors_compose_with_a_cut(
    history: tuple[Message, ...], keep: int, limit: int
) -> None:
    processor = compose(
        clear_tool_results(keep_last=keep), drop_thinking(keep_last_turns=keep), trim_history(limit)
    )
    result = processor(history)
    alone = trim_history(limit)(history)
    assert type(result) is type(alone)
    if check_pairing(history) == () and result.value_or(None) is not None:
        assert check_pairing(result.unwrap()) == ()


# -- the JSON Schema of the contract ---------------------------------------------------------


@cache
def validator() -> Any:
    return jsonschema.Draft202012Validator(history_schema())


@given(st.one_of(histories(), valid_histories()))
def test_every_encoded_history_validates_against_the_schema(
    history: tuple[Message, ...],
) -> None:
    document = json.loads(encode_history(history))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator().iter_errors(document)]
    assert errors == []
