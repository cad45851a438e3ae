"""Issue 28 item 1: a cancel, a timeout or leaving ``iter_stream`` at any moment keeps every
tool outcome that completed, and tells a call that started from one that never ran.

Each outcome lands in the run's state as it completes (``ToolDone``); the partial closes a
call still running with ``UNFINISHED_RESULT_TEXT`` (it may have had effects) and a call
that never started with ``INTERRUPTED_RESULT_TEXT``. A run resumed from the partial does
not execute a finished tool again.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from golem_core import (
    INTERRUPTED_RESULT_TEXT,
    UNFINISHED_RESULT_TEXT,
    Message,
    ModelRequest,
    Role,
    ToolCallPart,
    ToolFinished,
    check_pairing,
)
from golem_shell import Agent, FunctionModel, RunError, Stage, Tool, partial_from

pytestmark = pytest.mark.anyio


def _results(messages: tuple[Message, ...]) -> dict[str, str]:
    return {str(m.tool_call_id): m.text for m in messages if m.role is Role.TOOL}


class _Tools:
    """A fast tool and a slow one (held until released), counting executions."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.release = asyncio.Event()

    async def fast(self, x: int) -> str:
        """Fast."""
        self.executed.append("fast")
        return f"fast {x}"

    async def slow(self, x: int) -> str:
        """Slow."""
        self.executed.append("slow")
        await self.release.wait()
        return f"slow {x}"


def _batch_model(request: ModelRequest) -> Message:
    if any(m.role is Role.TOOL for m in request.messages):
        return Message.assistant("done")
    return Message.assistant(
        tool_calls=[
            ToolCallPart("f1", "fast", '{"x": 1}'),
            ToolCallPart("s1", "slow", '{"x": 2}'),
        ]
    )


@pytest.mark.parametrize("attempt", range(5))
async def test_leaving_iter_stream_right_after_tool_finished_keeps_that_result(
    attempt: int,
) -> None:
    tools = _Tools()
    hold = asyncio.Event()

    async def model(request: ModelRequest) -> Message:
        if any(m.role is Role.TOOL for m in request.messages):
            await hold.wait()  # the next request: the run is past the tool when we leave
            return Message.assistant("done")
        return Message.assistant(tool_calls=[ToolCallPart("f1", "fast", '{"x": 1}')])

    agent = Agent(FunctionModel(model), tools=[tools.fast])
    async with agent.iter_stream("go") as stream:
        async for event in stream:
            if isinstance(event, ToolFinished):
                break
    partial = stream.partial
    assert partial is not None
    assert _results(partial.messages) == {"f1": "fast 1"}
    assert partial.tool_executions == 1
    assert check_pairing(partial.messages) == ()


async def test_a_cancel_while_a_slow_sibling_runs_keeps_the_fast_result() -> None:
    tools = _Tools()
    agent = Agent(FunctionModel(_batch_model), tools=[tools.fast, tools.slow])
    finished = asyncio.Event()

    def on_event(event: Any) -> None:
        if isinstance(event, ToolFinished) and event.name == "fast":
            finished.set()

    task = asyncio.create_task(agent.run("go", on_event=on_event))
    await finished.wait()
    await asyncio.sleep(0)  # the driver folds the outcome before reporting ToolFinished
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    partial = partial_from(caught.value)
    assert partial is not None
    results = _results(partial.messages)
    assert results == {"f1": "fast 1", "s1": UNFINISHED_RESULT_TEXT}
    assert check_pairing(partial.messages) == ()

    # resumed from the partial: the model sees both results, nothing runs again
    resumed = await agent.run_with_history(partial.messages, None)
    assert resumed.output == "done"
    assert tools.executed == ["fast", "slow"]


async def test_a_timeout_while_a_slow_sibling_runs_keeps_the_fast_result() -> None:
    tools = _Tools()
    agent = Agent(FunctionModel(_batch_model), tools=[tools.fast, tools.slow], timeout=0.5)
    with pytest.raises(RunError) as caught:
        await agent.run("go")
    assert caught.value.stage is Stage.TIMEOUT
    partial = caught.value.partial
    assert partial is not None
    assert _results(partial.messages) == {"f1": "fast 1", "s1": UNFINISHED_RESULT_TEXT}
    assert partial.tool_executions == 1


async def test_a_call_that_never_started_is_told_apart_from_one_that_was_running() -> None:
    """An approval call waits (never started) while its sibling runs; a cancel closes the
    running one as unfinished and the waiting one as interrupted before execution."""
    tools = _Tools()
    approve = Tool.from_function(tools.fast, name="wire_money", kind="approval")

    def model(request: ModelRequest) -> Message:
        return Message.assistant(
            tool_calls=[
                ToolCallPart("w1", "wire_money", '{"x": 1}'),
                ToolCallPart("s1", "slow", '{"x": 2}'),
            ]
        )

    agent = Agent(FunctionModel(model), tools=[approve, tools.slow])
    task = asyncio.create_task(agent.run("go"))
    while "slow" not in tools.executed:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    partial = partial_from(caught.value)
    assert partial is not None
    assert _results(partial.messages) == {
        "w1": INTERRUPTED_RESULT_TEXT,
        "s1": UNFINISHED_RESULT_TEXT,
    }
    assert tools.executed == ["slow"]
