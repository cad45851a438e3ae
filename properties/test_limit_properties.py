"""The run's tool-call and cost limits, over any script of model turns (issue 37).

Whatever the model asks for, a run with ``max_tool_calls=L`` executes at most ``L`` tool
calls, and fails at stage ``limit`` only when the batch it was about to run would pass
``L``; a run with ``max_cost`` never sends a request once its usage costs that much.
"""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from golem_core import Message, Price, TextPart, ToolCallPart, ToolDefinition, Usage
from golem_core.loop import (
    ExecuteTools,
    Fail,
    Finish,
    ModelResponded,
    RequestModel,
    RunConfig,
    Stage,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    ValidateOutput,
    next_command,
    receive,
    start_run,
)

TOOLS = (ToolSpec(ToolDefinition("a")), ToolSpec(ToolDefinition("b")))


def _turn(index: int, calls: int, tokens: int) -> Message:
    if calls == 0:
        turn = Message.assistant("done")
    else:
        turn = Message.assistant(
            tool_calls=[ToolCallPart(f"c{index}-{i}", "ab"[i % 2], "{}") for i in range(calls)]
        )
    return attrs.evolve(turn, usage=Usage(input_tokens=tokens, output_tokens=tokens // 10))


def _drive(config: RunConfig, script: list[tuple[int, int]]) -> tuple[int, int, object]:
    """Run ``config`` against the scripted turns; ``(requests, executions, last command)``."""
    state = start_run(config, (), (TextPart("go"),))
    requests = executions = 0
    for _ in range(4 * len(script) + 4):
        command = next_command(state)
        if isinstance(command, RequestModel):
            if requests == len(script):
                break
            calls, tokens = script[requests]
            state = receive(state, ModelResponded(_turn(requests, calls, tokens)))
            requests += 1
        elif isinstance(command, ExecuteTools):
            executions += len(command.calls)
            outcomes = tuple(ToolReturned(c.id or "", (TextPart("r"),)) for c in command.calls)
            state = receive(state, ToolsReturned(outcomes))
        else:  # ValidateOutput, Finish, Fail: the run's course is decided
            return requests, executions, command
    return requests, executions, next_command(state)


scripts = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3_000)), min_size=1, max_size=8)


@given(script=scripts, limit=st.integers(0, 10))
def test_a_run_never_executes_more_tool_calls_than_its_limit(
    script: list[tuple[int, int]], limit: int
) -> None:
    config = RunConfig("r", "c", tools=TOOLS, max_requests=20, max_tool_calls=limit)
    requests, executions, last = _drive(config, script)
    assert executions <= limit
    if isinstance(last, Fail) and last.stage is Stage.LIMIT:
        asked = script[requests - 1][0]
        assert executions + asked > limit  # failed only because the next batch would pass it
        assert f"limit is {limit} tool calls" in last.reason
    unlimited = _drive(attrs.evolve(config, max_tool_calls=None), script)
    if unlimited[1] <= limit:  # within the limit the run is the same as without one
        assert (requests, executions) == unlimited[:2]
        assert type(last) is type(unlimited[2])


@given(script=scripts, budget=st.floats(0.0001, 0.05))
def test_a_run_sends_no_request_once_its_cost_limit_is_reached(
    script: list[tuple[int, int]], budget: float
) -> None:
    price = Price(input=2.0, output=8.0)
    config = RunConfig("r", "c", tools=TOOLS, max_requests=20, max_cost=budget, price=price)
    requests, _, last = _drive(config, script)
    spent = Usage()
    for _calls, tokens in script[: requests - 1]:  # every request but the last was affordable
        spent = spent + Usage(input_tokens=tokens, output_tokens=tokens // 10)
        assert price.cost(spent) < budget
    if isinstance(last, Fail) and last.stage is Stage.LIMIT:
        spent = spent + Usage(
            input_tokens=script[requests - 1][1], output_tokens=script[requests - 1][1] // 10
        )
        assert price.cost(spent) >= budget
        assert "its limit is" in last.reason


def test_finish_is_reachable_under_limits() -> None:
    config = RunConfig("r", "c", tools=TOOLS, max_tool_calls=1)
    _, executions, last = _drive(config, [(1, 10), (0, 10)])
    assert executions == 1 and isinstance(last, ValidateOutput | Finish)
