"""The agent end to end on offline models: chaining, identity, instructions, tools, failures."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest
from returns.result import Failure, Success

from golem_core import (
    Message,
    ModelErrorKind,
    ModelRequest,
    Role,
    TextDelta,
    ToolCallPart,
    Usage,
    check_pairing,
    decode_history,
    encode_history,
    normalize_history,
    trim_history,
)
from golem_core.ids import run_tag
from golem_shell import (
    Agent,
    Canceled,
    DeltaEvent,
    FunctionModel,
    ModelError,
    RunContext,
    RunError,
    ScriptedModel,
    Stage,
    ToolFailure,
    UsageError,
    new_id,
    partial_from,
    tool,
)

pytestmark = pytest.mark.anyio


def call(id_: str | None, name: str, arguments: str = "{}") -> ToolCallPart:
    return ToolCallPart(id_, name, arguments)


def calls(*parts: ToolCallPart, usage: Usage | None = None) -> Message:
    return attrs.evolve(Message.assistant(tool_calls=parts), usage=usage)


def text(t: str, usage: Usage | None = None) -> Message:
    return attrs.evolve(Message.assistant(t), usage=usage)


def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: the city's name.
    """
    return f"18 C in {city}"


# -- chaining and identity ---------------------------------------------------------------


async def test_a_run_returns_the_full_conversation_and_chains() -> None:
    model = ScriptedModel(["Hello!", "You said hi."])
    agent = Agent(model, instructions="Be brief.")
    first = await agent.run("hi")
    assert first.output == "Hello!"
    assert [m.role for m in first.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]
    assert first.new_messages == first.messages[1:]
    second = await agent.run_with_history(first.messages, "what did I say?")
    assert second.output == "You said hi."
    sent = model.requests[1]
    assert [m.text for m in sent.messages] == ["hi", "Hello!", "what did I say?"]
    assert sent.instructions == "Be brief."
    assert [m.role for m in second.messages] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
    ]


async def test_identity_chained_runs_share_the_conversation_and_forks_start_a_new_one() -> None:
    agent = Agent(ScriptedModel(["a", "b", "c"]))
    first = await agent.run("hi")
    chained = await agent.run_with_history(first.messages, "and then?")
    assert chained.conversation_id == first.conversation_id
    assert chained.run_id != first.run_id
    fork_id = new_id()
    fork = await agent.run_with_history(first.messages, "fork", conversation_id=fork_id)
    assert fork.conversation_id == fork_id
    for m in chained.new_messages:
        assert (m.run_id, m.conversation_id) == (chained.run_id, chained.conversation_id)
    # re-supplied history keeps the stamps it carried in
    assert chained.messages[:2] == first.messages[:2]


async def test_explicit_run_id_and_donated_conversation_id() -> None:
    history = (Message.user("old").with_ids("r0", "conv-7"), Message.assistant("ok"))
    result = await Agent(ScriptedModel(["x"])).run_with_history(history, "go", run_id="trace-1")
    assert result.run_id == "trace-1"
    assert result.conversation_id == "conv-7"
    assert result.messages[0] == history[0]


async def test_repair_synthesized_results_carry_no_stamps_and_the_wire_is_valid() -> None:
    crashed = (
        Message.user("weather?"),
        calls(call("c1", "get_weather", '{"city":"Paris"}'), call("c2", "get_weather", "{}")),
        Message.tool_result("c1", "get_weather", "18 C"),
        Message.tool_result("ghost", "get_weather", "orphan"),
    )
    model = ScriptedModel(["done"])
    result = await Agent(model, tools=[get_weather]).run_with_history(crashed, "continue")
    sent = model.requests[0].messages
    assert check_pairing(sent) == ()
    synthesized = [m for m in result.messages if m.tool_call_id == "c2"]
    assert len(synthesized) == 1
    assert synthesized[0].run_id is None and synthesized[0].conversation_id is None
    assert all(m.tool_call_id != "ghost" for m in result.messages)
    assert check_pairing(result.messages) == ()


async def test_result_messages_round_trip_through_json_and_resume() -> None:
    agent = Agent(ScriptedModel(["one", "two"]), instructions="I.")
    first = await agent.run("hi")
    stored = encode_history(first.messages)
    loaded = decode_history(stored)
    assert isinstance(loaded, Success)
    second = await agent.run_with_history(loaded.unwrap(), "again")
    assert second.conversation_id == first.conversation_id


# -- instructions -------------------------------------------------------------------------


async def test_instructions_replace_every_system_message_of_the_history() -> None:
    model = ScriptedModel(["ok"])
    history = (Message.system("stale"), Message.user("a"), Message.system("injected"))
    result = await Agent(model, instructions="fresh").run_with_history(history, "b")
    assert model.requests[0].instructions == "fresh"
    assert all(m.role is not Role.SYSTEM for m in model.requests[0].messages)
    assert [m.text for m in result.messages if m.role is Role.SYSTEM] == ["fresh"]


async def test_dynamic_instructions_join_static_ones_and_are_resolved_once_per_run() -> None:
    seen: list[str] = []

    async def player(ctx: RunContext[dict[str, str]]) -> str:
        seen.append(ctx.run_id)
        return f"The player's name is {ctx.deps['name']}."

    model = ScriptedModel(
        [
            Message.assistant("no tool call"),  # correction round: output is structured
            calls(call("o", "final_result", '{"response": 3}')),
        ]
    )
    agent = Agent(model, instructions="Be kind.", dynamic_instructions=player, output_type=int)
    result = await agent.run("go", deps={"name": "Ada"})
    assert result.output == 3
    assert len(seen) == 1
    assert {r.instructions for r in model.requests} == {"Be kind.\n\nThe player's name is Ada."}


async def test_empty_dynamic_instructions_contribute_nothing() -> None:
    model = ScriptedModel(["ok"])
    await Agent(model, instructions="S", dynamic_instructions=lambda ctx: "").run("x")
    assert model.requests[0].instructions == "S"


async def test_failing_instructions_fail_the_run_before_any_request() -> None:
    def broken(ctx: RunContext[None]) -> str:
        raise KeyError("db down")

    model = ScriptedModel([])
    with pytest.raises(RunError) as info:
        await Agent(model, dynamic_instructions=broken).run("x")
    assert info.value.stage is Stage.INSTRUCTIONS
    assert info.value.partial is None
    assert model.requests == []


# -- history processor ----------------------------------------------------------------------


async def test_history_processor_runs_once_on_exactly_the_supplied_history() -> None:
    received: list[tuple[Message, ...]] = []

    def spy(history: Any) -> Any:
        received.append(tuple(history))
        return trim_history(2)(history)

    history = tuple(Message.user(f"u{i}") for i in range(5))
    model = ScriptedModel(["a", "b"])
    agent = Agent(model, history_processor=spy, tools=[get_weather])
    await agent.run_with_history(history, "fresh prompt")
    assert received == [history]
    assert [m.text for m in model.requests[0].messages] == ["u3", "u4", "fresh prompt"]


async def test_history_processor_error_fails_the_run_before_any_model_call() -> None:
    model = ScriptedModel([])
    only_results = (
        Message.user("q"),
        calls(call("c1", "get_weather")),
        Message.tool_result("c1", "get_weather", "a"),
        Message.tool_result("c1", "get_weather", "b"),
    )
    agent = Agent(model, history_processor=trim_history(1))
    with pytest.raises(RunError) as info:
        await agent.run_with_history(only_results, "go")
    assert info.value.stage is Stage.HISTORY
    assert "trim_history(1)" in str(info.value)
    assert info.value.partial is None
    assert model.requests == []


async def test_a_raising_processor_is_a_history_failure() -> None:
    def boom(history: Any) -> Any:
        raise RuntimeError("nope")

    with pytest.raises(RunError) as info:
        await Agent(ScriptedModel([]), history_processor=boom).run("x")
    assert info.value.stage is Stage.HISTORY
    assert "RuntimeError: nope" in str(info.value)


async def test_a_processor_returning_none_is_a_history_failure_not_no_processor() -> None:
    """The core takes the processor's outcome as a value (``processed=``), where ``None``
    means "no processor": a processor that returns ``None`` must still fail the run."""
    model = ScriptedModel(["never"])
    with pytest.raises(RunError) as info:
        await Agent(model, history_processor=lambda history: None).run("x")
    assert info.value.stage is Stage.HISTORY
    assert "returned None" in str(info.value)
    assert model.requests == []


async def test_a_processor_returning_a_non_result_says_what_it_was() -> None:
    with pytest.raises(RunError) as info:
        await Agent(ScriptedModel([]), history_processor=lambda history: list(history)).run("x")
    assert info.value.stage is Stage.HISTORY
    assert "Success(messages)" in str(info.value)


# -- tools ------------------------------------------------------------------------------


async def test_tools_run_and_their_results_reach_the_model() -> None:
    model = ScriptedModel(
        [calls(call("c1", "get_weather", '{"city":"Paris"}'), usage=Usage(10, 2)), "18 C."]
    )
    result = await Agent(model, tools=[get_weather]).run("weather?")
    assert result.output == "18 C."
    assert result.tool_executions == 1
    assert result.requests == 2
    tool_msg = model.requests[1].messages[-1]
    assert (tool_msg.role, tool_msg.tool_call_id, tool_msg.text) == (
        Role.TOOL,
        "c1",
        "18 C in Paris",
    )
    definition = model.requests[0].tools[0]
    assert definition.parameters["properties"]["city"] == {
        "type": "string",
        "description": "the city's name.",
    }


async def test_the_calls_of_one_turn_run_concurrently() -> None:
    started: list[str] = []
    both = asyncio.Event()

    async def wait_for_sibling(name: str) -> str:
        started.append(name)
        if len(started) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), timeout=2)
        return name

    model = ScriptedModel(
        [
            calls(
                call("a", "wait_for_sibling", '{"name":"a"}'),
                call("b", "wait_for_sibling", '{"name":"b"}'),
            ),
            "done",
        ]
    )
    result = await Agent(model, tools=[wait_for_sibling]).run("go")
    assert result.output == "done"
    assert [m.tool_call_id for m in result.messages if m.role is Role.TOOL] == ["a", "b"]


async def test_sync_tools_receive_the_run_context() -> None:
    seen: dict[str, Any] = {}

    def who(ctx: RunContext[str]) -> str:
        seen.update(deps=ctx.deps, call=ctx.tool_call_id, run=ctx.run_id)
        return "ok"

    model = ScriptedModel([calls(call("c9", "who")), "done"])
    result = await Agent(model, tools=[who]).run("x", deps="alice")
    assert seen == {"deps": "alice", "call": "c9", "run": result.run_id}


async def test_invalid_arguments_go_back_to_the_model_as_a_failed_result() -> None:
    model = ScriptedModel(
        [
            calls(call("c1", "get_weather", '{"city": 5, "extra": 1}')),
            calls(call("c2", "get_weather", '{"city": "Oslo"}')),
            "fine",
        ]
    )
    result = await Agent(model, tools=[get_weather]).run("x")
    first = next(m for m in result.messages if m.tool_call_id == "c1")
    assert first.failed
    assert "expected a string" in first.text and "unexpected argument 'extra'" in first.text
    assert next(m for m in result.messages if m.tool_call_id == "c2").text == "18 C in Oslo"


async def test_invalid_arguments_are_bounded_by_the_tool_retry_budget() -> None:
    bad = [calls(call(f"c{i}", "get_weather", '{"city": 1}')) for i in range(5)]
    agent = Agent(ScriptedModel(bad), tools=[tool(max_retries=1)(get_weather)])
    with pytest.raises(RunError) as info:
        await agent.run("x")
    assert info.value.stage is Stage.TOOL
    assert "retry budget" in str(info.value)


async def test_truncated_arguments_are_never_executed() -> None:
    executed: list[str] = []

    def write_file(path: str) -> str:
        executed.append(path)
        return "written"

    model = ScriptedModel(
        [
            attrs.evolve(calls(call("c1", "write_file", '{"path": "rep')), finish_reason="length"),
            "sorry",
        ]
    )
    result = await Agent(model, tools=[write_file]).run("x")
    assert executed == []
    answer = next(m for m in result.messages if m.tool_call_id == "c1")
    assert answer.failed and "cut off" in answer.text
    _, report = normalize_history(result.messages)
    assert [e.call_id for e in report.truncated] == ["c1"]


async def test_unknown_tools_get_a_failed_result_naming_the_available_ones() -> None:
    model = ScriptedModel([calls(call("c1", "nope")), "ok"])
    result = await Agent(model, tools=[get_weather]).run("x")
    answer = next(m for m in result.messages if m.tool_call_id == "c1")
    assert answer.failed and "get_weather" in answer.text


async def test_a_tool_failure_is_reported_and_the_run_goes_on() -> None:
    def pay(amount: int) -> ToolFailure | str:
        return ToolFailure("card declined")

    model = ScriptedModel([calls(call("c1", "pay", '{"amount": 3}')), "declined"])
    result = await Agent(model, tools=[pay]).run("x")
    answer = next(m for m in result.messages if m.tool_call_id == "c1")
    assert answer.failed and answer.text == "card declined"
    assert result.output == "declined"


async def test_calls_without_an_id_get_one_so_they_can_be_paired() -> None:
    model = ScriptedModel([calls(call(None, "get_weather", '{"city":"Rome"}')), "ok"])
    result = await Agent(model, tools=[get_weather]).run("x")
    assert check_pairing(result.messages) == ()
    assert result.messages[-2].tool_call_id == f"golem_{run_tag(result.run_id)}_1_0"


async def test_canceled_keeps_earlier_results_and_closes_the_rest_with_no_repair_needed() -> None:
    gate = asyncio.Event()

    async def fast() -> str:
        gate.set()
        return "fast done"

    async def stopper() -> str:
        await gate.wait()
        await asyncio.sleep(0.01)
        raise Canceled("the user pressed stop")

    async def slow() -> str:
        await asyncio.sleep(5)
        return "never"

    model = ScriptedModel(
        [calls(call("f", "fast"), call("s", "stopper"), call("z", "slow"), usage=Usage(5, 1))]
    )
    with pytest.raises(RunError) as info:
        await Agent(model, tools=[fast, stopper, slow]).run("x")
    error = info.value
    assert error.stage is Stage.CANCELED
    assert "the user pressed stop" in str(error)
    partial = error.partial
    assert partial is not None
    results = {m.tool_call_id: m for m in partial.messages if m.role is Role.TOOL}
    assert results["f"].text == "fast done"
    assert "interrupted before execution" in results["s"].text
    assert "interrupted before execution" in results["z"].text
    _, report = normalize_history(partial.messages)
    assert not report.changed
    assert partial.usage == Usage(5, 1)


async def test_an_unexpected_tool_exception_fails_the_run_with_evidence_at_the_assistant_turn() -> (
    None
):
    def ok() -> str:
        return "fine"

    def broken() -> str:
        raise ZeroDivisionError("oops")

    model = ScriptedModel([calls(call("a", "ok"), call("b", "broken")), "never"])
    with pytest.raises(RunError) as info:
        await Agent(model, tools=[ok, broken]).run("x")
    assert info.value.stage is Stage.TOOL
    assert "ZeroDivisionError" in str(info.value)
    partial = info.value.partial
    assert partial is not None
    assert partial.messages[-1].role is Role.ASSISTANT
    assert partial.requests == 1
    # resuming repairs the unanswered calls and continues
    resumed = await Agent(ScriptedModel(["recovered"])).run_with_history(
        partial.messages, "continue"
    )
    assert resumed.output == "recovered"
    assert resumed.conversation_id == partial.conversation_id


# -- output -------------------------------------------------------------------------------


@attrs.frozen
class City:
    name: str
    population: int


async def test_structured_output_through_the_output_tool() -> None:
    model = ScriptedModel(
        [calls(call("o1", "final_result", '{"name": "Oslo", "population": 700000}'))]
    )
    result = await Agent(model, output_type=City).run("x")
    assert result.output == City("Oslo", 700000)
    assert model.requests[0].tool_choice_required
    assert check_pairing(result.messages) == ()
    assert result.messages[-1].role is Role.TOOL


async def test_invalid_structured_output_gets_a_correction_round() -> None:
    model = ScriptedModel(
        [
            calls(call("o1", "final_result", '{"name": "Oslo", "population": "many"}')),
            calls(call("o2", "final_result", '{"name": "Oslo", "population": 7}')),
        ]
    )
    result = await Agent(model, output_type=City).run("x")
    assert result.output == City("Oslo", 7)
    correction = model.requests[1].messages[-1]
    assert correction.failed and "population" in correction.text


async def test_persistently_invalid_output_fails_at_stage_output() -> None:
    model = ScriptedModel(["no", "still no", "never"])
    with pytest.raises(RunError) as info:
        await Agent(model, output_type=City, output_retries=1).run("x")
    assert info.value.stage is Stage.OUTPUT
    assert info.value.partial is not None


async def test_output_tool_and_function_calls_in_one_turn_keep_the_history_valid() -> None:
    model = ScriptedModel(
        [
            calls(
                call("w", "get_weather", '{"city":"Oslo"}'),
                call("o", "final_result", '{"name":"Oslo","population":1}'),
            )
        ]
    )
    result = await Agent(model, output_type=City, tools=[get_weather]).run("x")
    assert result.output == City("Oslo", 1)
    assert check_pairing(result.messages) == ()
    assert result.tool_executions == 0


# -- failures and resume -----------------------------------------------------------------


async def test_a_first_request_failure_has_no_partial() -> None:
    model = ScriptedModel([ModelError(ModelErrorKind.AUTHENTICATION, "bad key", status=401)])
    with pytest.raises(RunError) as info:
        await Agent(model).run("x")
    assert info.value.stage is Stage.REQUEST
    assert info.value.partial is None
    assert isinstance(info.value.cause, ModelError)
    assert isinstance(info.value.__cause__, ModelError)


async def test_a_later_failure_carries_a_resumable_partial() -> None:
    model = ScriptedModel(
        [
            calls(call("c1", "get_weather", '{"city":"Paris"}'), usage=Usage(7, 3)),
            ModelError(ModelErrorKind.SERVER_ERROR, "boom", status=500),
        ]
    )
    agent = Agent(model, tools=[get_weather])
    with pytest.raises(RunError) as info:
        await agent.run("weather?")
    partial = info.value.partial
    assert partial is not None
    assert partial.requests == 1 and partial.tool_executions == 1
    assert partial.usage == Usage(7, 3)
    assert [m.role for m in partial.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert partial.run_id and partial.conversation_id
    resumed = await Agent(ScriptedModel(["It's 18 C."]), tools=[get_weather]).run_with_history(
        partial.messages, None
    )
    assert resumed.output == "It's 18 C."
    assert resumed.conversation_id == partial.conversation_id


async def test_the_request_limit_fails_at_stage_limit() -> None:
    loop = [calls(call(f"c{i}", "get_weather", '{"city":"X"}')) for i in range(5)]
    with pytest.raises(RunError) as info:
        await Agent(ScriptedModel(loop), tools=[get_weather], max_requests=3).run("x")
    assert info.value.stage is Stage.LIMIT
    assert info.value.partial is not None and info.value.partial.requests == 3


async def test_a_run_timeout_gives_a_partial() -> None:
    async def slow(request: ModelRequest) -> Message:
        if len(request.messages) > 1:
            await asyncio.sleep(5)
        return calls(call("c1", "get_weather", '{"city":"X"}'))

    agent = Agent(FunctionModel(slow), tools=[get_weather], timeout=0.2)
    with pytest.raises(RunError) as info:
        await agent.run("x")
    assert info.value.stage is Stage.TIMEOUT
    assert info.value.partial is not None and info.value.partial.requests == 1


async def test_cancelling_the_task_keeps_asyncio_semantics_and_the_partial_is_reachable() -> None:
    reached = asyncio.Event()

    async def model_fn(request: ModelRequest) -> Message:
        if len(request.messages) > 1:
            reached.set()
            await asyncio.sleep(10)
        return calls(call("c1", "get_weather", '{"city":"X"}'))

    agent = Agent(FunctionModel(model_fn), tools=[get_weather])
    task = asyncio.create_task(agent.run("x"))
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    partial = partial_from(info.value)
    assert partial is not None
    assert partial.requests == 1 and partial.tool_executions == 1


# -- streaming ----------------------------------------------------------------------------


async def test_streaming_delivers_stamped_deltas_and_the_same_result() -> None:
    script = [calls(call("c1", "get_weather", '{"city":"Paris"}')), "It is 18 C in Paris."]
    events: list[DeltaEvent] = []
    streamed = await Agent(ScriptedModel(list(script)), tools=[get_weather]).run_stream(
        "x", on_delta=events.append
    )
    plain = await Agent(ScriptedModel(list(script)), tools=[get_weather]).run("x")
    assert streamed.output == plain.output
    assert [m.parts for m in streamed.messages] == [m.parts for m in plain.messages]
    assert {e.run_id for e in events} == {streamed.run_id}
    assert "".join(e.delta.text for e in events if isinstance(e.delta, TextDelta)) == (
        "It is 18 C in Paris."
    )


async def test_async_delta_handlers_are_awaited() -> None:
    got: list[str] = []

    async def handler(event: DeltaEvent) -> None:
        if isinstance(event.delta, TextDelta):
            got.append(event.delta.text)

    await Agent(ScriptedModel(["a b c"])).run_stream("x", on_delta=handler)
    assert "".join(got) == "a b c"


async def test_a_stream_without_a_final_message_is_a_request_failure() -> None:
    def cut(request: ModelRequest) -> Any:
        async def gen() -> Any:
            yield TextDelta("partial ")
            raise ModelError(ModelErrorKind.STREAM_INTERRUPTED, "connection lost")

        return gen()

    agent = Agent(FunctionModel(stream_function=cut))
    with pytest.raises(RunError) as info:
        await agent.run_stream("x")
    assert info.value.stage is Stage.REQUEST
    assert info.value.partial is None


# -- sync twins and misuse ----------------------------------------------------------------


def test_sync_twins() -> None:
    agent = Agent(ScriptedModel(["a", "b", "c", "d"]))
    first = agent.run_sync("x")
    assert agent.run_with_history_sync(first.messages, "y").output == "b"
    assert agent.run_stream_sync("z").output == "c"
    assert agent.run_stream_with_history_sync(first.messages, "w").output == "d"


async def test_sync_twins_refuse_to_run_inside_an_event_loop() -> None:
    with pytest.raises(UsageError, match="await"):
        Agent(ScriptedModel(["a"])).run_sync("x")


def test_bad_configuration_is_refused_at_construction() -> None:
    with pytest.raises(UsageError):
        Agent(ScriptedModel([]), max_requests=0)
    with pytest.raises(UsageError, match="unknown model"):
        Agent("nonsense:gpt")

    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(UsageError, match="needs a type annotation"):
        Agent(ScriptedModel([]), tools=[untyped])


async def test_nothing_to_send_is_a_history_failure() -> None:
    with pytest.raises(RunError) as info:
        await Agent(ScriptedModel([])).run_with_history((), None)
    assert info.value.stage is Stage.HISTORY


def test_failure_result_types_are_distinct() -> None:
    assert [type(decode_history(b)) for b in (b"[]", b"[")] == [Success, Failure]


async def test_an_unexpected_model_exception_keeps_the_partial() -> None:
    def flaky(request: ModelRequest) -> Message:
        if len(request.messages) > 1:
            raise ValueError("model function bug")
        return calls(call("c1", "get_weather", '{"city":"X"}'))

    with pytest.raises(RunError) as info:
        await Agent(FunctionModel(flaky), tools=[get_weather]).run("x")
    assert info.value.stage is Stage.REQUEST
    assert "ValueError: model function bug" in str(info.value)
    assert info.value.partial is not None and info.value.partial.tool_executions == 1


async def test_a_failing_delta_handler_fails_the_request_with_a_partial() -> None:
    def handler(event: DeltaEvent) -> None:
        raise RuntimeError("ui closed")

    with pytest.raises(RunError) as info:
        await Agent(ScriptedModel(["hello there"])).run_stream("x", on_delta=handler)
    assert info.value.stage is Stage.REQUEST
    assert isinstance(info.value.cause, RuntimeError)


async def test_a_timeout_error_from_inside_is_not_the_run_timeout() -> None:
    def slow(request: ModelRequest) -> Message:
        raise TimeoutError("upstream")

    with pytest.raises(RunError) as info:
        await Agent(FunctionModel(slow), timeout=30).run("x")
    assert info.value.stage is Stage.REQUEST


async def test_structured_tool_returns_are_sent_as_json() -> None:
    def lookup_city(name: str) -> City:
        return City(name, 42)

    model = ScriptedModel([calls(call("c1", "lookup_city", '{"name":"Oslo"}')), "ok"])
    result = await Agent(model, tools=[lookup_city]).run("x")
    answer = next(m for m in result.messages if m.tool_call_id == "c1")
    assert answer.text == '{"name": "Oslo", "population": 42}'


# -- an exception in on_delta is reported as the handler's (first contact, round 3; issue 26) ---


async def test_an_exception_in_on_delta_is_reported_as_the_handlers() -> None:
    def handler(event: DeltaEvent) -> None:
        raise RuntimeError("ui closed")

    with pytest.raises(RunError) as caught:
        await Agent(ScriptedModel(["hello there"])).run_stream("x", on_delta=handler)
    message = str(caught.value)
    assert "the on_delta handler raised RuntimeError: ui closed" in message
    assert "model request raised" not in message
    assert isinstance(caught.value.cause, RuntimeError)
