"""Starting and resuming a run: the first ``RunState`` of the loop.

Owns the preparation a run does once: ``start_run`` takes the history processor's outcome
on the history as supplied (a value: the runtime ran the processor, or recorded it;
``process`` runs a synchronous one), drops system messages (the instructions replace
them), repairs pairing, carries the server's signatures across a cut and adds the prompt;
``paused_from`` reads the paused state a stored history stands for, and ``resume_run``
feeds it answers (a row of the table, like every other step).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import attrs
from returns.result import Failure, Result, Success

from golem_core._messages import Message, Part, Role
from golem_core.history._compaction import new_compactions
from golem_core.history._history import normalize_history
from golem_core.history._prefix import describe_processing
from golem_core.history._processors import HistoryProcessor
from golem_core.history._provenance import carry_signatures, sign_message
from golem_core.loop._deferred import (
    DeferredAnswer,
    DeferredError,
    frontier,
    unanswered_calls,
    waiting_calls,
)
from golem_core.loop._handlers import _failed
from golem_core.loop._table import receive
from golem_core.loop._values import Answered, Phase, RunConfig, RunState, Stage

__all__ = ["as_outcome", "paused_from", "process", "resume_run", "start_run"]


def process(
    processor: HistoryProcessor | None, history: Sequence[Message]
) -> Result[Sequence[Message], object] | None:
    """A synchronous history processor's outcome on ``history``, for ``start_run``'s
    ``processed=`` (``None`` without a processor). A runtime with an async processor, or
    one that records the outcome (a durable engine), computes it its own way and passes
    it through ``as_outcome``."""
    return None if processor is None else as_outcome(processor(history))


def as_outcome(returned: object) -> Result[Sequence[Message], object]:
    """What a history processor returned, as ``start_run``'s ``processed=``: ``None``
    (which ``start_run`` would read as "no processor") becomes a ``Failure`` saying so;
    anything else is passed on as it is, and ``start_run`` refuses what is not
    ``Success(messages)`` or ``Failure(error)``, saying what it was."""
    if returned is None:
        return Failure(
            "history processor returned None; expected Success(messages) or Failure(error)"
        )
    return returned  # type: ignore[return-value]  # start_run checks it (_describe_value)


def start_run(
    config: RunConfig,
    history: Sequence[Message],
    prompt: Sequence[Part] | None,
    *,
    processed: Result[Sequence[Message], object] | None = None,
    processor_name: str = "history processor",
    now: datetime | None = None,
) -> RunState:
    """Prepare a run: process the history, drop its system messages, repair, add the prompt.

    Total and deterministic. A processor failure gives a state already ``FAILED`` at
    stage ``history`` (no model call is made); so does an empty conversation.

    Args:
        config: the run's fixed configuration.
        history: the history exactly as the caller supplied it.
        prompt: the fresh user prompt's parts, or ``None`` to continue the history as is.
        processed: the history processor's outcome on exactly ``history``
            (``process(processor, history)``, or the outcome a durable engine recorded),
            ``None`` when there is no processor; what it changed is
            ``RunState.processed`` (``describe_processing``), which the driver reports
            (``HistoryProcessed``). Anything but ``Success(messages)`` or
            ``Failure(error)`` fails the run at stage ``history``, saying what it was.
        processor_name: the processor's name in that report.
        now: the time stamped on the prompt message.
    """
    state = RunState(config=config, history=())
    supplied = history
    if processed is not None:
        outcome: object = processed
        match outcome:
            case Success(processed) if _is_history(processed):
                history = processed
                state = attrs.evolve(
                    state,
                    processed=describe_processing(supplied, processed, processor=processor_name),
                    compactions=new_compactions(supplied, processed),
                )
            case Failure(error):
                return _failed(state, Stage.HISTORY, f"history processor failed: {error}")
            case bad:
                return _failed(
                    state,
                    Stage.HISTORY,
                    f"history processor returned {_describe_value(bad)}; expected"
                    " Success(messages) (a sequence of Message) or Failure(error)."
                    " Nothing was sent",
                )
    if any(m.role is Role.SYSTEM for m in history):
        history = [m for m in history if m.role is not Role.SYSTEM]
    repaired, _ = normalize_history(history)
    key = config.signing_key
    stored: tuple[Message, ...] | None = None
    if key is not None and history is not supplied:  # cut: the server's own move with it
        repaired = carry_signatures(supplied, repaired, key)
        stored = tuple(supplied)  # and what the run adds is signed after both (ADR 0091)
    added: tuple[Message, ...] = ()
    if prompt is not None:
        user = Message(
            Role.USER,
            tuple(prompt),
            created_at=now,
            run_id=config.run_id,
            conversation_id=config.conversation_id,
        )
        also = () if stored is None else (stored,)
        added = (
            user if key is None else sign_message(user, key, before=repaired, also_before=also),
        )
    state = attrs.evolve(state, history=repaired, added=added, supplied=stored)
    if not state.history and not state.added:
        return _failed(state, Stage.HISTORY, "nothing to send: no history and no prompt")
    return state


def _is_history(value: object) -> bool:
    return isinstance(value, tuple | list) and all(type(m) is Message for m in value)


def _describe_value(value: object) -> str:
    if isinstance(value, Success):
        inner = value.unwrap()
        if isinstance(inner, tuple | list):
            bad = next((m for m in inner if type(m) is not Message), None)
            return (
                f"Success of a {type(inner).__name__} holding a {type(bad).__name__} ({bad!r:.60})"
            )
        return f"Success({inner!r:.60}) (a {type(inner).__name__})"
    return f"{value!r:.60} (a {type(value).__name__})"


def paused_from(config: RunConfig, history: Sequence[Message]) -> RunState:
    """The paused state a stored history stands for: its last assistant turn's calls
    without a result wait (those of approval and external tools) or were interrupted
    (the others, e.g. a crash mid-batch). The history before that turn is repaired;
    the turn and its results are kept as they are. Feed it ``Answered`` to go on.
    A history whose end is not such a turn gives a paused state with nothing waiting:
    empty answers send it on to the next request. Total and deterministic.
    """
    history = [m for m in history if m.role is not Role.SYSTEM]
    a = frontier(history)
    if a is None:
        repaired, _ = normalize_history(history)
        return RunState(config=config, history=repaired, phase=Phase.PAUSED, pauses=1)
    turn = history[a]
    turn_ids = {c.id for c in turn.tool_calls if c.id is not None}
    seen: set[str | None] = set()
    block: list[Message] = []
    for m in history[a + 1 :]:
        if m.tool_call_id in turn_ids and m.tool_call_id not in seen:
            seen.add(m.tool_call_id)
            block.append(m)
    prefix, _ = normalize_history(history[:a])
    return RunState(
        config=config,
        history=(*prefix, turn, *block),
        turn=turn,
        phase=Phase.PAUSED,
        pauses=1,
        deferred=waiting_calls(history, {t.name: t.kind for t in config.tools}),
        awaiting=tuple(unanswered_calls(history, a)),
    )


def resume_run(
    config: RunConfig,
    history: Sequence[Message],
    answers: Mapping[str, DeferredAnswer],
    *,
    close_unanswered: bool = False,
    now: datetime | None = None,
) -> Result[RunState, DeferredError]:
    """Continue a paused run from its stored ``history`` with answers for its waiting
    calls: ``receive(paused_from(config, history), Answered(answers, close_unanswered))``.

    Answers come first: approved calls are executed by the driver, denials and external
    results become those calls' results. Waiting calls left unanswered keep the run
    paused, or, with ``close_unanswered``, get the neutral no-result result. Unanswered
    calls of ordinary tools in that turn (a crash mid-batch) get it too. Only then is the
    history before the frontier repaired. Total and deterministic. ``now`` (when given)
    is stamped on the results the answers made (a denial, an external result).

    Returns:
        The state to drive, or ``Failure(DeferredError)`` when an answer names a call that
        is not waiting, or answers a call with the wrong kind of answer.
    """
    paused = paused_from(config, history)
    state = receive(paused, Answered(answers, close_unanswered))
    if state.rejected is not None:
        return Failure(state.rejected)
    if now is not None:  # the results the answers made (denials, external results) get it
        made = len(paused.added)
        stamped = tuple(
            attrs.evolve(m, created_at=now) if i >= made and m.created_at is None else m
            for i, m in enumerate(state.added)
        )
        state = attrs.evolve(state, added=stamped)
    return Success(state)
