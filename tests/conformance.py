"""The conformance suite of the one driver: the same scenarios on every runtime.

A scenario is an agent (model function, tools, output type), a prompt, and the answers a
person gives when the run pauses. A runtime runs it and reports an ``Outcome``: the
output or the failure, the conversation (or the partial), the counts, and the kinds of
lifecycle events the run reported. ``tests/test_conformance.py`` runs every scenario on
every runtime and requires the outcomes to be equal to the plain ``Agent``'s.

What may differ between runtimes, and is left out of ``Outcome``: clock readings and
run ids on messages (a plain run resumed after a pause is a second run; a durable run
goes on in the same run), and the events that mark that boundary (``RunPaused``, and the
second ``RunStarted``).

To add a runtime (Temporal, say): write a ``Runtime`` (``name``, ``async run(scenario)``)
that builds the scenario's agent with ``scenario.agent()``, runs it with the scenario's
run keywords (``scenario.options`` and ``scenario.run_output_type``; a durable engine
registers ``scenario.models()`` and ``scenario.output_types()``), answers its pauses
with ``scenario.answers`` and returns ``outcome_of(...)``, then add it to the
parametrization in ``test_conformance.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from golem_core import (
    DeferredAnswer,
    Message,
    ModelErrorKind,
    ModelSettings,
    Role,
    ToolCallPart,
    Usage,
)
from golem_shell import (
    Agent,
    Approved,
    Denied,
    FunctionModel,
    Model,
    ModelError,
    ModelRetry,
    RunContext,
    RunError,
    RunStarted,
    Steering,
    Tool,
    UsageLimits,
    summarize_history,
    tool,
)

__all__ = ["SCENARIOS", "Outcome", "Runtime", "Scenario", "outcome_of", "plain"]


@attrs.frozen
class Verdict:
    label: str
    score: int


def _turns(request: Any) -> int:
    return sum(1 for m in request.messages if m.role is Role.ASSISTANT)


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCallPart:
    return ToolCallPart(call_id, name, json.dumps(arguments))


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def crash() -> str:
    """Crash."""
    raise RuntimeError("boom")


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _text(request: Any) -> str:
    return "hello"


def _sequential(request: Any) -> Message | str:
    n = _turns(request)
    if n < 2:
        return Message(Role.ASSISTANT, (_call(f"c{n + 1}", "add", {"a": n, "b": 10}),))
    return f"sum is {request.messages[-1].text}"


def _parallel(request: Any) -> Message | str:
    if _turns(request) == 0:
        return Message(
            Role.ASSISTANT,
            (_call("p1", "add", {"a": 1, "b": 2}), _call("p2", "add", {"a": 3, "b": 4})),
        )
    return " + ".join(m.text for m in request.messages if m.role is Role.TOOL)


def _unknown_then_text(request: Any) -> Message | str:
    if _turns(request) == 0:
        return Message(Role.ASSISTANT, (_call("u1", "nope", {}),))
    return "recovered"


def _structured(request: Any) -> Message:
    return Message(Role.ASSISTANT, (_call("v1", "final_result", {"label": "good", "score": 3}),))


def _crashing(request: Any) -> Message:
    return Message(Role.ASSISTANT, (_call("x1", "crash", {}),))


def _failing(request: Any) -> str:
    raise ZeroDivisionError("the model function broke")


def _drafts(request: Any) -> str:
    return "final" if _turns(request) else "draft"


async def _only_final(output: str) -> str:
    """An async output validator: a draft gets a correction round."""
    if output != "final":
        raise ModelRetry("send the final version")
    return output.upper()


def _too_long_until_summarized(request: Any) -> Message | str:
    if len(request.messages) > 4:
        raise ModelError(
            ModelErrorKind.CONTEXT_TOO_LONG,
            "prompt is too long: 9000 tokens > 8000 maximum",
            status=400,
            provider="test",
        )
    return f"answered from {len(request.messages)} messages"


def _summarizer() -> Any:
    return summarize_history(
        FunctionModel(lambda request: "they asked four questions"),
        keep_last_turns=1,
        max_tokens=100_000,  # not at the start: only when the provider refuses
    )


_LONG = tuple(
    m for i in range(4) for m in (Message.user(f"question {i}"), Message.assistant(f"answer {i}"))
)


class Gate:
    """Holds the ``hold`` tool until the runtime has sent its steering message."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()


GATES: dict[str, Gate] = {}


async def hold() -> str:
    """Take a while."""
    gate = GATES["steered"]
    gate.started.set()
    await gate.release.wait()
    return "held"


def _steered(request: Any) -> Message | str:
    if not any(m.role is Role.TOOL for m in request.messages):
        return Message(Role.ASSISTANT, (_call("h1", "hold", {}),))
    users = [m.text for m in request.messages if m.role is Role.USER]
    return f"noted: {users[-1]}"


async def steer_while_held(scenario: Scenario, send: Callable[[str], Awaitable[None]]) -> None:
    """Send the scenario's steering message once its tool holds, then release the tool."""
    if scenario.steer is None:
        return
    gate = GATES[scenario.name]
    await asyncio.wait_for(gate.started.wait(), 60)
    await send(scenario.steer)
    gate.release.set()


def _approval(request: Any) -> Message | str:
    if _turns(request) == 0:
        return Message(Role.ASSISTANT, (_call("d1", "delete", {"path": "/tmp/x"}),))
    return "after: " + " | ".join(m.text for m in request.messages if m.role is Role.TOOL)


def _temperature(request: Any) -> str:
    return f"temperature {request.settings.temperature}"


RUN_MODEL = FunctionModel(lambda request: "from the run's own model")
"""The model a run names with ``model=`` (a durable engine registers it)."""


async def whoami(context: RunContext[Any]) -> str:
    """Say who the run is for."""
    return f"for {context.deps['user']}"


def _asks_whoami(request: Any) -> Message | str:
    if _turns(request) == 0:
        return Message(Role.ASSISTANT, (_call("w1", "whoami", {}),))
    return request.messages[-1].text


@attrs.frozen
class Scenario:
    """One conformance scenario."""

    name: str
    model: Callable[[Any], Message | str]
    tools: tuple[Any, ...] = ()
    output_type: Any = str
    prompt: str = "go"
    answers: tuple[Mapping[str, DeferredAnswer], ...] = ()
    """The answers to each pause of the run, in order."""
    validator: Callable[..., Any] | None = None
    history: tuple[Message, ...] = ()
    """The conversation the run continues."""
    processor: Callable[[], Any] | None = None
    """Makes the agent's history processor."""
    steer: str | None = None
    """A message the runtime sends while the run's tool holds (steering)."""
    options: Mapping[str, Any] = attrs.field(factory=dict)
    """The run keywords the run is started with (``model``, ``settings``, ...)."""
    run_output_type: Any = None
    """The run's own ``output_type=`` (``None``: the agent's)."""

    def models(self) -> dict[str, Model]:
        """The models a durable engine registers for the run's ``model=``."""
        model = self.options.get("model")
        return {"run-model": model} if isinstance(model, Model) else {}

    def output_types(self) -> dict[str, Any]:
        """The output types a durable engine registers for the run's ``output_type=``."""
        return {} if self.run_output_type is None else {"run-output": self.run_output_type}

    def agent(self) -> Agent[Any, Any]:
        agent = Agent(
            FunctionModel(self.model),
            tools=list(self.tools),
            output_type=self.output_type,
            name=f"conformance-{self.name}",
            history_processor=None if self.processor is None else self.processor(),
        )
        if self.validator is not None:
            agent.output_validator(self.validator)
        return agent


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("text", _text),
    Scenario("sequential-tools", _sequential, (add,)),
    Scenario("parallel-tools", _parallel, (add,)),
    Scenario("unknown-tool", _unknown_then_text, (add,)),
    Scenario("structured", _structured, output_type=Verdict),
    Scenario("tool-crash", _crashing, (crash,)),
    Scenario("model-fails", _failing),
    Scenario("output-validator", _drafts, validator=_only_final),
    Scenario("approved", _approval, (delete,), answers=({"d1": Approved()},)),
    Scenario("denied", _approval, (delete,), answers=({"d1": Denied("not today")},)),
    Scenario("steered", _steered, (hold,), steer="actually, use the EU account"),
    Scenario(
        "compact-and-retry",
        _too_long_until_summarized,
        history=_LONG,
        processor=_summarizer,
    ),
    # the run keywords (issue 45 item 2): each one changes the run, on every runtime
    Scenario("model-keyword", _text, options={"model": RUN_MODEL}),
    Scenario(
        "settings-keyword", _temperature, options={"settings": ModelSettings(temperature=0.25)}
    ),
    Scenario(
        "usage-limits-keyword",
        _sequential,
        (add,),
        options={"usage_limits": UsageLimits(request_limit=2)},
    ),
    Scenario("output-type-keyword", _structured, run_output_type=Verdict),
    Scenario(
        "deps-keyword",
        _asks_whoami,
        (Tool.from_function(whoami),),
        options={"deps": {"user": "ada"}},
    ),
)


@attrs.frozen
class Outcome:
    """What a runtime must agree on."""

    output: Any
    failure: tuple[str, str] | None
    messages: tuple[Message, ...]
    requests: int
    tool_executions: int
    usage: Usage
    events: tuple[str, ...]


def _plain_message(m: Message) -> Message:
    return attrs.evolve(m, created_at=None, run_id=None, conversation_id=None)


def _event_kinds(events: Sequence[Any]) -> tuple[str, ...]:
    kinds: list[str] = []
    for e in events:
        name = type(e).__name__
        if name == "RunPaused" or (isinstance(e, RunStarted) and e.resumed):
            continue  # the boundary of a plain resume: a durable run waits in one run
        if name == "DeltaEvent":
            continue
        kinds.append(name)
    return tuple(kinds)


def outcome_of(result: Any, error: RunError | None, events: Sequence[Any]) -> Outcome:
    """The ``Outcome`` of a run that returned ``result`` or raised ``error``."""
    if error is not None:
        partial = error.partial
        return Outcome(
            output=None,
            failure=(error.stage.value, error.message),
            messages=() if partial is None else tuple(_plain_message(m) for m in partial.messages),
            requests=0 if partial is None else partial.requests,
            tool_executions=0 if partial is None else partial.tool_executions,
            usage=Usage() if partial is None else partial.usage,
            events=_event_kinds(events),
        )
    return Outcome(
        output=result.output,
        failure=None,
        messages=tuple(_plain_message(m) for m in result.messages),
        requests=result.requests,
        tool_executions=result.tool_executions,
        usage=result.usage,
        events=_event_kinds(events),
    )


class Runtime(Protocol):
    name: str

    async def run(self, scenario: Scenario) -> Outcome: ...


class PlainRuntime:
    """``Agent.run``, and ``run_with_deferred_results`` for each pause."""

    name = "plain"

    async def run(self, scenario: Scenario) -> Outcome:
        agent = scenario.agent()
        events: list[Any] = []
        answers = list(scenario.answers)
        GATES[scenario.name] = Gate()
        steering = Steering()

        async def send(text: str) -> None:
            steering.send(text)

        try:
            running = asyncio.ensure_future(
                agent.run_with_history(
                    scenario.history,
                    scenario.prompt,
                    on_event=events.append,
                    conversation_id="conformance",
                    steering=steering,
                    output_type=scenario.run_output_type,
                    **scenario.options,
                )
            )
            await steer_while_held(scenario, send)
            result = await running
            while result.paused:
                result = await agent.run_with_deferred_results(
                    result.messages, answers.pop(0), on_event=events.append
                )
        except RunError as e:
            return outcome_of(None, e, events)
        # a plain resume is a second run: its requests and tools count from zero; the
        # conversation's totals are what a durable run reports for its one run
        return attrs.evolve(
            outcome_of(result, None, events),
            requests=sum(1 for e in events if type(e).__name__ == "RequestFinished"),
            tool_executions=sum(
                1 for e in events if type(e).__name__ == "ToolFinished" and e.outcome != "retry"
            ),
            usage=sum(
                (e.usage for e in events if type(e).__name__ == "RequestFinished" and e.usage),
                Usage(),
            )
            + sum(  # a summarizing request's usage counts in the run's (ADR 0140)
                (
                    e.record.usage
                    for e in events
                    if type(e).__name__ == "CompactionFinished" and e.record and e.record.usage
                ),
                Usage(),
            ),
        )


plain = PlainRuntime()
