"""The loop's transition table: every legal step of a run, as data, and the two functions
a driver calls, ``next_command(state)`` and ``receive(state, outcome)``.

Owns which command each phase asks for and which handler folds which outcome in, and
checks that every handler lands in a phase its row allows (h11's ``_state.py``: the
table, beside the states it moves between). The values are ``golem_core.loop._values``;
the handlers ``golem_core.loop._handlers``; starting and resuming a run
``golem_core.loop._start``.

Transitions (``Phase`` -> command -> outcome -> phase)::

    REQUEST   -> RequestModel    -> ModelResponded  -> TOOLS | VALIDATE | REQUEST | PAUSED | FAILED
                                 -> ModelFailed     -> FAILED (stage request) | COMPACT (too long)
    COMPACT   -> CompactHistory  -> HistoryCompacted   -> REQUEST (the same request again) | FAILED
                                 -> CompactionDeclined -> FAILED (stage request)
    TOOLS     -> ExecuteTools    -> ToolDone        -> TOOLS (more) | REQUEST | PAUSED | FAILED
                                 -> ToolsReturned   -> REQUEST | PAUSED | FAILED (tool, canceled)
    VALIDATE  -> ValidateOutput  -> OutputValid     -> DONE
                                 -> OutputInvalid   -> REQUEST (correction) | FAILED (output)
    PAUSED    -> Pause           -> Answered        -> TOOLS | REQUEST | PAUSED (or refused)
    REQUEST   -> RequestModel    -> Steered         -> REQUEST (user messages join first)
    VALIDATE  -> ValidateOutput  -> Steered         -> REQUEST (the output is not taken)
    DONE      -> Finish
    FAILED    -> Fail

``TRANSITIONS`` holds the rows with an outcome; ``TERMINAL`` the two phases that end a
run. ``next_command`` reads the command column (a phase's command is built from the state
by ``_BUILD``), ``receive`` dispatches on the (phase, outcome) column: a step that is not
in the table raises, and a handler landing outside its row's phases is a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from attrs import field, frozen

from golem_core._model import ModelRequest
from golem_core.loop._handlers import (
    _end_batch,
    _foldable,
    _on_answers,
    _on_compacted,
    _on_compaction_declined,
    _on_model_failed,
    _on_output_invalid,
    _on_output_valid,
    _on_response,
    _on_steered,
    _on_tool_done,
)
from golem_core.loop._values import (
    Answered,
    CompactHistory,
    CompactionDeclined,
    ExecuteTools,
    Fail,
    Finish,
    HistoryCompacted,
    LoopCommand,
    LoopOutcome,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Pause,
    Phase,
    RequestModel,
    RunState,
    Stage,
    Steered,
    ToolDone,
    ToolsReturned,
    ValidateOutput,
)

__all__ = ["TERMINAL", "TRANSITIONS", "Transition", "next_command", "receive"]


@frozen
class Transition:
    """One legal step of the loop: in ``phase`` the driver performs ``command`` and feeds
    back an ``outcome``; ``handler`` folds it in, landing in one of ``after``."""

    phase: Phase
    command: type
    outcome: type
    after: tuple[Phase, ...]
    handler: Callable[[RunState, Any], RunState] = field(repr=False)


def _table() -> tuple[Transition, ...]:
    return (
        Transition(
            Phase.REQUEST,
            RequestModel,
            ModelResponded,
            (Phase.TOOLS, Phase.VALIDATE, Phase.REQUEST, Phase.PAUSED, Phase.FAILED),
            lambda state, o: _on_response(state, o.message),
        ),
        Transition(
            Phase.REQUEST,
            RequestModel,
            ModelFailed,
            (Phase.FAILED, Phase.COMPACT),
            _on_model_failed,
        ),
        Transition(
            Phase.COMPACT,
            CompactHistory,
            HistoryCompacted,
            (Phase.REQUEST, Phase.FAILED),
            _on_compacted,
        ),
        Transition(
            Phase.COMPACT,
            CompactHistory,
            CompactionDeclined,
            (Phase.FAILED,),
            _on_compaction_declined,
        ),
        Transition(
            Phase.TOOLS,
            ExecuteTools,
            ToolsReturned,
            (Phase.REQUEST, Phase.PAUSED, Phase.FAILED),
            lambda state, o: _end_batch(attrs.evolve(state, returned=state.returned + o.outcomes)),
        ),
        Transition(
            Phase.TOOLS,
            ExecuteTools,
            ToolDone,
            (Phase.TOOLS, Phase.REQUEST, Phase.PAUSED, Phase.FAILED),
            lambda state, o: _on_tool_done(state, o.outcome),
        ),
        Transition(
            Phase.VALIDATE,
            ValidateOutput,
            OutputValid,
            (Phase.DONE,),
            lambda state, o: _on_output_valid(state, o.value),
        ),
        Transition(
            Phase.VALIDATE,
            ValidateOutput,
            OutputInvalid,
            (Phase.REQUEST, Phase.FAILED),
            lambda state, o: _on_output_invalid(state, o.reason),
        ),
        Transition(
            Phase.PAUSED,
            Pause,
            Answered,
            (Phase.TOOLS, Phase.REQUEST, Phase.PAUSED),
            _on_answers,
        ),
        Transition(Phase.REQUEST, RequestModel, Steered, (Phase.REQUEST,), _on_steered),
        Transition(Phase.VALIDATE, ValidateOutput, Steered, (Phase.REQUEST,), _on_steered),
    )


# -- starting --------------------------------------------------------------------------


TRANSITIONS: tuple[Transition, ...] = _table()
"""Every legal step of the loop; ``receive`` dispatches on it and ``next_command`` reads
its command column (the docs and the state-machine property read it too)."""

TERMINAL: dict[Phase, type] = {Phase.DONE: Finish, Phase.FAILED: Fail}
"""The phases that end a run, and the command that says so: no outcome answers them."""

_BY_STEP: dict[tuple[Phase, type], Transition] = {(t.phase, t.outcome): t for t in TRANSITIONS}
_COMMAND: dict[Phase, type] = {t.phase: t.command for t in TRANSITIONS} | TERMINAL


def _request(state: RunState) -> RequestModel:
    config = state.config
    return RequestModel(
        ModelRequest(
            messages=state.history + state.added,
            instructions=config.instructions,
            tools=tuple(t.definition for t in config.tools),
            settings=config.settings,
            tool_choice_required=config.output_tool is not None,
            run_id=config.run_id,
            output_schema=config.output_schema,
            conversation_id=config.conversation_id,
        )
    )


def _validate(state: RunState) -> ValidateOutput:
    assert state.candidate is not None
    return ValidateOutput(state.candidate)


def _fail(state: RunState) -> Fail:
    assert state.failure is not None
    return Fail(state.failure[0], state.failure[1], state)


def _compact(state: RunState) -> CompactHistory:
    assert state.overflow is not None
    return CompactHistory(state.history, _foldable(state.history), state.overflow)


_BUILD: dict[type, Callable[[RunState], LoopCommand]] = {
    RequestModel: _request,
    CompactHistory: _compact,
    ExecuteTools: lambda state: ExecuteTools(state.to_execute),
    ValidateOutput: _validate,
    Pause: lambda state: Pause(state.deferred, state),
    Finish: lambda state: Finish(state.output, state),
    Fail: _fail,
}
"""How each command of the table's command column is built from a state."""


def next_command(state: RunState) -> LoopCommand:
    """What the driver must do next: the command of the state's phase in ``TRANSITIONS``
    (or ``TERMINAL``), built from the state. A run at its request limit fails instead of
    requesting; a tool batch that would pass the tool-call limit fails instead of running.
    Total and deterministic."""
    if state.phase is Phase.REQUEST and state.requests >= state.config.max_requests:
        return Fail(
            Stage.LIMIT,
            f"the run reached its limit of {state.config.max_requests} model requests",
            state,
        )
    limit = state.config.max_tool_calls
    if (
        limit is not None
        and state.phase is Phase.TOOLS
        and state.tool_executions + len(state.to_execute) > limit
    ):
        return Fail(
            Stage.LIMIT,
            f"the model asked for {len(state.to_execute)} more tool calls after"
            f" {state.tool_executions}; the run's limit is {limit} tool calls, so none of"
            " them was run",
            state,
        )
    return _BUILD[_COMMAND[state.phase]](state)


def receive(state: RunState, outcome: LoopOutcome) -> RunState:
    """Fold an outcome into the state. Total and deterministic.

    Driven by ``TRANSITIONS``: the row for (the state's phase, the outcome's type) names
    the handler, and the phase it lands in is checked against the row.

    Raises:
        ValueError: the outcome does not answer the command of the current phase.
    """
    row = _BY_STEP.get((state.phase, type(outcome)))
    if row is None:
        raise ValueError(
            f"{type(outcome).__name__} does not answer the loop's {state.phase.value} phase"
        )
    after = row.handler(state, outcome)
    if after.phase not in row.after:  # pragma: no cover - the table and the handlers agree
        raise AssertionError(
            f"{state.phase.value} + {row.outcome.__name__} went to {after.phase.value},"
            f" which TRANSITIONS does not allow"
        )
    return after
