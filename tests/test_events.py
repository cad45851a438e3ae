"""Lifecycle events: ``on_event=`` on the run methods and ``Agent.iter_stream``.

A tool round trip, a retried 429 (a real ``OpenAIModel`` against the loopback fault
server), a failed run, a streamed run and a deferred pause each give the expected
sequence of events; ``on_delta`` users see only deltas, as before; a handler that raises
ends the run with its exception and the partial; the async iterator gives the same
events, its result at the end, and keeps the partial when left early.
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest
from fault_server import Fault, FaultServer, fault_server_fixture  # noqa: F401 (fixture)

from golem_core import (
    UNFINISHED_RESULT_TEXT,
    Message,
    ModelErrorKind,
    ModelRequest,
    RetryPolicy,
    Role,
    ToolCallPart,
    Usage,
)
from golem_shell import (
    Agent,
    Approved,
    DeltaEvent,
    FunctionModel,
    ModelError,
    OpenAIModel,
    RequestFailed,
    RequestFinished,
    RequestStarted,
    RetryScheduled,
    RunError,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    RunStarted,
    ScriptedModel,
    Stage,
    ToolFinished,
    ToolResultEvent,
    ToolStarted,
    UsageError,
    partial_from,
    tool,
)

pytestmark = pytest.mark.anyio

USAGE = Usage(input_tokens=12, output_tokens=3)


def ping(x: int) -> str:
    """Ping."""
    return f"pong {x}"


def tool_model(request: ModelRequest) -> Message | str:
    if request.messages[-1].role is Role.TOOL:
        return attrs.evolve(Message.assistant("done"), usage=USAGE, finish_reason="stop")
    call = Message.assistant(tool_calls=[ToolCallPart("c1", "ping", '{"x": 1}')])
    return attrs.evolve(call, usage=Usage())  # counted as none (else FunctionModel estimates)


def kinds(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


ROUND_TRIP = [
    "RunStarted",
    "RequestStarted",
    "RequestFinished",
    "ToolStarted",
    "ToolFinished",
    "RequestStarted",
    "RequestFinished",
    "RunFinished",
]


async def test_a_tool_round_trip() -> None:
    events: list[RunEvent] = []
    result = await Agent(FunctionModel(tool_model), tools=[ping]).run("hi", on_event=events.append)
    assert kinds(events) == ROUND_TRIP
    assert {(e.run_id, e.conversation_id) for e in events} == {
        (result.run_id, result.conversation_id)
    }
    started = events[0]
    assert isinstance(started, RunStarted)
    assert (started.model, started.resumed) == ("function", False)
    first, second = events[1], events[5]
    assert isinstance(first, RequestStarted) and isinstance(second, RequestStarted)
    assert (first.request, second.request, first.stream) == (1, 2, False)
    tool_started, tool_finished = events[3], events[4]
    assert tool_started == ToolStarted(result.run_id, result.conversation_id, "c1", "ping")
    assert isinstance(tool_finished, ToolFinished)
    assert (tool_finished.call_id, tool_finished.outcome, tool_finished.failed) == (
        "c1",
        "returned",
        False,
    )
    assert tool_finished.duration >= 0
    answered = events[6]
    assert isinstance(answered, RequestFinished)
    assert (answered.request, answered.usage, answered.finish_reason) == (2, USAGE, "stop")
    assert events[-1] == RunFinished(result.run_id, result.conversation_id, USAGE, 2, 1)


async def test_an_async_handler_is_awaited() -> None:
    seen: list[str] = []

    async def handler(event: RunEvent) -> None:
        await asyncio.sleep(0)
        seen.append(type(event).__name__)

    await Agent(FunctionModel(tool_model), tools=[ping]).run("hi", on_event=handler)
    assert seen == ROUND_TRIP


async def test_a_retried_429_against_the_loopback_server(fault_server: FaultServer) -> None:
    fault_server.plan("events-429", Fault.status_code(429, retry_after="0.01"))
    model = OpenAIModel(
        "gpt-test",
        api_key="sk-events-0123456789",
        base_url=fault_server.openai_base_url,
        retry=RetryPolicy(max_attempts=2, base=0.005, cap=0.02),
    )

    async def lookup(key: str) -> str:
        """Look up."""
        return "found"

    events: list[RunEvent] = []
    agent = Agent(model, instructions="scenario=events-429", tools=[lookup])
    result = await agent.run("q", on_event=events.append)
    retries = [e for e in events if isinstance(e, RetryScheduled)]
    assert len(retries) == 1
    (retry,) = retries
    assert (retry.request, retry.attempt, retry.delay) == (1, 1, 0.01)
    assert (retry.kind, retry.status) == ("rate_limit", 429)
    assert "sk-events" not in retry.cause
    assert kinds(events)[:3] == ["RunStarted", "RequestStarted", "RetryScheduled"]
    finished = [e for e in events if isinstance(e, RequestFinished)]
    assert [e.request for e in finished] == [1, 2, 3]
    assert [e.model for e in finished] == ["gpt-test"] * 3
    assert sum(e.usage.input_tokens for e in finished if e.usage) == result.usage.input_tokens
    assert kinds(events).count("ToolFinished") == 4


async def test_a_failed_request_then_the_failed_run() -> None:
    refused = ModelError(ModelErrorKind.AUTHENTICATION, "bad key", status=401, provider="x")
    events: list[RunEvent] = []
    with pytest.raises(RunError) as caught:
        await Agent(ScriptedModel([refused])).run("hi", on_event=events.append)
    assert kinds(events) == ["RunStarted", "RequestStarted", "RequestFailed", "RunFailed"]
    failed_request = events[2]
    assert isinstance(failed_request, RequestFailed)
    assert (failed_request.kind, failed_request.status) == ("authentication", 401)
    failed = events[3]
    assert isinstance(failed, RunFailed)
    assert (failed.stage, failed.error_type) == ("request", "RunError")
    assert failed.message == caught.value.message


async def test_a_crashing_tool() -> None:
    def boom(x: int) -> str:
        """Explode."""
        raise ValueError("no")

    def model(request: ModelRequest) -> Message:
        return Message.assistant(tool_calls=[ToolCallPart("c1", "boom", '{"x": 1}')])

    events: list[RunEvent] = []
    with pytest.raises(RunError):
        await Agent(FunctionModel(model), tools=[boom]).run("hi", on_event=events.append)
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert (finished.outcome, finished.failed) == ("crashed", True)
    assert isinstance(events[-1], RunFailed) and events[-1].stage == "tool"


async def test_a_streamed_run_interleaves_deltas_and_on_delta_sees_only_deltas() -> None:
    events: list[RunEvent] = []
    deltas: list[DeltaEvent] = []
    agent = Agent(FunctionModel(tool_model), tools=[ping])
    result = await agent.run_stream("hi", on_delta=deltas.append, on_event=events.append)
    assert deltas and all(isinstance(d, DeltaEvent) for d in deltas)
    assert [e for e in events if isinstance(e, DeltaEvent)] == deltas
    lifecycle = [e for e in events if not isinstance(e, DeltaEvent | ToolResultEvent)]
    assert kinds(lifecycle) == ROUND_TRIP
    assert all(e.stream for e in lifecycle if isinstance(e, RequestStarted))
    # every delta of request n arrives between its RequestStarted and RequestFinished
    open_request = None
    for e in events:
        if isinstance(e, RequestStarted):
            open_request = e.request
        elif isinstance(e, RequestFinished):
            open_request = None
        elif isinstance(e, DeltaEvent):
            assert e.request == open_request
    assert result.output == "done"


async def test_a_delta_only_handler_keeps_working() -> None:
    deltas: list[str] = []
    result = await Agent(ScriptedModel(["a b c"])).run_stream(
        "x",
        on_delta=lambda e: deltas.append(e.delta.text),  # type: ignore[union-attr]
    )
    assert "".join(deltas) == "a b c" == result.output


@tool(requires_approval=True)
def transfer(to: str, amount: int) -> str:
    """Move money."""
    return f"sent {amount} to {to}"


async def test_a_deferred_pause_and_its_resume() -> None:
    def model(request: ModelRequest) -> Message | str:
        if request.messages[-1].role is Role.TOOL:
            return "transferred"
        return Message.assistant(
            tool_calls=[ToolCallPart("t1", "transfer", '{"to": "bob", "amount": 5}')]
        )

    agent = Agent(FunctionModel(model), tools=[transfer])
    events: list[RunEvent] = []
    paused = await agent.run("pay", on_event=events.append)
    assert kinds(events) == ["RunStarted", "RequestStarted", "RequestFinished", "RunPaused"]
    pause = events[-1]
    assert isinstance(pause, RunPaused)
    assert [d.call.id for d in pause.deferred] == ["t1"]
    assert pause.deferred == paused.deferred
    events.clear()
    await agent.run_with_deferred_results(
        paused.messages, {"t1": Approved()}, on_event=events.append
    )
    assert kinds(events) == [
        "RunStarted",
        "ToolStarted",
        "ToolFinished",
        "RequestStarted",
        "RequestFinished",
        "RunFinished",
    ]
    resumed = events[0]
    assert isinstance(resumed, RunStarted) and resumed.resumed
    assert resumed.conversation_id == paused.conversation_id


# -- a handler that raises ---------------------------------------------------------------


class HandlerBug(Exception):
    pass


def failing_on(kind: type, seen: list[RunEvent]) -> Any:
    def handler(event: RunEvent) -> None:
        seen.append(event)
        if isinstance(event, kind):
            raise HandlerBug(type(event).__name__)

    return handler


@pytest.mark.parametrize(
    ("kind", "completed"),
    [(RunStarted, None), (RequestFinished, None), (ToolStarted, 1), (RunFinished, 2)],
)
async def test_a_raising_handler_ends_the_run_with_its_exception_and_the_partial(
    kind: type, completed: int | None
) -> None:
    seen: list[RunEvent] = []
    agent = Agent(FunctionModel(tool_model), tools=[ping])
    with pytest.raises(HandlerBug) as caught:
        await agent.run("hi", on_event=failing_on(kind, seen))
    assert isinstance(seen[-1], kind)  # never called again after it raised
    partial = partial_from(caught.value)
    if completed is None:  # nothing completed yet (a response counts once folded in)
        assert partial is None
        return
    assert partial is not None
    assert partial.requests == completed
    assert partial.messages[0].role is Role.USER


async def test_a_handler_raising_on_a_delta_ends_the_run_with_its_exception() -> None:
    seen: list[RunEvent] = []
    agent = Agent(FunctionModel(tool_model), tools=[ping])
    with pytest.raises(HandlerBug) as caught:
        await agent.run_stream("hi", on_delta=lambda e: None, on_event=failing_on(DeltaEvent, seen))
    assert isinstance(caught.value.__cause__, RunError)
    assert partial_from(caught.value) is None  # the first request never completed


# -- the async iterator ------------------------------------------------------------------


async def test_iter_stream_yields_every_event_then_the_result() -> None:
    agent = Agent(FunctionModel(tool_model), tools=[ping])
    events: list[RunEvent] = []
    async with agent.iter_stream("hi") as stream:
        async for event in stream:
            events.append(event)
    lifecycle = [e for e in events if not isinstance(e, DeltaEvent | ToolResultEvent)]
    assert kinds(lifecycle) == ROUND_TRIP
    assert any(isinstance(e, DeltaEvent) for e in events)
    assert any(isinstance(e, ToolResultEvent) for e in events)  # content, in a stream
    assert stream.done and stream.partial is None
    assert stream.result.output == "done"
    assert stream.result.run_id == events[0].run_id


async def test_iter_stream_with_history_and_ids() -> None:
    first = await Agent(FunctionModel(lambda r: "one")).run("a")
    stream = Agent(FunctionModel(lambda r: "two")).iter_stream(
        "b", history=first.messages, run_id="run-2"
    )
    events = [e async for e in stream]
    assert events[0] == RunStarted("run-2", first.conversation_id, "function")
    assert [m.text for m in stream.result.messages if m.role is Role.ASSISTANT] == ["one", "two"]


async def test_iter_stream_raises_the_run_error_and_keeps_the_partial() -> None:
    def boom(x: int) -> str:
        """Explode."""
        raise ValueError("no")

    def model(request: ModelRequest) -> Message:
        return Message.assistant(tool_calls=[ToolCallPart("c1", "boom", '{"x": 1}')])

    stream = Agent(FunctionModel(model), tools=[boom]).iter_stream("hi")
    seen: list[RunEvent] = []
    with pytest.raises(RunError) as caught:
        async for event in stream:
            seen.append(event)
    assert caught.value.stage is Stage.TOOL
    assert isinstance(seen[-1], RunFailed)
    with pytest.raises(RunError):
        _ = stream.result
    assert stream.partial is caught.value.partial and stream.partial is not None
    assert stream.partial.requests == 1


async def test_leaving_iter_stream_early_cancels_the_run_and_keeps_the_partial() -> None:
    executed: list[int] = []
    release = asyncio.Event()

    async def slow(x: int) -> str:
        """Slow."""
        executed.append(x)
        await release.wait()
        return "never"

    def model(request: ModelRequest) -> Message:
        return Message.assistant(tool_calls=[ToolCallPart("c1", "slow", '{"x": 1}')])

    async with Agent(FunctionModel(model), tools=[slow]).iter_stream("hi") as stream:
        async for event in stream:
            if isinstance(event, ToolStarted):
                break
    assert stream.done
    partial = stream.partial
    assert partial is not None and partial.requests == 1
    # resume-ready: the call started, so it is closed as unfinished (it may have had effects)
    assert partial.messages[-2].tool_calls[0].id == "c1"
    assert partial.messages[-1].tool_call_id == "c1"
    assert partial.messages[-1].text == UNFINISHED_RESULT_TEXT
    with pytest.raises(RunError, match="closed before the run ended") as caught:
        _ = stream.result  # a cancelled run's error, with its partial (issue 37 item 4)
    assert caught.value.stage is Stage.CANCELED and caught.value.partial == partial
    assert executed == [1]


async def test_iter_stream_result_before_the_end_is_a_usage_error() -> None:
    stream = Agent(FunctionModel(lambda r: "ok")).iter_stream("hi")
    with pytest.raises(UsageError, match="not ended"):
        _ = stream.result
    await stream.aclose()  # never started: nothing to cancel
    assert stream.done and stream.partial is None


async def test_a_stream_carries_each_tool_result_as_it_exists() -> None:
    """``ToolResultEvent`` follows each ``ToolFinished`` in a stream (content, like a
    delta); a run that does not stream reports lifecycle events only."""

    def lookup(key: str) -> str:
        """Look up."""
        return f"value of {key}"

    def model(request: ModelRequest) -> Message:
        if any(m.role.value == "tool" for m in request.messages):
            return Message.assistant("done")
        return Message.assistant(
            tool_calls=[
                ToolCallPart("k1", "lookup", '{"key": "a"}'),
                ToolCallPart("k2", "nope", "{}"),
            ]
        )

    agent = Agent(FunctionModel(model), tools=[lookup])
    async with agent.iter_stream("go") as stream:
        events = [e async for e in stream]
    kinds = [type(e).__name__ for e in events]
    finished = kinds.index("ToolFinished")
    assert kinds[finished + 1] == "ToolResultEvent"
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert (result.call_id, result.name, result.failed) == ("k1", "lookup", False)
    assert [p.text for p in result.parts] == ["value of a"]  # type: ignore[attr-defined]
    assert kinds.index("ToolResultEvent") < kinds.index("RunFinished")

    plain: list[object] = []
    await agent.run("go", on_event=plain.append)
    assert not any(isinstance(e, ToolResultEvent) for e in plain)


async def test_a_processor_that_changes_the_history_is_reported_once() -> None:
    """``HistoryProcessed`` (ADR 0080) right after ``RunStarted``: what the processor cut,
    and where the cached prefix ends; nothing when it changed nothing."""
    from golem_core import HistoryProcessed, trim_history

    history = tuple(
        m for i in range(6) for m in (Message.user(f"q{i}"), Message.assistant(f"a{i}"))
    )
    events: list[object] = []
    agent = Agent(ScriptedModel(["ok", "ok"]), history_processor=trim_history(4, low_water=2))
    await agent.run_with_history(history, "next", on_event=events.append)
    assert kinds(events)[:2] == ["RunStarted", "HistoryProcessed"]
    (report,) = [e for e in events if isinstance(e, HistoryProcessed)]
    change = report.change
    assert change.processor.startswith("trim_history(4")
    assert change.messages_before == 12 and change.messages_after < 12
    assert change.removed and change.first_change == 0

    events.clear()
    await agent.run_with_history(history[-2:], "next", on_event=events.append)
    assert not any(isinstance(e, HistoryProcessed) for e in events)
