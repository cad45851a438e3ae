"""Pairing repair: provider-valid output, idempotence, exact reports, nothing else touched."""

from __future__ import annotations

import copy

from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import arguments, damaged_histories, histories, texts, valid_histories

from golem_core import (
    HistoryRepair,
    Message,
    Role,
    ToolCallPart,
    check_pairing,
    interrupted_result,
    join_instructions,
    normalize_history,
    repair_history,
)
from golem_core.history._instructions import apply_instructions
from golem_core.wire import (
    TRUNCATED_ARGS_KEY,
    wire_arguments,
)

any_history = st.one_of(histories(), damaged_histories())


def _distinct(history: tuple[Message, ...]) -> bool:
    return len({id(m) for m in history}) == len(history)


def _block_owner(out: tuple[Message, ...], k: int) -> int:
    """The index in ``out`` of the assistant message whose block holds ``out[k]``."""
    j = k - 1
    while j >= 0 and out[j].role is Role.TOOL:
        j -= 1
    assert j >= 0 and out[j].role is Role.ASSISTANT, "a tool message outside any block"
    return j


@given(any_history)
def test_the_output_is_provider_valid(history: tuple[Message, ...]) -> None:
    out = repair_history(history)
    assert check_pairing(out) == ()
    # the rule itself, checked independently of check_pairing
    for k, m in enumerate(out):
        if m.role is Role.ASSISTANT:
            needed = [p.id for p in m.parts if type(p) is ToolCallPart and p.id is not None]
            block = []
            j = k + 1
            while j < len(out) and out[j].role is Role.TOOL:
                block.append(out[j].tool_call_id)
                j += 1
            assert sorted(block) == sorted(set(needed))
        elif m.role is Role.TOOL:
            _block_owner(out, k)


@given(any_history)
def test_repair_is_idempotent(history: tuple[Message, ...]) -> None:
    out, report = normalize_history(history)
    again, report2 = normalize_history(out)
    assert again is out
    assert not report2.changed
    assert repair_history(out) is out
    assert len(report2.truncated) == len(report.truncated)
    assert len(report2.reused) == len(report.reused)


@given(any_history)
def test_repair_is_deterministic(history: tuple[Message, ...]) -> None:
    twin = copy.deepcopy(history)
    assert normalize_history(history) == normalize_history(twin)
    assert normalize_history(history) == normalize_history(list(history))
    assert check_pairing(history) == check_pairing(twin)


@given(any_history)
def test_every_other_message_is_untouched_and_in_order(history: tuple[Message, ...]) -> None:
    assume(_distinct(history))
    out, report = normalize_history(history)
    position = {id(m): i for i, m in enumerate(history)}
    removed = {e.message_index for e in report.dropped}
    moved = {e.message_index for e in report.moved}
    stayed = [position[id(m)] for m in out if id(m) in position and position[id(m)] not in moved]
    assert stayed == [i for i in range(len(history)) if i not in removed | moved]


@given(any_history)
def test_moved_results_sit_in_the_block_of_their_call(history: tuple[Message, ...]) -> None:
    assume(_distinct(history))
    out, report = normalize_history(history)
    where = {id(m): k for k, m in enumerate(out)}
    for entry in report.moved:
        result = history[entry.message_index]
        assert [m for m in out if m is result] == [result]
        owner = out[_block_owner(out, where[id(result)])]
        owner_index = next(i for i, m in enumerate(history) if m is owner)
        assert owner_index < entry.message_index  # it moved up, never down
        assert result.tool_call_id in {p.id for p in owner.tool_calls}
        # the nearest earlier turn holding the id in the input is this one
        nearest = max(
            i
            for i in range(entry.message_index)
            if history[i].role is Role.ASSISTANT
            and result.tool_call_id in {p.id for p in history[i].tool_calls}
        )
        assert nearest == owner_index


@given(any_history)
def test_the_report_is_exact(history: tuple[Message, ...]) -> None:
    assume(_distinct(history))
    out, report = normalize_history(history)
    assert len(out) == len(history) + len(report.synthesized) - len(report.dropped)
    inputs = {id(m) for m in history}
    added = [(k, m) for k, m in enumerate(out) if id(m) not in inputs]
    assert len(added) == len(report.synthesized)
    for (k, m), entry in zip(added, report.synthesized, strict=True):
        turn = history[entry.message_index]
        assert out[_block_owner(out, k)] is turn
        call = next(p for p in turn.tool_calls if p.id == entry.call_id)
        assert m == interrupted_result(call)
        assert entry.tool_name == call.name
    kept = {id(m) for m in out}
    assert {i for i, m in enumerate(history) if id(m) not in kept} == {
        e.message_index for e in report.dropped
    }
    for entry in report.dropped:
        assert history[entry.message_index].role is Role.TOOL
    assert report.changed == (out != history)


@given(any_history)
def test_problems_and_repairs_correspond_one_to_one(history: tuple[Message, ...]) -> None:
    _, report = normalize_history(history)
    problems = check_pairing(history)
    entries = report.synthesized + report.dropped + report.moved
    assert sorted((p.message_index, p.call_id or "", p.kind) for p in problems) == sorted(
        (e.message_index, e.call_id or "", e.reason) for e in entries
    )
    assert (problems == ()) == (not report.changed)
    assert [p.message_index for p in problems] == sorted(p.message_index for p in problems)


@given(any_history)
def test_truncated_lists_exactly_the_calls_that_are_not_objects(
    history: tuple[Message, ...],
) -> None:
    _, report = normalize_history(history)
    expected = [
        (i, p.id)
        for i, m in enumerate(history)
        if m.role is Role.ASSISTANT
        for p in m.parts
        if type(p) is ToolCallPart and not p.arguments_valid
    ]
    assert [(e.message_index, e.call_id) for e in report.truncated] == expected


@given(valid_histories())
def test_a_valid_history_is_returned_unchanged_with_an_empty_report(
    history: tuple[Message, ...],
) -> None:
    out, report = normalize_history(history)
    assert out is history
    assert report == HistoryRepair()
    assert check_pairing(history) == ()


@given(any_history, st.one_of(st.none(), texts), st.one_of(st.none(), texts))
def test_instructions_replace_every_system_message(
    history: tuple[Message, ...], static: str | None, dynamic: str | None
) -> None:
    instructions = join_instructions(static, dynamic)
    out = apply_instructions(history, instructions)
    assert apply_instructions(out, instructions) is out
    systems = [m for m in out if m.role is Role.SYSTEM]
    if instructions is None:
        assert systems == []
    else:
        assert out[0] == Message.system(instructions) and systems == [out[0]]
    rest = out if instructions is None else out[1:]
    assert list(rest) == [m for m in history if m.role is not Role.SYSTEM]


@given(st.builds(ToolCallPart, st.none(), st.just("t"), arguments))
def test_wire_arguments_is_an_object_or_the_verbatim_bytes(call: ToolCallPart) -> None:
    first, second = wire_arguments(call), wire_arguments(call)
    assert first == second and first is not second
    if call.arguments_valid:
        assert first == call.arguments_object
    else:
        assert first == {TRUNCATED_ARGS_KEY: call.arguments}
