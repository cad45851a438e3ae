"""The agent of the durable-run tests, shared by the test process and its workers.

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
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Collection
from pathlib import Path

from golem_core import Message, ModelRequest, Role, ToolCallPart
from golem_shell import Agent, FunctionModel, Model, OpenAIModel, RunContext, Tool

AGENT_NAME = "durable-test"
APPROVAL_AGENT_NAME = "durable-test-approval"
EFFECTS = ("request 1", "tool 1", "request 2", "tool 2", "request 3")
"""The effects of one run, in order: 3 model requests and 2 tool executions."""


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
