"""Regression tests for issue 13 items 8, 10, 11, 12 and issue 14 item 1: what a run
promises about processors, ids, timeouts, tool failures and the values it hands out."""

from __future__ import annotations

import asyncio
import re
import traceback
from typing import Any

import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    Reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)
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


# -- issue 14.3: wrong argument types are refused at the boundary ----------------------


@pytest.mark.parametrize(
    ("history", "says"),
    [
        ([{"role": "user", "content": "hi"}], "history[0] must be a golem Message"),
        ("[]", "use decode_history"),
        (b"[]", "use decode_history"),
        ({"role": "user"}, "must be a sequence of golem Message"),
        (42, "must be a sequence of golem Message"),
    ],
)
async def test_history_of_the_wrong_type_is_a_usage_error(history: Any, says: str) -> None:
    agent = Agent(ScriptedModel(["never"]))
    with pytest.raises(UsageError, match=re.escape(says)):
        await agent.run_with_history(history, "hi")


async def test_a_run_result_as_history_says_to_pass_its_messages() -> None:
    agent = Agent(ScriptedModel(["one", "never"]))
    first = await agent.run("hi")
    with pytest.raises(UsageError, match=r"pass result\.messages"):
        await agent.run_with_history(first, "again")  # type: ignore[arg-type]


@pytest.mark.parametrize("prompt", [["a", "b"], {"text": "hi"}, 3, b"hi"])
async def test_a_prompt_of_the_wrong_type_is_a_usage_error(prompt: Any) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(UsageError, match="prompt"):
        await Agent(model).run(prompt)
    assert model.requests == []


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("max_requests", "3"),
        ("max_requests", 0),
        ("max_requests", True),
        ("output_retries", 1.5),
        ("timeout", "10"),
        ("timeout", float("nan")),
        ("instructions", 3),
        ("history_processor", "trim"),
        ("tools", "get_weather"),
    ],
)
def test_agent_settings_of_the_wrong_type_are_usage_errors(setting: str, value: Any) -> None:
    with pytest.raises(UsageError, match=setting):
        Agent(ScriptedModel(["x"]), **{setting: value})


def test_a_message_role_may_be_its_plain_string() -> None:
    from golem_core import Role

    assert Message("assistant").role is Role.ASSISTANT  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown message role 'bot'"):
        Message("bot")  # type: ignore[arg-type]


# -- issue 14.4: decode that raises, with the path -------------------------------------------


def test_decode_history_or_raise_names_the_path() -> None:
    from golem_core import HistoryDecodeError, decode_history_or_raise, encode_history

    history = (Message.user("hi"),)
    assert decode_history_or_raise(encode_history(history)) == history
    bad = b'[{"role":"user","parts":[{"type":"url","url":3,"kind":"image"}]}]'
    with pytest.raises(HistoryDecodeError) as caught:
        decode_history_or_raise(bad)
    assert caught.value.path == "[0].parts[0].url"
    assert "expected a string, got a number" in str(caught.value)
    assert isinstance(caught.value, ValueError)


# -- issue 14.7: errors say where and how many attempts ------------------------------------


async def test_a_model_error_names_the_endpoint_and_the_attempts_never_the_key(
    provider_server: ProviderServer,
) -> None:
    from golem_shell import OpenAIModel, RetryPolicy

    key = "sk-attempts-secret-0123456789"
    for _ in range(3):
        provider_server.enqueue(Reply(hang=5.0))
    model = OpenAIModel(
        "gpt-4o-mini",
        api_key=key,
        base_url=provider_server.url + "/v1",
        timeout=0.2,
        retry=RetryPolicy(max_attempts=2, base=0.01, cap=0.02),
    )
    with pytest.raises(RunError) as caught:
        await Agent(model).run("hi")
    text = str(caught.value)
    host = provider_server.url.removeprefix("http://")
    assert f"at {host}/v1/chat/completions" in text
    assert "after 3 attempts" in text
    assert key not in text and key not in repr(caught.value.cause)
    assert caught.value.cause is not None and getattr(caught.value.cause, "attempts", None) == 3


def test_sync_twins_pass_events_and_an_agent_has_a_name() -> None:
    seen: list[str] = []
    agent = Agent(ScriptedModel(["hi"]), name="greeter")
    assert "greeter" in repr(agent)
    agent.run_sync("hello", on_event=lambda e: seen.append(type(e).__name__))
    assert seen[0] == "RunStarted" and seen[-1] == "RunFinished"
    with pytest.raises(UsageError, match="name"):
        Agent(ScriptedModel(["x"]), name=3)  # type: ignore[call-overload]


# -- issue 14.8: the public surface ---------------------------------------------------------


def test_the_top_level_is_what_an_application_uses() -> None:
    import golem_core
    import golem_core.loop
    import golem_shell

    driver = {"RunConfig", "RunState", "start_run", "receive", "next_command", "ExecuteTools"}
    assert driver.isdisjoint(golem_core.__all__)
    assert driver <= set(golem_core.loop.__all__)
    assert {"SSEDecoder", "next_uuid7", "apply_instructions"}.isdisjoint(golem_core.__all__)
    assert golem_shell.Stage is golem_core.loop.Stage  # one name per concept
    with pytest.warns(DeprecationWarning, match="golem_core.loop"):
        assert golem_core.RunConfig is golem_core.loop.RunConfig  # type: ignore[attr-defined]


async def test_an_async_processor_runs_once_on_what_was_supplied() -> None:
    from golem_core import clear_tool_results, is_summary
    from golem_shell import summarize_history

    history = (
        Message.user("Weather in Oslo?"),
        Message.assistant(None, tool_calls=[ToolCallPart("c1", "w", "{}")]),
        Message.tool_result("c1", "w", "rain " * 200),
        Message.assistant("Rain."),
        Message.user("And tomorrow?"),
        Message.assistant("Sun."),
    )
    summarizer = summarize_history(ScriptedModel(["Oslo: rain."]), keep_last_turns=1, step_turns=0)
    model = ScriptedModel(["ok"])
    result = await Agent(model, history_processor=summarizer).run_with_history(history, "go")
    sent = model.requests[0].messages
    assert is_summary(sent[0]) and len(sent) < len(history) + 1
    assert result.output == "ok"
    assert clear_tool_results(keep_last=0)  # the sync processors compose as before
