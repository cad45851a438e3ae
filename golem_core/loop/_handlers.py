"""The loop's handlers: how each outcome turns one ``RunState`` into the next.

Owns the rules of a run's steps: what a model turn asks for (tools to run, calls that
wait, an output to validate, the budgets it spends), how a tool batch closes, how answers
resume a pause, how a bad output gets a correction round. Each handler is a total,
deterministic function of the state and the outcome; ``golem_core.loop._table`` names
which handler folds which outcome in which phase, and checks where it lands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

import attrs

from golem_core._messages import Message, Role, TextPart, ToolCallPart, Usage, calls_of
from golem_core._model import ModelErrorKind
from golem_core.history._history import check_pairing, interrupted_result
from golem_core.history._processors import _open_tail
from golem_core.history._sanitize import safe_parts
from golem_core.loop._deferred import (
    Approved,
    DeferredCall,
    Denied,
    ExternalResult,
    check_resume,
)
from golem_core.loop._values import (
    FINAL_RESULT_TEXT,
    NOT_EXECUTED_TEXT,
    STEERED_TEXT,
    Answered,
    CompactionDeclined,
    HistoryCompacted,
    ModelFailed,
    Phase,
    RunConfig,
    RunState,
    Stage,
    Steered,
    ToolCanceled,
    ToolCrashed,
    ToolOutcome,
    ToolRetry,
    ToolReturned,
    _outcome_result,
    _result,
    _stamp,
)

__all__: list[str] = []  # private handlers, named by golem_core.loop._table


def _failed(state: RunState, stage: Stage, reason: str) -> RunState:
    return attrs.evolve(state, phase=Phase.FAILED, failure=(stage, reason))


def _add(state: RunState, messages: Sequence[Message], *, stamp: bool = True) -> RunState:
    """``state`` with ``messages`` added, each stamped in its place after the ones before
    it (unless ``stamp`` is false: they are in final form already)."""
    if not stamp:
        return attrs.evolve(state, added=state.added + tuple(messages))
    for m in messages:
        state = attrs.evolve(state, added=(*state.added, _stamp(state, m)))
    return state


# -- a request refused as too long: compact once and retry (ADR 0141) ------------------


def _on_model_failed(state: RunState, failed: ModelFailed) -> RunState:
    """A request failed for good. Refused as too long, the run compacts its history once
    (``COMPACT``) when ``compact_on_overflow`` is set and it has not compacted for this
    request yet; the same refusal after that compaction fails the run, naming it."""
    too_long = failed.kind is ModelErrorKind.CONTEXT_TOO_LONG
    if too_long and state.compacted_at == state.requests:
        return _failed(
            state,
            Stage.REQUEST,
            "the request was still too long after the run compacted its history once: "
            + failed.reason,
        )
    if too_long and state.config.compact_on_overflow:
        return attrs.evolve(state, phase=Phase.COMPACT, overflow=failed.reason)
    return _failed(state, Stage.REQUEST, failed.reason)


def _foldable(history: Sequence[Message]) -> int:
    """How many leading messages of ``history`` a compaction may fold: all of them, but
    the turn of a call still waiting for its result (from the user message that opened
    it). Total."""
    pending = _open_tail(history)
    if pending is None:
        return len(history)
    opening = [i for i in range(pending + 1) if history[i].role is Role.USER]
    return opening[-1] if opening else 0


def _overflow_failure(state: RunState, outcome: str) -> RunState:
    return _failed(
        state,
        Stage.REQUEST,
        f"the provider refused the request as too long ({state.overflow}); compacting the"
        f" history once did not help: {outcome}",
    )


def _on_compacted(state: RunState, done: HistoryCompacted) -> RunState:
    """The strategy folded the history: checked (the pending turn unchanged at the end,
    no call split from its result), then the request is sent again."""
    before = state.history
    tail = before[_foldable(before) :]
    after = tuple(m for m in done.history if m.role is not Role.SYSTEM)
    if tail and after[len(after) - len(tail) :] != tail:
        return _overflow_failure(state, "failed: the strategy changed the turn of a pending call")
    if len(check_pairing(after + state.added)) > len(check_pairing(before + state.added)):
        return _overflow_failure(state, "failed: the strategy split a call from its result")
    record = done.record
    usage = state.usage if record.usage is None else state.usage + record.usage
    supplied = state.supplied
    if state.config.signing_key is not None and supplied is None:
        supplied = before  # what the run adds is signed after the history as supplied too
    return attrs.evolve(
        state,
        history=after,
        compactions=(*state.compactions, record),
        compacted_at=state.requests,
        overflow=None,
        usage=usage,
        supplied=supplied,
        phase=Phase.REQUEST,
    )


def _on_compaction_declined(state: RunState, declined: CompactionDeclined) -> RunState:
    """The strategy did not fold (nothing to fold, a pending call, or it failed): the run
    fails at stage ``request`` with the provider's refusal and the outcome."""
    return _overflow_failure(state, declined.outcome)


# -- deciding --------------------------------------------------------------------------


def _count_retry(state: RunState, name: str) -> tuple[RunState, bool]:
    """Count a retry of tool ``name``; ``True`` when its budget is exceeded."""
    counts = dict(state.retries)
    counts[name] = counts.get(name, 0) + 1
    spec = state.config.tool(name)
    limit = spec.max_retries if spec is not None else 2
    return attrs.evolve(state, retries=tuple(sorted(counts.items()))), counts[name] > limit


def _exceeded(state: RunState, name: str, last: str) -> str:
    """Why a run fails when tool ``name`` ran out of retries: the budget, and what the last
    retry said (the tool's own ``ModelRetry`` message, or why its arguments were refused)."""
    spec = state.config.tool(name)
    limit = spec.max_retries if spec is not None else 2
    return f"tool {name!r} exceeded its retry budget ({limit} retries); {last}"


def _spent(config: RunConfig, usage: Usage) -> str | None:
    """Which token or cost budget of the run ``usage`` has reached, in words, or
    ``None``."""
    checks = (
        ("input", usage.input_tokens, config.max_input_tokens),
        ("output", usage.output_tokens, config.max_output_tokens),
        ("total", usage.input_tokens + usage.output_tokens, config.max_total_tokens),
    )
    for kind, used, limit in checks:
        if limit is not None and used >= limit:
            return f"the run has used {used} {kind} tokens, its limit is {limit}"
    if config.max_cost is not None and config.price is not None:
        cost = config.price.cost(usage)
        if cost >= config.max_cost:
            return f"the run has cost {cost:.6g}, its limit is {config.max_cost:.6g}"
    return None


def _on_response(state: RunState, message: Message) -> RunState:
    """A model turn lands: it is stamped and added as evidence (a call repeating an
    earlier call's id in the turn is not a new call: one id, one execution, one result,
    ADR 0030 §3), then the run stops at a spent budget, validates a text answer or an
    output call, or sorts the turn's calls (``_sort_calls``)."""
    usage = state.usage + message.usage if message.usage is not None else state.usage
    stamped = _stamp(state, message)
    calls = tuple(calls_of(stamped))
    state = attrs.evolve(
        state,
        requests=state.requests + 1,
        usage=usage,
        added=(*state.added, stamped),
        evidence=len(state.added) + 1,
        turn=stamped,
        awaiting=calls,
    )
    spent = _spent(state.config, usage)
    if spent is not None:  # the answer is evidence; no further request is sent
        return _failed(state, Stage.LIMIT, f"usage limit reached: {spent}")
    if not calls:  # a text answer: the driver validates it (JSON for structured output)
        return attrs.evolve(state, phase=Phase.VALIDATE, candidate=message)
    output_call = next((c for c in calls if c.name == state.config.output_tool), None)
    if output_call is not None:
        return attrs.evolve(state, phase=Phase.VALIDATE, candidate=output_call)
    return _sort_calls(state, calls)


def _refusal(state: RunState, call: ToolCallPart) -> str | None:
    """Why ``call`` is answered without running (an unknown tool, arguments cut off), or
    ``None`` when its tool may take it."""
    if state.config.tool(call.name) is None:
        names = ", ".join(t.name for t in state.config.tools) or "none"
        return f"unknown tool {call.name!r}; the available tools are: {names}"
    if not call.arguments_valid:
        return (
            "the arguments of this call were cut off or are not a JSON object,"
            " so it was not executed; call the tool again with complete arguments"
        )
    return None


def _sort_calls(state: RunState, calls: Sequence[ToolCallPart]) -> RunState:
    """Sort a turn's calls: refused ones get a failed result (and count against their
    tool's retries), function calls run as a batch, approval and external calls wait."""
    results: list[Message] = []
    to_execute: list[ToolCallPart] = []
    deferred: list[DeferredCall] = []
    exceeded: list[tuple[str, str]] = []
    for call in calls:
        refusal = _refusal(state, call)
        if refusal is None:
            spec = state.config.tool(call.name)
            assert spec is not None
            kind = spec.kind
            match kind:
                case "function":
                    to_execute.append(call)
                case "approval" | "external":
                    deferred.append(DeferredCall(call, kind))
                case "output":  # pragma: no cover - a turn calling the output tool ends above
                    raise AssertionError("an output call reached tool execution")
                case _:  # pragma: no cover
                    assert_never(kind)
            continue
        results.append(_stamp(state, _result(call, refusal, failed=True)))
        state, over = _count_retry(state, call.name)
        if over:
            exceeded.append((call.name, refusal))
    if exceeded:
        name, refusal = exceeded[0]
        return _failed(
            state, Stage.TOOL, _exceeded(state, name, f"its call was refused: {refusal}")
        )
    if not to_execute:
        state = _add(state, results, stamp=False)
        state = attrs.evolve(
            state,
            evidence=len(state.added),
            deferred=tuple(deferred),
            awaiting=tuple(d.call for d in deferred),
        )
        return _pause(state) if deferred else attrs.evolve(state, phase=Phase.REQUEST)
    return attrs.evolve(
        state,
        phase=Phase.TOOLS,
        to_execute=tuple(to_execute),
        deferred=tuple(deferred),
        candidate=None,
        # results for unknown tools and cut-off arguments join the batch's results
        answered=tuple(results),
    )


def _on_tool_done(state: RunState, outcome: ToolOutcome) -> RunState:
    state = attrs.evolve(state, returned=(*state.returned, outcome))
    if type(outcome) is ToolCrashed or type(outcome) is ToolCanceled:
        return _end_batch(state)
    done = {o.call_id for o in state.returned}
    if all(c.id in done for c in state.to_execute):
        return _end_batch(state)
    return state


def _end_batch(state: RunState) -> RunState:
    """Close the batch in flight with the outcomes in ``state.returned``."""
    outcomes = state.returned
    by_id = {o.call_id: o for o in outcomes}
    calls = state.awaiting
    pre = {m.tool_call_id: m for m in state.answered}
    executions = state.tool_executions + sum(
        1 for o in outcomes if type(o) in (ToolReturned, ToolCanceled, ToolCrashed)
    )
    state = attrs.evolve(state, tool_executions=executions, answered=(), returned=())
    crashed = next((o for o in outcomes if type(o) is ToolCrashed), None)
    if crashed is not None:
        return _failed(state, Stage.TOOL, crashed.reason)
    canceled = next((o for o in outcomes if type(o) is ToolCanceled), None)
    results: list[Message] = []
    keep: set[int] = set()  # results already in final form: not stamped again
    exceeded: tuple[str, str] | None = None
    still_waiting: list[DeferredCall] = []
    for call in calls:
        if call.id in pre:
            keep.add(len(results))
            results.append(pre[call.id])
            continue
        o = by_id.get(call.id) if call.id is not None else None
        result = _outcome_result(call, o)
        if result is not None:
            results.append(result)
            if type(o) is ToolRetry:
                state, over = _count_retry(state, call.name)
                if over and exceeded is None:
                    exceeded = (call.name, o.reason)
        elif canceled is not None:
            keep.add(len(results))
            results.append(interrupted_result(call))
        else:
            waiting = next((d for d in state.deferred if d.call.id == call.id), None)
            if waiting is None:
                raise ValueError(f"no outcome for tool call {call.id!r} ({call.name})")
            still_waiting.append(waiting)
    stamped = [m if i in keep else _stamp(state, m) for i, m in enumerate(results)]
    state = _add(state, stamped, stamp=False)
    state = attrs.evolve(
        state,
        evidence=len(state.added),
        to_execute=(),
        deferred=tuple(still_waiting),
        awaiting=tuple(d.call for d in still_waiting),
    )
    if canceled is not None:
        return _failed(attrs.evolve(state, deferred=()), Stage.CANCELED, canceled.reason)
    if exceeded is not None:
        name, reason = exceeded
        return _failed(state, Stage.TOOL, _exceeded(state, name, f"its last retry: {reason}"))
    if state.deferred:
        return _pause(state)
    return attrs.evolve(state, phase=Phase.REQUEST)


def _pause(state: RunState) -> RunState:
    """Wait for answers: a new pause (``pauses`` counts them, so answers bind to one)."""
    return attrs.evolve(state, phase=Phase.PAUSED, pauses=state.pauses + 1, rejected=None)


# -- resuming --------------------------------------------------------------------------


def _on_answers(state: RunState, answered: Answered) -> RunState:
    """Apply answers to the waiting calls: approved calls run (a tool batch), denials and
    external results become results; the turn's other unanswered calls are closed as
    interrupted. Answers that do not fit leave the run paused with ``rejected`` set."""
    error = check_resume(state, answered)  # the one rule for answers (ADR 0090)
    if error is not None:
        return attrs.evolve(state, rejected=error)
    answers = answered.answers
    waiting_ids = {d.call.id for d in state.deferred}
    pre: list[Message] = []
    to_execute: list[ToolCallPart] = []
    still: list[DeferredCall] = []
    for call in state.awaiting:
        answer = answers.get(call.id or "")
        if call.id not in waiting_ids:
            pre.append(interrupted_result(call))
        elif type(answer) is Approved:
            to_execute.append(call)
        elif type(answer) is Denied:
            denied = Message.tool_result(
                call.id, call.name, f"denied: {answer.reason}", failed=True
            )
            pre.append(_stamp(state, denied))
        elif type(answer) is ExternalResult:  # a client asserted it: sanitized before signing
            parts = safe_parts(answer.parts)
            external = Message.tool_result(call.id, call.name, parts, failed=answer.failed)
            pre.append(_stamp(state, external))
        elif answered.close_unanswered:
            pre.append(interrupted_result(call))
        else:
            still.extend(d for d in state.deferred if d.call.id == call.id)
    state = attrs.evolve(state, rejected=None)
    if to_execute:
        return attrs.evolve(
            state,
            phase=Phase.TOOLS,
            to_execute=tuple(to_execute),
            deferred=tuple(still),
            answered=tuple(pre),
        )
    state = _add(state, pre, stamp=False)
    state = attrs.evolve(
        state,
        evidence=len(state.added),
        deferred=tuple(still),
        awaiting=tuple(d.call for d in still),
    )
    if still and pre:  # some answered, some still waiting: a new pause
        return _pause(state)
    if still:  # nothing answered: the same pause goes on
        return state
    return attrs.evolve(state, phase=Phase.REQUEST)


def _correction(state: RunState, reason: str, *, as_user: bool) -> RunState:
    attempts = state.output_attempts + 1
    state = attrs.evolve(state, output_attempts=attempts, candidate=None)
    if as_user:
        state = _add(state, (Message(Role.USER, (TextPart(reason),)),))
    if attempts > state.config.output_retries:
        return _failed(
            state,
            Stage.OUTPUT,
            f"the output was still not valid after {state.config.output_retries} correction"
            f" rounds: {reason}",
        )
    return attrs.evolve(state, phase=Phase.REQUEST, evidence=len(state.added))


def _close_turn(state: RunState, output_call: ToolCallPart | None) -> RunState:
    """Answer every call of the final assistant turn so the conversation stays valid."""
    assistant = state.turn
    assert assistant is not None
    results = [
        _result(c, FINAL_RESULT_TEXT if c is output_call else NOT_EXECUTED_TEXT, failed=False)
        for c in calls_of(assistant)
    ]
    return _add(state, results)


def _on_output_valid(state: RunState, value: Any) -> RunState:
    candidate = state.candidate
    if type(candidate) is ToolCallPart:
        state = _close_turn(state, candidate)
    return attrs.evolve(
        state, evidence=len(state.added), candidate=None, phase=Phase.DONE, output=value
    )


def _on_steered(state: RunState, steered: Steered) -> RunState:
    """User messages sent while the run worked join it here, at a safe point: before its
    next request, or instead of taking the output it was about to validate (a final
    output call is answered as not used, so no call is left without its result); each
    is stamped in its place after what the run added, never inside the cached prefix."""
    if state.phase is Phase.VALIDATE:
        if type(state.candidate) is ToolCallPart:
            assistant = state.turn
            assert assistant is not None
            state = _add(
                state, [_result(c, STEERED_TEXT, failed=False) for c in calls_of(assistant)]
            )
        state = attrs.evolve(state, candidate=None)
    state = _add(state, steered.messages)
    return attrs.evolve(state, phase=Phase.REQUEST, evidence=len(state.added))


def _on_output_invalid(state: RunState, reason: str) -> RunState:
    candidate = state.candidate
    if type(candidate) is ToolCallPart:
        assistant = state.turn
        assert assistant is not None
        results = [
            _result(c, reason, failed=True)
            if c is candidate
            else _result(c, NOT_EXECUTED_TEXT, failed=False)
            for c in calls_of(assistant)
        ]
        state = _add(state, results)
        return _correction(state, reason, as_user=False)
    return _correction(state, reason, as_user=True)
