"""What a pydantic-ai user reaches for (first contact, round 3; issue 26): tools registered
with decorators on the agent, output validators that reject with a message, ``override``
for code under test, a run's own model settings and limits, MCP toolsets from the sync
twins."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from golem_core import Message, ModelRequest, ModelSettings, ToolCallPart, Usage
from golem_shell import (
    Agent,
    FunctionModel,
    ModelRetry,
    RunContext,
    RunError,
    ScriptedModel,
    Stage,
    Tool,
    UsageError,
    UsageLimits,
)

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]


@attrs.frozen
class Trip:
    city: str
    days: int


def calls(*parts: ToolCallPart) -> Message:
    return Message.assistant(tool_calls=parts)


def _answers(text: str) -> FunctionModel:
    return FunctionModel(lambda request: text)


async def test_tools_register_with_decorators_on_the_agent() -> None:
    model = ScriptedModel(
        [
            calls(
                ToolCallPart("c1", "greet", '{"name": "Ada"}'),
                ToolCallPart("c2", "add", '{"a": 2, "b": 3}'),
            ),
            "done",
        ]
    )
    agent = Agent(model, deps_type=str)

    @agent.tool
    def greet(context: RunContext[str], name: str) -> str:
        """Greet someone."""
        return f"{context.deps} {name}"

    @agent.tool_plain(max_retries=1)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert add(1, 2) == 3  # the function itself is returned, still callable
    assert sorted(agent.tools) == ["add", "greet"] and agent.tools["add"].max_retries == 1
    result = await agent.run("go", deps="Hello")
    texts = {m.tool_call_id: m.text for m in result.messages if m.tool_call_id}
    assert texts == {"c1": "Hello Ada", "c2": "5"}


def test_a_decorator_of_the_wrong_kind_says_which_to_use() -> None:
    agent = Agent(ScriptedModel(["x"]))

    def plain(a: int) -> int:
        return a

    def with_context(context: RunContext[None], a: int) -> int:
        return a

    with pytest.raises(UsageError, match=r"take a RunContext first; use @agent.tool_plain"):
        agent.tool(plain)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"take no RunContext; use @agent.tool"):
        agent.tool_plain(with_context)
    agent.tool_plain(plain)
    with pytest.raises(UsageError, match="two tools are named 'plain'"):
        agent.tool_plain(plain)


async def test_an_output_validator_rejects_with_a_message_and_the_model_corrects() -> None:
    model = ScriptedModel(["Paris", "PARIS"])
    agent = Agent(model)
    seen: list[str] = []

    @agent.output_validator
    def shout(output: str) -> str:
        seen.append(output)
        if not output.isupper():
            raise ModelRetry("answer in capitals")
        return output + "!"

    result = await agent.run("Capital of France?")
    assert result.output == "PARIS!" and seen == ["Paris", "PARIS"]
    correction = model.requests[1].messages[-1]
    assert "answer in capitals" in correction.text


async def test_an_output_validator_that_keeps_rejecting_fails_the_run_at_output() -> None:
    agent = Agent(ScriptedModel(["a", "b", "c", "d"]), output_retries=1)

    @agent.output_validator
    def never(context: RunContext[None], output: str) -> str:
        raise ModelRetry(f"not {output} (run {context.run_id[:4]})")

    with pytest.raises(RunError) as caught:
        await agent.run("x")
    assert caught.value.stage is Stage.OUTPUT and caught.value.partial is not None


def test_output_validators_take_one_or_two_parameters_and_may_be_async() -> None:
    agent = Agent(ScriptedModel(["x", "ok"]))

    @agent.output_validator
    async def later(output: str) -> str:
        if output != "ok":
            raise ModelRetry("say ok")
        return output + "!"

    def three(a: Any, b: Any, c: Any) -> str:
        return ""

    assert agent.run_sync("go").output == "ok!"
    with pytest.raises(UsageError, match="takes 3 parameters"):
        agent.output_validator(three)  # type: ignore[arg-type]


def test_override_swaps_the_model_for_code_under_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent")
    agent = Agent("openai:gpt-4o-mini", name="support")

    def code_under_test() -> str:
        return agent.run_sync("hi").output

    with agent.override(model=_answers("from the test")):
        assert code_under_test() == "from the test"
        with agent.override(model=_answers("inner")):
            assert code_under_test() == "inner"
        # the override wins over a run's own model=
        assert agent.run_sync("hi", model=_answers("ignored")).output == "from the test"
    assert agent.model.name == "openai:gpt-4o-mini"  # the override is undone


async def test_a_run_takes_its_own_model_settings_and_limits() -> None:
    default = ScriptedModel(["never"])
    agent = Agent(default, settings=ModelSettings(temperature=0.5, max_tokens=100))
    other = ScriptedModel(["from the run's model"])
    result = await agent.run("x", model=other, settings=ModelSettings(temperature=0.0))
    assert result.output == "from the run's model" and default.requests == []
    sent = other.requests[0].settings
    assert (sent.temperature, sent.max_tokens) == (0.0, 100)  # merged field by field
    assert agent.model is default  # the run's model was for that run only


async def test_a_request_limit_per_run_fails_at_stage_limit_with_the_partial() -> None:
    looping = ScriptedModel(
        [calls(ToolCallPart(f"c{i}", "add", '{"a":1,"b":1}')) for i in range(5)]
    )
    agent = Agent(looping)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(RunError) as caught:
        await agent.run("x", usage_limits=UsageLimits(request_limit=2))
    assert caught.value.stage is Stage.LIMIT
    assert caught.value.partial is not None and caught.value.partial.requests == 2


async def test_a_token_limit_per_run_stops_before_the_next_request_with_the_partial() -> None:
    def expensive(request: ModelRequest) -> Message:
        turn = Message.assistant(
            tool_calls=[ToolCallPart(f"c{len(request.messages)}", "add", '{"a":1,"b":2}')]
        )
        return attrs.evolve(turn, usage=Usage(input_tokens=600, output_tokens=100))

    agent = Agent(FunctionModel(expensive))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(RunError) as caught:
        await agent.run("x", usage_limits=UsageLimits(total_tokens_limit=1000))
    error = caught.value
    assert error.stage is Stage.LIMIT
    assert "has used 1400 total tokens, its limit is 1000" in str(error)
    assert error.partial is not None and error.partial.requests == 2
    assert error.partial.usage.input_tokens == 1200  # the answer that crossed is kept
    with pytest.raises(UsageError, match="positive int"):
        UsageLimits(total_tokens_limit=0)


def test_mcp_toolsets_work_from_the_sync_twins() -> None:
    from golem_shell.mcp import MCPServerStdio

    def model(request: ModelRequest) -> Message | str:
        if len(request.messages) == 1:
            return Message.assistant(tool_calls=[ToolCallPart("c1", "add", '{"a": 2, "b": 3}')])
        return f"the server says {request.messages[-1].text}"

    server = MCPServerStdio(
        sys.executable,
        [str(ROOT / "tests" / "mcp_servers" / "tools_server.py"), "stdio"],
        timeout=30,
    )
    agent = Agent(FunctionModel(model), toolsets=[server])
    with agent:  # connects in this thread's runner: every run_sync uses the connection
        first = agent.run_sync("What is 2 + 3?")
        again = agent.run_sync("And again?")
    assert first.output == 'the server says {"result":5}'
    assert again.output == first.output


# -- what a pydantic-ai user porting an app still tripped on (issue 49 item 9) --------------


async def test_a_function_model_written_pydantic_ais_way_takes_messages_and_info() -> None:
    """``FunctionModel(lambda messages, info: ...)`` failed with a bare ``TypeError``
    (missing positional argument 'info'); golem passes the messages and the request."""
    seen: list[Any] = []

    def reply(messages: tuple[Message, ...], info: ModelRequest) -> str:
        seen.append((messages, info))
        return f"{len(messages)} message(s), tools: {[t.name for t in info.tools]}"

    agent = Agent(FunctionModel(reply))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert (await agent.run("hi")).output == "1 message(s), tools: ['add']"
    ((messages, info),) = seen
    assert messages == info.messages and isinstance(info, ModelRequest)

    async def stream(messages: tuple[Message, ...], info: ModelRequest) -> Any:
        yield f"streamed after {messages[-1].text}"

    async with Agent(FunctionModel(stream_function=stream)).iter_stream("hello") as run:
        async for _ in run:
            pass
    assert run.result.output == "streamed after hello"


def test_a_function_model_of_another_shape_is_refused_saying_both_shapes() -> None:
    with pytest.raises(TypeError) as caught:
        FunctionModel(lambda messages, info, extra: "x")
    assert "function(request: ModelRequest)" in str(caught.value)
    assert "function(messages, request)" in str(caught.value)
    model = FunctionModel(lambda request: {"parts": []})  # a ModelResponse-like return
    with pytest.raises(RunError) as failed:
        Agent(model).run_sync("hi")
    assert isinstance(failed.value.__cause__, TypeError)
    assert "returns a golem_core Message (Message.assistant(...)) or a str" in str(failed.value)


async def test_a_tool_out_of_retries_says_what_it_said_and_chains_its_model_retry() -> None:
    """The error blamed the model's arguments, dropped the tool's own message and had no
    ``__cause__``."""
    agent = Agent(ScriptedModel([calls(ToolCallPart(f"c{i}", "flaky", "{}")) for i in range(3)]))

    @agent.tool_plain(max_retries=1)
    def flaky() -> str:
        """Never works."""
        raise ModelRetry("the database is locked, try again later")

    with pytest.raises(RunError) as caught:
        await agent.run("go")
    error = caught.value
    assert error.stage is Stage.TOOL
    assert "the database is locked, try again later" in str(error)
    assert "arguments" not in str(error) and "(1 retries)" in str(error)
    assert isinstance(error.__cause__, ModelRetry) and error.cause is error.__cause__
    assert error.__cause__.message == "the database is locked, try again later"


async def test_a_tool_out_of_retries_on_bad_arguments_says_why_they_were_refused() -> None:
    agent = Agent(
        ScriptedModel([calls(ToolCallPart(f"c{i}", "add", '{"a": "x"}')) for i in range(3)])
    )

    @agent.tool_plain(max_retries=1)
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(RunError) as caught:
        await agent.run("go")
    assert "missing required argument 'b'" in str(caught.value)
    assert caught.value.__cause__ is not None


async def test_offline_models_report_an_estimated_usage_so_limits_fire() -> None:
    """``TestModel`` and ``FunctionModel`` reported zero usage: token and cost limits never
    fired offline. They estimate it as pydantic-ai's test models do."""
    from golem_shell import TestModel
    from golem_shell.models.function import estimate_usage

    result = await Agent(FunctionModel(lambda request: "four words of answer")).run("two words")
    assert result.usage.input_tokens == 50 + 2 and result.usage.output_tokens == 4
    request = ModelRequest((Message.user("a, b. c"),), instructions="Be terse.")
    assert estimate_usage(request, Message.assistant("ok")) == Usage(
        50 + 3 + 3, 1
    )  # 'terse.' counts 2, as there
    call = Message.assistant(tool_calls=[ToolCallPart("c", "t", '{"city": "Oslo"}')])
    assert estimate_usage(request, call).output_tokens == 1 + 4  # {, city, Oslo, }
    reported = attrs.evolve(Message.assistant("x"), usage=Usage(7, 8))
    assert (await Agent(FunctionModel(lambda request: reported)).run("hi")).usage == Usage(7, 8)

    agent = Agent(TestModel())

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert (await agent.run("hi")).usage.input_tokens > 100  # two requests, 50 each at least
    with pytest.raises(RunError) as caught:
        await agent.run("hi", usage_limits=UsageLimits(total_tokens_limit=60))
    assert caught.value.stage is Stage.LIMIT
    from golem_core import Price

    limits = UsageLimits(cost_limit=0.0001, price=Price(input=1.0, output=1.0))
    with pytest.raises(RunError) as caught:
        await agent.run("hi", usage_limits=limits)
    assert caught.value.stage is Stage.LIMIT and "cost" in str(caught.value)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Agent(_answers("x"), retries=3), "max_retries= on each tool"),
        (lambda: Agent(_answers("x"), defer_model_check=True), "drop defer_model_check="),
        (lambda: Agent(_answers("x")).tool_plain(retries=2), "max_retries="),
        (lambda: Agent(_answers("x")).tool(retries=2), "max_retries="),
        (lambda: __import__("golem_shell").tool(retries=2), "max_retries="),
        (lambda: Agent(_answers("x"), system_prompt="be terse"), "instructions="),
        (lambda: Agent(_answers("x"), instrucions="be terse"), "did you mean instructions=?"),
        (lambda: Agent(_answers("x")).run_sync("hi", message_history=[]), "run_with_history"),
    ],
    ids=["Agent-retries", "defer_model_check", "tool_plain-retries", "tool-retries",
         "standalone-tool-retries", "system_prompt", "a-typo", "message_history"],
)  # fmt: skip
def test_a_pydantic_ai_keyword_is_refused_naming_golems_equivalent(make: Any, says: str) -> None:
    """``tool_plain(retries=2)``, ``Agent(retries=3)``, ``defer_model_check=True`` failed
    with Python's bare "unexpected keyword argument"."""
    with pytest.raises(TypeError) as caught:
        make()
    assert "unexpected keyword argument" in str(caught.value)
    assert says in str(caught.value)


async def test_iter_stream_takes_a_runs_own_output_type() -> None:
    from golem_shell import TestModel

    agent = Agent(TestModel(output={"city": "Oslo", "days": 3}))
    seen = []
    async with agent.iter_stream("plan", output_type=Trip) as stream:
        async for value in stream.stream_output():
            seen.append(value)
    assert stream.result.output == Trip("Oslo", 3) and seen[-1] == Trip("Oslo", 3)
    async with agent.iter_stream("plan") as plain:  # the agent's own type: str
        async for _ in plain:
            pass
    assert isinstance(plain.result.output, str)


async def test_override_takes_tools_and_instructions() -> None:
    """pydantic-ai's ``override`` takes ``tools=`` and ``instructions=``; golem's took
    neither."""
    model = ScriptedModel(
        [calls(ToolCallPart("c1", "lookup", '{"q": "x"}')), "done"] * 2 + ["after"]
    )
    agent = Agent(model, instructions="the real instructions")

    @agent.instructions
    def dynamic(context: RunContext[None]) -> str:
        return "dynamic ones"

    @agent.tool_plain
    def lookup(q: str) -> str:
        """The real lookup."""
        return "from the real database"

    def fake_lookup(q: str) -> str:
        """A fake lookup."""
        return "from the fake"

    with agent.override(tools=[Tool.from_function(fake_lookup, name="lookup")]):
        result = await agent.run("go")
    assert next(m for m in result.messages if m.tool_call_id == "c1").text == "from the fake"
    with agent.override(instructions="the test's instructions"):
        await agent.run("go")
    assert model.requests[-2].instructions == "the test's instructions"
    await agent.run("go")  # undone on leaving the block
    assert model.requests[-1].instructions == "the real instructions\n\ndynamic ones"
    assert agent.tools["lookup"].function is lookup
    refused = agent.override(instructions=3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="instructions must be a string"):
        refused.__enter__()


def test_the_pydantic_ai_guide_shows_what_pydantic_ai_takes_and_what_golem_lacks() -> None:
    """Its pydantic-ai column showed ``history_processors=[...]`` (a ``TypeError`` in
    pydantic-ai 2), called ``override`` "the same", and did not say what ``iter_stream``
    lacks (issue 49 item 9)."""
    guide = (ROOT / "docs" / "guides" / "from-pydantic-ai.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0]: line for line in guide.splitlines() if line.startswith("| `")}
    assert not any(key.startswith("| `history_processors=") for key in rows)
    assert "capabilities=[ProcessHistory(fn)]" in guide
    override = next(line for key, line in rows.items() if "agent.override(" in key)
    assert "the same" not in override and "tools=" in override and "instructions=" in override
    stream = next(line for key, line in rows.items() if "run_stream" in key)
    assert "output_type=" in stream and "debounce_by=" in stream and "no " in stream
    assert "defer_model_check" in guide and "max_retries" in guide
    assert "deps_type" in guide.split("## What golem does not have (yet)")[1]
