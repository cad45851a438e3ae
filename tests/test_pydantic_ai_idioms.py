"""First contact, round 3 (issue 26): an installable name, how a tool fails, a truthful
README and examples, and what a pydantic-ai user reaches for."""

from __future__ import annotations

import importlib
import os
import re
import select
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import attrs
import pytest

from golem_core import Message, ModelRequest, ModelSettings, ToolCallPart, Usage
from golem_shell import (
    Agent,
    DeltaEvent,
    FunctionModel,
    ModelRetry,
    RunContext,
    RunError,
    ScriptedModel,
    Stage,
    ToolFailure,
    UsageError,
    UsageLimits,
    infer_model,
    tool,
)

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def calls(*parts: ToolCallPart) -> Message:
    return Message.assistant(tool_calls=parts)


# -- 1. the name ---------------------------------------------------------------------------


def _install_lines() -> list[tuple[str, str]]:
    """Every ``pip install ...`` of the README, docs/ and the library's own messages."""
    # ADRs are records of their time: they quote what was
    docs = [p for p in (ROOT / "docs").rglob("*.md") if "adr" not in p.parts]
    files = [ROOT / "README.md", *docs]
    files += [*(ROOT / "golem_core").rglob("*.py"), *(ROOT / "golem_shell").rglob("*.py")]
    found = []
    for path in files:
        for m in re.finditer(r"pip install[^`\n]*", path.read_text(encoding="utf-8")):
            found.append((str(path.relative_to(ROOT)), m.group(0)))
    return found


def test_the_distribution_is_not_named_like_an_unrelated_pypi_project() -> None:
    name = PYPROJECT["project"]["name"]
    assert name == "golem-agents"
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(d.startswith(f"{name}[") for d in extras["dev"]), "dev refers to itself"


def test_every_install_line_names_this_distribution_or_the_clone_and_a_real_extra() -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    lines = _install_lines()
    assert len(lines) >= 5
    for where, line in lines:
        assert "'golem[" not in line and " golem[" not in line, f"{where}: {line}"
        for named in re.findall(r"(?:golem-agents|\.)\[([a-z,\-]+)\]", line):
            for extra in named.split(","):
                assert extra in extras, f"{where}: {line}: no extra {extra!r}"


def test_the_readme_test_command_is_exactly_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python -m pip install -e '.[test]' && python -m pytest"
    assert f"```sh\n{command}\n```" in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci
    # what it installs is named, not sized (a size typed by hand is a figure no command wrote)
    assert "installs the provider SDKs" in readme and "takes minutes" in readme
    assert "Python 3.11 or newer" in readme


# -- 3. how a tool fails ---------------------------------------------------------------------


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


# -- 5. what the README, the examples and the reprs say ------------------------------------------


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


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("opnai:gpt-4o", "openai:gpt-4o"),
        ("antropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("gpt-4o-mini", "openai:gpt-4o-mini"),
        ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("gemini-2.5-flash", "google:gemini-2.5-flash"),
        ("openai/gpt-4o", "openai:gpt-4o"),
        ("claude:claude-3-5-haiku", "anthropic:claude-3-5-haiku"),
    ],
)
def test_a_mistyped_model_string_says_what_was_meant(typed: str, meant: str) -> None:
    with pytest.raises(UsageError, match=re.escape(f"did you mean {meant!r}?")):
        infer_model(typed)


def test_an_unknown_model_string_without_a_likely_meaning_lists_the_prefixes() -> None:
    with pytest.raises(UsageError) as caught:
        infer_model("mistral:mistral-large")
    assert "did you mean" not in str(caught.value) and "'openai:'" in str(caught.value)


class _Child:
    """What a child process writes, read up to markers in order."""

    def __init__(self, fd: int, deadline: float) -> None:
        self.fd, self.deadline, self.seen, self.at = fd, deadline, b"", 0

    def expect(self, marker: bytes) -> None:
        while (found := self.seen.find(marker, self.at)) < 0:
            left = self.deadline - time.monotonic()
            assert left > 0, f"no {marker!r} in {self.seen!r}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 4096)
                assert chunk, f"the program ended before {marker!r}: {self.seen!r}"
                self.seen += chunk
        self.at = found + len(marker)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_the_conversation_example_prompts_and_exits_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "conversation.py"), "--history", "c.json"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        deadline = time.monotonic() + 120
        child = _Child(proc.stdout.fileno(), deadline)
        child.expect(b"you: ")
        proc.stdin.write(b"hello\n")
        proc.stdin.flush()
        child.expect(b"assistant:")
        child.expect(b"you: ")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err
    assert b"message 1 from you" in child.seen + rest
    assert (tmp_path / "c.json").exists()


def test_the_approval_example_counts_in_words(tmp_path: Path) -> None:
    def step(name: str) -> str:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "approval.py"), name, "--state", "r.json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return proc.stdout

    step("start")
    step("forge")
    assert "sanitize: 1 system prompt dropped, 1 fabricated call closed" in step("decide")


# -- 6. the docs site ----------------------------------------------------------------------------


def _site_hooks() -> Any:
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        return importlib.import_module("site_hooks")
    finally:
        sys.path.remove(str(ROOT / "docs"))


def test_the_api_reference_has_a_page_for_every_public_module() -> None:
    hooks = _site_hooks()
    modules = dict(hooks.public_modules(ROOT))
    expected = {"golem_core", "golem_core.testing", "golem_shell", "golem_shell.mcp"}
    assert expected <= set(modules)
    for name, summary in modules.items():
        module = importlib.import_module(name)
        assert module.__all__ and summary, f"{name}: no __all__ or no docstring"
    assert not any("._" in name or name.startswith("_") for name in modules)
    # every name of __all__, documented or not, appears on its module's page
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "show_if_no_docstring: true" in config and "filters: public" in config


def test_the_docs_build_in_ci_with_warnings_as_errors() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m mkdocs build --strict" in ci
    assert "docs" in PYPROJECT["project"]["optional-dependencies"]


def test_every_guide_include_names_a_readme_section() -> None:
    hooks = _site_hooks()
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    includes = [
        m.group(1)
        for page in (ROOT / "docs").rglob("*.md")
        for m in hooks._INCLUDE.finditer(page.read_text(encoding="utf-8"))
    ]
    assert len(includes) >= 10
    for heading in includes:
        section = hooks._section(readme, heading)
        assert section[0] == heading and len(section) > 1
    with pytest.raises(ValueError, match="no section"):
        hooks._section(readme, "## Not a section")


def test_the_testing_guide_runs_as_written(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "guides" / "testing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) == 4
    for k, block in enumerate(blocks):
        script = tmp_path / f"guide_{k}.py"
        script.write_text(block, encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr


async def test_an_exception_in_on_delta_is_reported_as_the_handlers() -> None:
    def handler(event: DeltaEvent) -> None:
        raise RuntimeError("ui closed")

    with pytest.raises(RunError) as caught:
        await Agent(ScriptedModel(["hello there"])).run_stream("x", on_delta=handler)
    message = str(caught.value)
    assert "the on_delta handler raised RuntimeError: ui closed" in message
    assert "model request raised" not in message
    assert isinstance(caught.value.cause, RuntimeError)


# -- 2-4. the typing cases run as written ----------------------------------------------------------


@pytest.mark.parametrize(
    "case", sorted(p.name for p in (ROOT / "tests" / "typing_cases").glob("*.py"))
)
def test_the_typing_cases_run_as_written(case: str, tmp_path: Path) -> None:
    script = ROOT / "tests" / "typing_cases" / case
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- 4. what a pydantic-ai user reaches for ---------------------------------------------------


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
