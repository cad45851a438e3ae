"""The core loop driven with no shell at all: commands out, outcomes in."""

from __future__ import annotations

from typing import Any

import pytest

from golem_core import (
    Message,
    ModelErrorKind,
    Role,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    check_pairing,
)
from golem_core.loop import (
    TERMINAL,
    TRANSITIONS,
    ExecuteTools,
    Fail,
    Finish,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Pause,
    Phase,
    RequestModel,
    RunConfig,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    ValidateOutput,
    next_command,
    receive,
    start_run,
)

CONFIG = RunConfig(
    run_id="run-1",
    conversation_id="conv-1",
    instructions="Be brief.",
    tools=(
        ToolSpec(ToolDefinition("get_weather")),
        ToolSpec(ToolDefinition("transfer"), kind="approval"),
    ),
)


def test_a_tool_round_trip_step_by_step() -> None:
    state = start_run(CONFIG, (Message.system("old"),), (TextPart("weather?"),))
    command = next_command(state)
    assert isinstance(command, RequestModel)
    assert command.request.instructions == "Be brief."
    assert [m.role for m in command.request.messages] == [Role.USER]
    assert command.request.messages[0].run_id == "run-1"

    turn = Message.assistant(tool_calls=[ToolCallPart("c1", "get_weather", '{"city":"Oslo"}')])
    state = receive(state, ModelResponded(turn))
    command = next_command(state)
    assert isinstance(command, ExecuteTools)
    assert [c.id for c in command.calls] == ["c1"]

    state = receive(state, ToolsReturned((ToolReturned("c1", (TextPart("5 C"),)),)))
    command = next_command(state)
    assert isinstance(command, RequestModel)
    assert command.request.messages[-1].tool_call_id == "c1"

    state = receive(state, ModelResponded(Message.assistant("5 C in Oslo.")))
    command = next_command(state)
    assert isinstance(command, ValidateOutput)
    state = receive(state, OutputValid("5 C in Oslo."))
    command = next_command(state)
    assert isinstance(command, Finish)
    assert command.output == "5 C in Oslo."
    assert [m.role for m in state.messages] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    assert check_pairing(state.messages) == ()
    assert state.requests == 2 and state.tool_executions == 1


def test_a_call_needing_approval_pauses_the_run() -> None:
    state = start_run(CONFIG, (), (TextPart("pay"),))
    turn = Message.assistant(tool_calls=[ToolCallPart("t1", "transfer", '{"amount":5}')])
    state = receive(state, ModelResponded(turn))
    command = next_command(state)
    assert isinstance(command, Pause)
    assert [d.call.id for d in command.deferred] == ["t1"]
    assert state.phase is Phase.PAUSED


def test_model_failure_fails_at_stage_request() -> None:
    state = start_run(CONFIG, (), (TextPart("x"),))
    state = receive(state, ModelFailed("boom"))
    command = next_command(state)
    assert isinstance(command, Fail)
    assert (command.stage, command.reason) == ("request", "boom")
    assert not command.state.produced_evidence


def test_output_correction_rounds_are_bounded() -> None:
    config = RunConfig(run_id="r", conversation_id="c", output_retries=1)
    state = start_run(config, (), (TextPart("x"),))
    for _ in range(2):
        state = receive(state, ModelResponded(Message.assistant("bad")))
        state = receive(state, OutputInvalid("not a number"))
    command = next_command(state)
    assert isinstance(command, Fail) and command.stage == "output"


def test_an_outcome_that_does_not_answer_the_phase_is_refused() -> None:
    state = start_run(CONFIG, (), (TextPart("x"),))
    with pytest.raises(ValueError, match="request phase"):
        receive(state, OutputValid(1))


def test_the_transition_table_names_every_phase_with_a_command() -> None:
    phases = {row.phase for row in TRANSITIONS}
    # a paused run goes on when it receives answers: resuming is a row of the table
    assert phases == {Phase.REQUEST, Phase.COMPACT, Phase.TOOLS, Phase.VALIDATE, Phase.PAUSED}


def test_next_command_reads_the_tables_command_column() -> None:
    """Issue 32.6: one command per phase, named by the table (or ``TERMINAL``), and that
    is the command ``next_command`` gives."""
    commands: dict[Phase, type] = dict(TERMINAL)
    for row in TRANSITIONS:
        assert commands.setdefault(row.phase, row.command) is row.command
    assert set(commands) == set(Phase)
    state = start_run(RunConfig(run_id="r", conversation_id="c"), (), (TextPart("hi"),))
    assert type(next_command(state)) is commands[state.phase]
    failed = receive(state, ModelFailed("boom"))
    assert type(next_command(failed)) is commands[Phase.FAILED]


def test_receive_dispatches_on_the_table_and_refuses_steps_outside_it() -> None:
    """Issue 14.10: the table drives ``receive``; every row's handler lands in its row."""
    from golem_core.loop._table import _BY_STEP

    assert {(t.phase, t.outcome) for t in TRANSITIONS} == set(_BY_STEP)
    assert all(Phase.DONE not in t.after for t in TRANSITIONS if t.phase is Phase.REQUEST)
    state = start_run(RunConfig(run_id="r", conversation_id="c"), (), (TextPart("hi"),))
    with pytest.raises(ValueError, match="does not answer the loop's request phase"):
        receive(state, OutputValid(1))
    failed = receive(state, ModelFailed("boom", ModelErrorKind.RATE_LIMIT))
    assert failed.phase is Phase.FAILED


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"output_tool": "final_result"}, "must be the one tool of kind 'output'"),
        ({"tools": (ToolSpec(ToolDefinition("o", "", {}), "output"),)}, "output_tool is None"),
        (
            {
                "tools": (
                    ToolSpec(ToolDefinition("t", "", {})),
                    ToolSpec(ToolDefinition("t", "", {})),
                )
            },
            "two tools share the name 't'",
        ),
        ({"max_requests": 0}, "max_requests"),
        ({"output_retries": -1}, "output_retries"),
    ],
)
def test_a_run_config_that_could_leave_a_call_dangling_is_refused(
    kwargs: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        RunConfig(run_id="r", conversation_id="c", **kwargs)


def test_start_run_takes_the_processors_outcome_as_a_value() -> None:
    """``start_run(processed=...)``: the outcome, not a function; ``process`` runs a
    synchronous processor for it, and ``as_outcome(None)`` is a failure (issue 45 item 3)."""
    from returns.result import Failure, Success

    from golem_core import Message, trim_history
    from golem_core.loop import RunConfig, Stage, as_outcome, process, start_run

    history = tuple(Message.user(f"u{i}") for i in range(5))
    config = RunConfig(run_id="r", conversation_id="c")
    assert process(None, history) is None
    cut = start_run(config, history, None, processed=process(trim_history(2), history))
    assert [m.text for m in cut.history] == ["u3", "u4"]
    assert cut.processed is not None and cut.processed.removed == ((0, 3),)
    kept = start_run(config, history, None, processed=Success(history))
    assert [m.text for m in kept.history] == [m.text for m in history]
    failed = start_run(config, history, None, processed=Failure("boom"))
    assert failed.phase is Phase.FAILED and failed.failure is not None
    assert failed.failure[0] is Stage.HISTORY and "boom" in failed.failure[1]
    none = start_run(config, history, None, processed=as_outcome(None))
    assert none.phase is Phase.FAILED and none.failure is not None
    assert "returned None" in none.failure[1]
