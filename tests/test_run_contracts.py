"""Regression tests for issue 13 items 8, 10, 11, 12 and issue 14 item 1: what a run
promises about processors, ids, timeouts, tool failures and the values it hands out."""

from __future__ import annotations

import asyncio
import traceback
from typing import Any

import pytest
from returns.result import Success

from golem_core import Message, ToolCallPart, trim_history
from golem_shell import Agent, RunError, ScriptedModel, Stage, UsageError, tool

pytestmark = pytest.mark.anyio


# -- 8. a processor's bad value fails the run before any model call ----------------------


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        (None, "None"),
        (Success("str"), "Success('str')"),
        (Success(("not a message",)), "holding a str"),
        ((Message.user("x"),), "a tuple"),
    ],
)
async def test_a_processor_returning_a_bad_value_fails_before_any_request(
    returned: Any, named: str
) -> None:
    model = ScriptedModel(["never"])
    agent = Agent(model, history_processor=lambda h: returned)
    with pytest.raises(RunError) as caught:
        await agent.run_with_history((Message.user("old"),), "new")
    assert caught.value.stage is Stage.HISTORY
    assert named in str(caught.value)
    assert model.requests == []


async def test_a_good_processor_still_runs() -> None:
    model = ScriptedModel(["ok"])
    result = await Agent(model, history_processor=trim_history(1)).run_with_history(
        (Message.user("a"), Message.assistant("b")), "c"
    )
    assert result.output == "ok"


# -- 10. explicit ids win or are refused ---------------------------------------------------


@pytest.mark.parametrize("name", ["run_id", "conversation_id"])
async def test_an_empty_explicit_id_is_refused(name: str) -> None:
    agent = Agent(ScriptedModel(["never"]))
    with pytest.raises(UsageError, match=name):
        await agent.run("hi", **{name: ""})


async def test_explicit_and_donated_ids_win_whatever_their_value() -> None:
    agent = Agent(ScriptedModel(["a", "b"]))
    first = await agent.run("hi", run_id=" ", conversation_id="0")
    assert (first.run_id, first.conversation_id) == (" ", "0")
    donated = (Message.user("x").with_ids("r", "donated"),)
    second = await agent.run_with_history(donated, "go")
    assert second.conversation_id == "donated"


# -- 11. timeout covers instructions; a tool's own CancelledError is a failure ----------


async def test_the_timeout_covers_resolving_dynamic_instructions() -> None:
    async def slow(_: Any) -> str:
        await asyncio.sleep(30)
        return "never"

    model = ScriptedModel(["never"])
    agent = Agent(model, dynamic_instructions=slow, timeout=0.05)
    with pytest.raises(RunError) as caught:
        await agent.run("hi")
    assert caught.value.stage is Stage.TIMEOUT
    assert model.requests == []


async def test_a_tool_raising_cancelled_error_itself_fails_the_run() -> None:
    @tool
    async def flaky() -> str:
        """Flaky."""
        raise asyncio.CancelledError("the tool's own")

    call = Message.assistant(None, tool_calls=[ToolCallPart("c1", "flaky", "{}")])
    agent = Agent(ScriptedModel([call, "never"]), tools=[flaky])
    with pytest.raises(RunError) as caught:
        await agent.run("go")
    assert caught.value.stage is Stage.TOOL
    assert "CancelledError" in str(caught.value)
    assert caught.value.partial is not None


async def test_cancelling_a_run_inside_a_tool_still_cancels() -> None:
    started = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    call = Message.assistant(None, tool_calls=[ToolCallPart("c1", "wait", "{}")])
    task = asyncio.create_task(Agent(ScriptedModel([call]), tools=[wait]).run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- 12. the parsed arguments are never handed out mutable ----------------------------------


async def test_output_of_type_any_does_not_alias_the_parsed_arguments() -> None:
    call = ToolCallPart("c1", "final_result", '{"response": {"items": [1]}}')
    turn = Message.assistant(None, tool_calls=[call])
    result = await Agent(ScriptedModel([turn]), output_type=Any).run("go")
    result.output["items"].append(2)
    assert call.arguments_object == {"response": {"items": [1]}}
    sent = result.messages[1].tool_calls[0]
    assert sent.arguments_object == {"response": {"items": [1]}}


def test_arguments_object_is_a_fresh_copy_every_time() -> None:
    call = ToolCallPart("c1", "t", '{"a": [1, {"b": 2}]}')
    first = call.arguments_object
    assert first is not None
    first["a"].append(3)  # type: ignore[attr-defined]
    assert call.arguments_object == {"a": [1, {"b": 2}]}


# -- issue 14.1: a tool's exception is chained ---------------------------------------------


async def test_a_tool_exception_is_chained_with_the_users_frame() -> None:
    def users_helper() -> None:
        raise KeyError("missing-city")

    @tool
    def lookup() -> str:
        """Look up."""
        users_helper()
        return "never"

    call = Message.assistant(None, tool_calls=[ToolCallPart("c1", "lookup", "{}")])
    with pytest.raises(RunError) as caught:
        await Agent(ScriptedModel([call]), tools=[lookup]).run("go")
    error = caught.value
    assert isinstance(error.cause, KeyError)
    assert error.__cause__ is error.cause
    frames = "".join(traceback.format_exception(error))
    assert "users_helper" in frames
