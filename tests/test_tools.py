"""How a tool fails, and how a tool reads (first contact, round 3; issue 26): ``ModelRetry``
asks the model to call again and counts against the tool's retries, a raised
``ToolFailure`` is a failed result and the run goes on, any other exception fails the run
with its cause; a tool's repr shows the tool."""

from __future__ import annotations

import pytest

from golem_core import Message, ToolCallPart
from golem_shell import (
    Agent,
    ModelRetry,
    RunError,
    ScriptedModel,
    Stage,
    ToolFailure,
    tool,
)

pytestmark = pytest.mark.anyio


def calls(*parts: ToolCallPart) -> Message:
    return Message.assistant(tool_calls=parts)


async def test_model_retry_asks_the_model_to_call_again_with_the_message() -> None:
    seen: list[int] = []

    @tool
    def pick(size: int) -> str:
        """Pick a size."""
        seen.append(size)
        if size > 10:
            raise ModelRetry("size must be 10 or less; try again with a smaller size")
        return f"picked {size}"

    model = ScriptedModel(
        [
            calls(ToolCallPart("c1", "pick", '{"size": 50}')),
            calls(ToolCallPart("c2", "pick", '{"size": 5}')),
            "done",
        ]
    )
    result = await Agent(model, tools=[pick]).run("pick")
    assert seen == [50, 5]
    first = next(m for m in result.messages if m.tool_call_id == "c1")
    assert first.failed and first.text == "size must be 10 or less; try again with a smaller size"
    second = next(m for m in result.messages if m.tool_call_id == "c2")
    assert not second.failed and second.text == "picked 5"
    assert result.output == "done"


async def test_model_retry_counts_against_the_tools_retries_then_fails_the_run() -> None:
    @tool(max_retries=1)
    def flaky() -> str:
        """Never works."""
        raise ModelRetry("not now")

    model = ScriptedModel([calls(ToolCallPart(f"c{i}", "flaky", "{}")) for i in range(3)])
    with pytest.raises(RunError) as caught:
        await Agent(model, tools=[flaky]).run("go")
    assert caught.value.stage is Stage.TOOL
    assert "flaky" in str(caught.value) and "retry budget" in str(caught.value)
    assert caught.value.partial is not None
    answers = [m for m in caught.value.partial.messages if m.tool_name == "flaky"]
    assert [m.text for m in answers] == ["not now", "not now"]  # 1 retry allowed, 2 tries


async def test_a_raised_tool_failure_is_a_failed_result_and_the_run_goes_on() -> None:
    def pay(amount: int) -> str:
        raise ToolFailure("card declined")

    model = ScriptedModel([calls(ToolCallPart("c1", "pay", '{"amount": 3}')), "declined"])
    result = await Agent(model, tools=[pay]).run("pay")
    answer = next(m for m in result.messages if m.tool_call_id == "c1")
    assert answer.failed and answer.text == "card declined"
    assert result.output == "declined"


async def test_any_other_exception_crashes_the_run_with_the_cause_chained() -> None:
    def broken() -> str:
        raise KeyError("oops")

    model = ScriptedModel([calls(ToolCallPart("c1", "broken", "{}"))])
    with pytest.raises(RunError) as caught:
        await Agent(model, tools=[broken]).run("go")
    assert caught.value.stage is Stage.TOOL
    assert isinstance(caught.value.__cause__, KeyError)


def test_tool_failure_is_an_exception_that_keeps_value_equality() -> None:
    assert issubclass(ToolFailure, Exception) and issubclass(ModelRetry, Exception)
    assert ToolFailure("no") == ToolFailure("no") and ToolFailure("no") != ToolFailure("yes")
    assert ToolFailure("no").message == "no" and ToolFailure("no").parts == ()


def test_the_repr_of_a_tool_shows_the_tool() -> None:
    @tool(max_retries=3)
    def get_weather(city: str, days: int = 1) -> str:
        """Get the weather of a city."""
        return city

    text = repr(get_weather)
    assert text == (
        "Tool('get_weather', description='Get the weather of a city.',"
        " parameters=['city', 'days'], kind='function', max_retries=3)"
    )
    assert "function=" not in text and "_Param" not in text and "takes_context" not in text
