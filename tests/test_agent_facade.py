"""The agent as a facade (issue 32): a run's set-up is a value (``Agent.run_spec``), the
run keywords are declared once and refused when unknown, and a run's own model decides
how its structured output is asked for."""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest

from golem_core import Message, ModelSettings, Role, ToolCallPart
from golem_shell import (
    Agent,
    DeltaEvent,
    DeltaHandler,
    FunctionModel,
    RunContext,
    RunError,
    RunOptions,
    RunSpec,
    ScriptedModel,
    UsageError,
    UsageLimits,
    capture_run_messages,
)


@attrs.frozen
class Verdict:
    label: str


class ToolOnlyModel(FunctionModel):
    """A function model without native structured output (as Claude before 4.5)."""

    supports_native_output = False


def _seen(requests: list[Any], cls: type[FunctionModel] = ToolOnlyModel) -> FunctionModel:
    def answer(request: Any) -> Message | str:
        requests.append(request)
        if request.output_schema is not None:
            return '{"label": "native"}'
        return Message(Role.ASSISTANT, (ToolCallPart("o1", "final_result", '{"label": "tool"}'),))

    return cls(answer)


def test_run_spec_is_the_runs_set_up_under_its_keywords_and_overrides() -> None:
    agent = Agent(ScriptedModel(["x"]), settings=ModelSettings(temperature=0.5), max_requests=7)
    spec = agent.run_spec()
    assert isinstance(spec, RunSpec)
    assert spec.max_requests == 7 and spec.settings.temperature == 0.5
    other = ScriptedModel(["y"])
    spec = agent.run_spec(
        model=other,
        settings=ModelSettings(max_tokens=9),
        usage_limits=UsageLimits(request_limit=3),
    )
    assert spec.model is other and spec.max_requests == 3
    assert (spec.settings.temperature, spec.settings.max_tokens) == (0.5, 9)
    winner = ScriptedModel(["z"])
    with agent.override(model=winner):
        assert agent.run_spec(model=other).model is winner  # the override wins
    assert agent.run_spec().model is agent.model  # and is undone


@pytest.mark.parametrize(
    "method", ["run_sync", "run_stream_sync", "run_with_history_sync", "iter_stream"]
)
def test_an_unknown_run_keyword_is_a_type_error_naming_it(method: str) -> None:
    agent = Agent(ScriptedModel(["x"]))
    call: Any = getattr(agent, method)
    args: tuple[Any, ...] = ([], "hi") if method == "run_with_history_sync" else ("hi",)
    with pytest.raises(TypeError, match="usage_limit'") as caught:
        call(*args, usage_limit=UsageLimits(request_limit=1))
    assert "usage_limits" in str(caught.value)  # the keywords that exist are named


def test_iter_stream_takes_no_on_event_of_its_own() -> None:
    with pytest.raises(TypeError, match="on_event"):
        Agent(ScriptedModel(["x"])).iter_stream("hi", on_event=print)  # type: ignore[call-arg]


def test_every_run_keyword_is_declared_once() -> None:
    """The run keywords live in ``RunOptions`` alone: every run method of ``Agent`` and of
    the durable engines takes them as ``**options`` and declares none of them itself, so a
    new keyword is not listed here (nor anywhere but ``RunOptions``)."""
    import inspect

    from golem_shell.durable import DurableAgent
    from golem_shell.temporal import TemporalAgent

    keys = set(RunOptions.__optional_keys__)
    assert {"deps", "model", "settings", "usage_limits", "run_id", "conversation_id"} <= keys
    checked = []
    for cls in (Agent, DurableAgent, TemporalAgent):
        for name, method in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith(("run", "iter_stream", "start")):
                continue
            params = inspect.signature(method).parameters
            assert not keys & set(params), (cls.__name__, name, sorted(keys & set(params)))
            assert any(p.kind is p.VAR_KEYWORD for p in params.values()), (cls.__name__, name)
            checked.append(f"{cls.__name__}.{name}")
    assert {"Agent.run", "DurableAgent.start", "TemporalAgent.run"} <= set(checked)


def test_a_runs_own_model_decides_native_output() -> None:
    """Native output is decided against the model a run uses: an agent whose own model
    has it asks a model without it through the output tool, and the other way round."""
    seen: list[Any] = []
    tool_only = _seen(seen)
    native = FunctionModel(lambda request: '{"label": "native"}')
    agent = Agent(native, output_type=Verdict, output_mode="native")
    assert agent.run_sync("judge").output == Verdict("native")
    assert agent.run_sync("judge", model=tool_only).output == Verdict("tool")
    assert seen[-1].output_schema is None
    assert [t.name for t in seen[-1].tools] == ["final_result"]

    seen.clear()
    back = Agent(tool_only, output_type=Verdict, output_mode="native")
    assert back.run_sync("judge").output == Verdict("tool")
    assert back.run_sync("judge", model=_seen(seen, FunctionModel)).output == Verdict("native")
    assert seen[-1].output_schema is not None and seen[-1].tools == ()


def test_instructions_register_with_a_decorator_and_join_in_order() -> None:
    seen: list[Any] = []

    def answer(request: Any) -> str:
        seen.append(request.instructions)
        return "ok"

    agent = Agent(
        FunctionModel(answer),
        deps_type=str,
        instructions="Be terse.",
        dynamic_instructions=lambda context: f"User: {context.deps}.",
    )

    @agent.instructions
    def today() -> str:
        return "Today is Thursday."

    @agent.instructions
    async def locale(context: RunContext[str]) -> str | None:
        return None if context.deps == "bob" else "Answer in French."

    assert agent.run_sync("hi", deps="ana").output == "ok"
    assert seen[-1] == ("Be terse.\n\nUser: ana.\n\nToday is Thursday.\n\nAnswer in French.")
    agent.run_sync("hi", deps="bob")
    assert seen[-1] == "Be terse.\n\nUser: bob.\n\nToday is Thursday."
    assert agent.static_instructions == "Be terse."
    assert today() == "Today is Thursday."  # returned unchanged


def test_an_instructions_function_that_returns_no_text_fails_the_run_clearly() -> None:
    agent = Agent(ScriptedModel(["x"]))

    @agent.instructions
    def broken() -> Any:
        return 42

    with pytest.raises(RunError, match="instructions function broken returned int"):
        agent.run_sync("hi")
    with pytest.raises(UsageError, match="takes 2 parameters"):
        agent.instructions(lambda a, b: "x")


def test_capture_run_messages_keeps_a_failed_runs_messages() -> None:
    def answer(request: Any) -> Message | str:
        if not any(m.role is Role.TOOL for m in request.messages):
            return Message(Role.ASSISTANT, (ToolCallPart("c1", "lookup", '{"key": "k"}'),))
        raise RuntimeError("the provider fell over")

    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    agent = Agent(FunctionModel(answer), tools=[lookup])
    with capture_run_messages() as messages, pytest.raises(RunError, match="fell over"):
        agent.run_sync("find k")
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert messages[-1].text == "value of k"
    with capture_run_messages() as later:
        agent.run_sync("again", model=ScriptedModel(["fine"]))
    assert [m.text for m in later] == ["again", "fine"]
    assert len(messages) == 3  # a block's list is its own


def test_override_replaces_the_runs_deps_for_tests() -> None:
    agent = Agent(FunctionModel(lambda request: "ok"), deps_type=str)
    seen: list[str] = []

    @agent.instructions
    def who(context: RunContext[str]) -> str:
        seen.append(context.deps)
        return context.deps

    agent.run_sync("hi", deps="production-db")
    with agent.override(deps="fake-db"):
        agent.run_sync("hi", deps="production-db")  # the code under test is unchanged
        with agent.override(model=ScriptedModel(["x"])):  # an inner override keeps deps
            agent.run_sync("hi", deps="production-db")
    with agent.override(deps=None):  # None is a value deps may have
        agent.run_sync("hi", deps="production-db")
    agent.run_sync("hi", deps="production-db")
    assert seen == ["production-db", "fake-db", "fake-db", None, "production-db"]


def test_a_delta_event_reads_its_text_without_isinstance() -> None:
    texts: list[str] = []

    def on_delta(event: DeltaEvent) -> None:
        if (text := event.text) is not None:
            texts.append(text)

    handler: DeltaHandler = on_delta
    result = Agent(ScriptedModel(["hello there"])).run_stream_sync("hi", on_delta=handler)
    assert "".join(texts) == result.output == "hello there"


@pytest.mark.anyio
async def test_stream_text_gives_the_answer_whole_or_in_pieces() -> None:
    agent = Agent(ScriptedModel(["hello brave new world", "hello brave new world"]))
    async with agent.iter_stream("hi") as stream:
        whole = [text async for text in stream.stream_text()]
    assert whole[-1] == "hello brave new world" and len(whole) > 1
    assert all(b.startswith(a) for a, b in itertools.pairwise(whole))
    assert stream.result.output == "hello brave new world"
    async with agent.iter_stream("hi") as stream:
        pieces = [text async for text in stream.stream_text(delta=True)]
    assert "".join(pieces) == "hello brave new world"


def test_a_run_asks_for_its_own_output_type() -> None:
    seen: list[Any] = []
    agent = Agent(_seen(seen), output_type=str)

    @agent.output_validator
    def shout(output: str) -> str:
        return output.upper()

    assert agent.run_sync("judge", output_type=Verdict).output == Verdict("tool")
    assert [t.name for t in seen[-1].tools] == ["final_result"]
    assert agent.run_sync("x", model=ScriptedModel(["plain"])).output == "PLAIN"  # its own


@pytest.mark.parametrize(
    ("key", "says"),
    [(12345, "got an int"), ("secret", "is str, not bytes"), (b"short", "at least 16")],
)
def test_a_bad_signing_key_is_a_usage_error_saying_what_a_key_is(key: Any, says: str) -> None:
    with pytest.raises(UsageError, match="signing_key must be bytes") as caught:
        Agent(ScriptedModel(["x"]), signing_key=key)
    assert says in str(caught.value)


def test_an_agent_with_a_processor_compacts_once_and_retries_a_request_too_long() -> None:
    """Compact and retry is on for an agent with a history processor (ADR 0141); the
    conformance suite requires DBOS and Temporal to do the same as this."""
    from conformance import SCENARIOS

    scenario = next(s for s in SCENARIOS if s.name == "compact-and-retry")
    events: list[Any] = []
    result = scenario.agent().run_with_history_sync(
        scenario.history, scenario.prompt, on_event=events.append
    )
    assert result.output == "answered from 4 messages"
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("RequestFailed") < kinds.index("CompactionFinished")
    assert kinds.count("RequestFinished") == 1
