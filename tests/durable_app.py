"""The agents and checks of the durable-run tests (DBOS and Temporal), once: shared by the
test processes and their workers.

One tool, ``step(n)``, appends ``"<run id> <n>"`` to a log file before it does anything
else (so the log counts executions, completed or not) and hangs when ``(run id, n)`` is
in ``block`` (so a worker can be killed with the tool in flight). The model is the
loopback server of ``durable_server.py``.

``make_approval_agent`` is an offline agent whose first answer calls ``publish``, a tool
that needs approval (it logs ``"<run id> publish"``), and whose second answer reports
the result: a run that waits for a person across a restart.

``make_models`` are the models the workers register by name (``models=``): the agent's
usual model (``"loopback"``) and another model of the same server (``"changed"``), which a
worker makes its agent's default to show that a recovered run keeps its recorded model.

The in-process agents of the DBOS and the Temporal tests (``test_durable.py``,
``test_temporal.py``) are here too, once: their scripted model functions (``two_tools``,
``deferred``, ``same_ids``, ``judge_or_say``), their tools (``add``, ``delete``,
``lookup``, ``crash``; ``publish`` and ``wipe`` log to a list of the module that made
them) and ``unit_agents()``, which builds the agents by name with fresh counters, so each
test module has its own. ``EFFECTS``/``SCENARIOS``/``effect`` name the kill points of the
fault tests; ``block_kill_points``, ``reached_kill_points`` and
``assert_each_effect_ran_once`` hold the runs there, see them reached and check the counts
after the resume, for both engines. ``importing_without`` is what importing an engine's
public module says when its extra is missing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from golem_core import Message, ModelRequest, Role, ToolCallPart
from golem_shell import Agent, FunctionModel, Model, OpenAIModel, RunContext, Tool, tool

if TYPE_CHECKING:
    from durable_server import DurableModelServer

__all__ = [
    "AGENT_NAME",
    "APPROVAL_AGENT_NAME",
    "EFFECTS",
    "RECORDED_STEPS",
    "SCENARIOS",
    "Calls",
    "UnitAgents",
    "Verdict",
    "add",
    "assert_each_effect_ran_once",
    "block_kill_points",
    "crash",
    "deferred",
    "delete",
    "effect",
    "importing_without",
    "judge_or_say",
    "lookup",
    "make_agent",
    "make_approval_agent",
    "make_models",
    "reached_kill_points",
    "same_ids",
    "tool_counts",
    "turns",
    "two_tools",
    "unit_agents",
    "without_clock",
]

AGENT_NAME = "durable-test"
APPROVAL_AGENT_NAME = "durable-test-approval"
EFFECTS = ("request 1", "tool 1", "request 2", "tool 2", "request 3")
"""The effects of one run, in order: 3 model requests and 2 tool executions."""
SCENARIOS = tuple(range(len(EFFECTS) + 1))
"""Scenario k: killed with effect k+1 in flight (effects 1..k recorded); the last
scenario is killed after its run completed."""


RECORDED_STEPS = ["golem.request", "golem.tool", "golem.request", "golem.tool", "golem.request"]
"""The steps an engine records for one run, in order (the names of ``EFFECTS``)."""


def effect(k: int) -> tuple[str, int]:
    """Effect k+1 of ``EFFECTS`` as ``(kind, n)``: ``("request", 2)``, ``("tool", 1)``..."""
    kind, n = EFFECTS[k].split()
    return kind, int(n)


def block_kill_points(
    server: DurableModelServer, runs: list[tuple[str, str]]
) -> list[tuple[str, int]]:
    """Holds effect k+1 of run k (``(run id, label)``; the last run is not held): a model
    request is blocked at ``server``; a tool is returned, for the worker's ``block``."""
    tools_blocked: list[tuple[str, int]] = []
    for k, (run_id, label) in enumerate(runs[:-1]):
        kind, n = effect(k)
        if kind == "request":
            server.block.add((label, n))
        else:
            tools_blocked.append((run_id, n))
    return tools_blocked


def reached_kill_points(server: DurableModelServer, runs: list[tuple[str, str]], log: Path) -> bool:
    """Whether every effect held by ``block_kill_points`` has begun (is in flight)."""
    started = tool_counts(log)
    for k, (run_id, label) in enumerate(runs[:-1]):
        kind, n = effect(k)
        if kind == "request" and not server.arrived(label, n):
            return False
        if kind == "tool" and started[(run_id, n)] == 0:
            return False
    return True


def assert_each_effect_ran_once(
    server: DurableModelServer, runs: list[tuple[str, str]], log: Path
) -> None:
    """After the kill and the resume: every effect recorded before the kill ran once; the
    one in flight (effect k+1 of run k) ran twice."""
    started = tool_counts(log)
    for k, (run_id, label) in enumerate(runs):
        interrupted = effect(k) if k < len(EFFECTS) else None
        for n in (1, 2, 3):
            expected = 2 if interrupted == ("request", n) else 1
            assert server.counts[(label, n)] == expected, (label, n, server.counts)
        for n in (1, 2):
            expected = 2 if interrupted == ("tool", n) else 1
            assert started[(run_id, n)] == expected, (run_id, n, started)


def make_models(model_url: str) -> dict[str, Model]:
    """The models every process registers by name: ``"loopback"`` (the agent's usual
    model, named ``durable-test``) and ``"changed"`` (``changed-model``), both served by
    the loopback server."""
    return {
        "loopback": OpenAIModel("durable-test", base_url=model_url, api_key="test-key"),
        "changed": OpenAIModel("changed-model", base_url=model_url, api_key="test-key"),
    }


def make_agent(
    model_url: str,
    log: Path,
    block: Collection[tuple[str, int]] = (),
    model: Model | None = None,
) -> Agent[None, str]:
    """The test agent: the loopback model (or ``model``) and the counting ``step`` tool."""

    async def step(context: RunContext[None], n: int) -> str:
        """Do step n of the task.

        Args:
            n: which step.
        """
        with log.open("a") as f:
            f.write(f"{context.run_id} {n}\n")
        if (context.run_id, n) in block:
            await asyncio.sleep(3600)  # the worker is killed meanwhile
        return f"step {n} done"

    if model is None:
        model = OpenAIModel("durable-test", base_url=model_url, api_key="test-key")
    return Agent(model, tools=[Tool.from_function(step)])


def make_approval_agent(log: Path) -> Agent[None, str]:
    """The offline agent that pauses for approval of ``publish`` (see the header)."""

    def answer(request: ModelRequest) -> Message | str:
        results = [m for m in request.messages if m.role is Role.TOOL]
        if not results:
            return Message(Role.ASSISTANT, (ToolCallPart("p1", "publish", '{"text": "hi"}'),))
        return f"published: {results[-1].text}"

    async def publish(context: RunContext[None], text: str) -> str:
        """Publish a text (needs approval).

        Args:
            text: what to publish.
        """
        with log.open("a") as f:
            f.write(f"{context.run_id} publish\n")
        return f"{text!r} is out"

    return Agent(FunctionModel(answer), tools=[Tool.from_function(publish, kind="approval")])


def tool_counts(log: Path) -> Counter[tuple[str, int]]:
    """How many times each ``(run id, n)`` began executing."""
    counts: Counter[tuple[str, int]] = Counter()
    if log.exists():
        for line in log.read_text().splitlines():
            run_id, n = line.rsplit(" ", 1)
            if n.isdigit():
                counts[(run_id, int(n))] += 1
    return counts


# -- the in-process agents of test_durable.py and test_temporal.py -----------------------


def without_clock(messages: tuple[Message, ...]) -> list[Message]:
    """Messages without their clock readings: two runs differ only there."""
    return [attrs.evolve(m, created_at=None) for m in messages]


def turns(request: Any) -> int:
    """How many assistant messages the request holds (the model's answers so far)."""
    return sum(1 for m in request.messages if m.role is Role.ASSISTANT)


class Calls:
    """A model function that counts its calls."""

    def __init__(self, function: Callable[[Any], Message | str]) -> None:
        self.function = function
        self.count = 0

    def __call__(self, request: Any) -> Message | str:
        self.count += 1
        return self.function(request)


def two_tools(request: Any) -> Message | str:
    """Calls ``add`` twice (``c1``, ``c2``), then says the last sum."""
    n = turns(request)
    if n < 2:
        call = ToolCallPart(f"c{n + 1}", "add", json.dumps({"a": n, "b": 10}))
        return Message(Role.ASSISTANT, (call,))
    return f"sum is {request.messages[-1].text}"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@attrs.frozen
class Verdict:
    label: str
    score: int


def _verdict(request: Any) -> Message:
    call = ToolCallPart("v1", "final_result", '{"label": "good", "score": 3}')
    return Message(Role.ASSISTANT, (call,))


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool(external=True)
def lookup(key: str) -> str:
    """Look a key up elsewhere."""
    raise AssertionError("an external tool is never executed by the run")


def deferred(request: Any) -> Message | str:
    """Calls ``delete`` (approval) and ``lookup`` (external), then lists their results."""
    if turns(request) == 0:
        return Message(
            Role.ASSISTANT,
            (
                ToolCallPart("d1", "delete", '{"path": "/tmp/x"}'),
                ToolCallPart("e1", "lookup", '{"key": "k"}'),
            ),
        )
    results = [m.text for m in request.messages if m.role is Role.TOOL]
    return "after: " + " | ".join(results)


def _effect_tools(done: list[str]) -> list[Tool[Any]]:
    """``publish`` and ``wipe``, both needing approval, each appending its name to ``done``."""

    @tool(requires_approval=True)
    def publish() -> str:
        """Publish the draft."""
        done.append("publish")
        return "published"

    @tool(requires_approval=True)
    def wipe() -> str:
        """Wipe everything."""
        done.append("wipe")
        return "wiped"

    return [publish, wipe]


def same_ids(request: Any) -> Message | str:
    """A model that reuses call ids: call_0 publish, then call_0 wipe."""
    n = turns(request)
    if n < 2:
        name = ("publish", "wipe")[n]
        return Message(Role.ASSISTANT, (ToolCallPart("call_0", name, "{}"),))
    return "done"


@tool
def crash() -> str:
    """Crash."""
    raise RuntimeError("boom")


def judge_or_say(request: Any) -> Message | str:
    """Answers a ``Verdict`` when an output type is asked for, else a sentence."""
    if any(t.name == "final_result" for t in request.tools):
        return Message(
            Role.ASSISTANT, (ToolCallPart("v1", "final_result", '{"label": "fine", "score": 2}'),)
        )
    return "from the agent's model"


@attrs.frozen
class UnitAgents:
    """The in-process agents by name, with the counters of one test module."""

    agents: dict[str, Agent[None, Any]]
    counted: Calls
    """The model function of ``"two-tools"``, counting its calls."""
    effects_done: list[str]
    """What the ``publish`` and ``wipe`` of ``"same-ids"`` did, in order."""


def unit_agents() -> UnitAgents:
    """The agents both engines' in-process tests run, by name, with fresh counters."""
    counted = Calls(two_tools)
    effects_done: list[str] = []
    agents: dict[str, Agent[None, Any]] = {
        "two-tools": Agent(FunctionModel(counted), tools=[add]),
        "verdict": Agent(FunctionModel(_verdict), output_type=Verdict),
        "deferred": Agent(FunctionModel(deferred), tools=[delete, lookup]),
        "same-ids": Agent(FunctionModel(same_ids), tools=_effect_tools(effects_done)),
        "model-fails": Agent(FunctionModel(lambda r: 1 / 0)),
        "tool-crashes": Agent(
            FunctionModel(lambda r: Message(Role.ASSISTANT, (ToolCallPart("x", "crash", "{}"),))),
            tools=[crash],
        ),
        "bad-instructions": Agent(
            FunctionModel(lambda r: "hi"), dynamic_instructions=lambda c: 1 / 0
        ),
        "instructed": Agent(
            FunctionModel(lambda r: f"told: {r.instructions}"),
            instructions="be brief",
            dynamic_instructions=lambda c: f"run {c.run_id}",
        ),
    }
    return UnitAgents(agents, counted, effects_done)


def importing_without(package: str, module: str) -> str:
    """What importing ``module`` raises, ``"<type> <message>"``, in a fresh interpreter
    where ``package`` cannot be imported (an extra that is not installed)."""
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        f"try:\n    import {module}\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
