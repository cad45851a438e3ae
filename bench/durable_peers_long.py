"""The long runs of ``python -m bench.durable_peers --long``: what its children run.

Owns pydantic-ai's side of the long runs (issue 34; ``bench/durable_peers.py``'s docstring
says what is measured): its scripted agent and limits, the run without durability of each
library (``plain_long``), pydantic-ai's ``DBOSAgent`` run (``pai_long_dbos``) and its
Temporal runs (``pai_long_temporal``: ``TemporalAgent``, or with ``continued`` the
``TemporalDurability`` capability continuing as new, the variant named ``CONTINUED``),
their workflows, the reading of a Temporal event history (payload sizes, bytes so far,
the exponent of its growth) and ``diagnose``, what the server says of a run that gave no
figures. golem's durable long runs are ``bench/durable_children.py``'s.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

__all__ = [
    "CONTINUED",
    "PAI_LONG_NAME",
    "db_bytes",
    "diagnose",
    "pai_long_dbos",
    "pai_long_temporal",
    "plain_long",
]

CONTINUED = "TemporalDurability, continue_as_new"
"""The variant of pydantic-ai's Temporal long run that continues as new."""

# -- long runs (issue 34) -------------------------------------------------------------------

PAI_LONG_NAME = "bench_long_pai"


def _pai_long_agent(steps: int, times: list[float], capabilities: Sequence[Any] = ()) -> Any:
    """pydantic-ai's agent for a run of ``steps`` steps: each a model request calling
    ``step``, timed by it; the model reads the step from the newest message."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # the usage is given: without it ``FunctionModel`` estimates it from every
        # message, a cost growing with the run that is the test model's, not pydantic-ai's
        usage = RequestUsage(input_tokens=1, output_tokens=1)
        last, done = messages[-1], 0
        if isinstance(last, ModelRequest):
            for part in last.parts:  # the newest request's parts only: constant time
                if isinstance(part, ToolReturnPart):
                    done = int(part.tool_call_id.removeprefix("call_")) + 1
        if done >= steps:
            return ModelResponse(parts=[TextPart(f"done {done}")], usage=usage)
        call = ToolCallPart("step", {"n": done}, tool_call_id=f"call_{done}")
        return ModelResponse(parts=[call], usage=usage)

    agent = Agent(FunctionModel(answer), name=PAI_LONG_NAME, capabilities=list(capabilities))

    @agent.tool_plain
    async def step(n: int) -> str:
        """Do step n."""
        times.append(time.perf_counter())
        return f"step {n} done"

    return agent


def _pai_largest_message(messages: Sequence[Any]) -> int:
    """The largest message as pydantic-ai stores it (``ModelMessagesTypeAdapter``)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return max(len(ModelMessagesTypeAdapter.dump_json([m])) - 2 for m in messages)  # no [ ]


def _pai_limits(steps: int) -> Any:
    from pydantic_ai.usage import UsageLimits

    return UsageLimits(request_limit=steps + 5)  # pydantic-ai's default stops at 50


def db_bytes(db: str) -> int:
    """The system database's size once its WAL is checkpointed into it."""
    import sqlite3

    path = db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path)


async def plain_long(library: str, steps: int) -> dict[str, Any]:
    """A long run without durability (``Agent.run``): each library's own per-step cost,
    against which its durable runs' figures read."""
    from bench.durable_children import largest_message, long_agent, per_step

    times: list[float] = []
    start = time.perf_counter()
    if library == "golem":
        result = await long_agent(steps, times).run("go")
        largest = largest_message(result)
    else:
        result = await _pai_long_agent(steps, times).run("go", usage_limits=_pai_limits(steps))
        largest = _pai_largest_message(result.all_messages())
    seconds = time.perf_counter() - start
    assert result.output == f"done {steps}", result.output
    return {**per_step(times), "seconds": seconds, "largest_message": largest}


async def pai_long_dbos(db: str, steps: int) -> dict[str, Any]:
    import warnings

    from dbos import DBOS
    from pydantic_ai.durable_exec.dbos import DBOSAgent

    from bench.durable_children import dbos_largest_row, per_step, wal_journal

    wal_journal(db)
    times: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DBOSAgent is deprecated for DBOSDurability in 2.x
        durable = DBOSAgent(_pai_long_agent(steps, times))
    config: Any = {
        "name": "golem-bench-durable-peers-long",
        "system_database_url": db,
        "executor_id": "long",
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()
    start = time.perf_counter()
    result = await durable.run("go", usage_limits=_pai_limits(steps))
    seconds = time.perf_counter() - start
    assert result.output == f"done {steps}", result.output
    return {
        **per_step(times),
        "seconds": seconds,
        "largest_payload": dbos_largest_row(db),
        "largest_message": _pai_largest_message(result.all_messages()),
    }


class _History:
    """History figures, fed one execution's events at a time (oldest first), so a long
    run's history is never held whole: bytes so far at steps 50-500, the exponent of
    their log-log fit, the largest ``Payloads`` and event. ``is_step`` says, of an
    activity type's name, whether its completion ends a step."""

    def __init__(self, is_step: Callable[[str], bool]) -> None:
        self.is_step = is_step
        self.series: dict[int, int] = {}
        self.total = self.done = self.events = self.executions = 0
        self.largest_payload = self.largest_event = 0
        self.last: list[Any] = []  # the newest execution's events

    def add(self, events: list[Any]) -> None:
        from bench.durable_children import payload_sizes

        names: dict[int, str] = {}  # event ids start again in each execution
        for e in events:
            size = e.ByteSize()
            self.total += size
            self.largest_event = max(self.largest_event, size)
            self.largest_payload = max(self.largest_payload, *payload_sizes(e))
            if e.HasField("activity_task_scheduled_event_attributes"):
                names[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
            if e.HasField("activity_task_completed_event_attributes"):
                scheduled = e.activity_task_completed_event_attributes.scheduled_event_id
                if self.is_step(names.get(scheduled, "")):
                    self.done += 1
                    self.series[self.done] = self.total
        self.events += len(events)
        self.executions += 1
        self.last = events

    def figures(self) -> dict[str, Any]:
        from bench.durable_children import exponent

        marks: list[tuple[int, int]] = [
            (n, self.series[n]) for n in (50, 100, 200, 300, 400, 500) if n in self.series
        ]
        return {
            "largest_payload": self.largest_payload,
            "largest_event": self.largest_event,
            "executions": self.executions,
            "history_bytes": self.total,
            "history_events": self.events,
            "history_points": marks,
            "history_exponent": exponent(marks),
        }


def _history_figures(
    executions: Iterable[list[Any]], is_step: Callable[[str], bool]
) -> dict[str, Any]:
    """The figures of :class:`_History` over ``executions`` (oldest first)."""
    history = _History(is_step)
    for events in executions:
        history.add(events)
    return history.figures()


async def _read_history(client: Any, workflow_id: str, history: _History) -> None:
    """Feed every execution of ``workflow_id`` to ``history``, oldest first, one at a time."""
    run_ids: list[str | None] = []
    run_id: str | None = None
    while True:  # newest first: each execution names the one it continued
        run_ids.append(run_id)
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        first = await anext(aiter(handle.fetch_history_events()))
        run_id = first.workflow_execution_started_event_attributes.continued_execution_run_id
        if not run_id:
            break
    for run_id in reversed(run_ids):
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        history.add([e async for e in handle.fetch_history_events()])


def _why(events: list[Any]) -> str:
    """What an execution's events say stopped it: a termination, a failure, a failed task."""
    reasons: list[str] = []
    for e in events:
        if e.HasField("workflow_execution_terminated_event_attributes"):
            terminated = e.workflow_execution_terminated_event_attributes
            reasons.append(f"terminated: {terminated.reason}")
        if e.HasField("workflow_execution_failed_event_attributes"):
            failed = e.workflow_execution_failed_event_attributes
            reasons.append(f"failed: {failed.failure.message}")
        if e.HasField("workflow_task_failed_event_attributes"):
            failure = e.workflow_task_failed_event_attributes.failure.message
            if f"workflow task failed: {failure}" not in reasons:
                reasons.append(f"workflow task failed: {failure}")
    return "; ".join(reasons)


async def pai_long_temporal(
    address: str, steps: int, timeout: float, *, continued: bool = False
) -> dict[str, Any]:
    """pydantic-ai's long run on Temporal: its ``TemporalAgent`` wrapper, or with
    ``continued`` its ``TemporalDurability`` capability continuing as new when Temporal
    suggests it (``_pai_continue``)."""
    import warnings

    from pydantic_ai.durable_exec.temporal import (
        AgentPlugin,
        PydanticAIPlugin,
        TemporalAgent,
        TemporalDurability,
    )
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench.durable_children import per_step

    times: list[float] = []
    if continued:
        durability = TemporalDurability(continue_as_new=_pai_continue)
        durable = _pai_long_agent(steps, times, capabilities=[durability])
        workflow_class, args = _PaiLongContinued, ["go", None]
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated for TemporalDurability in 2.x
            durable = TemporalAgent(_pai_long_agent(steps, times))
        workflow_class, args = _PaiLongRun, ["go"]
    assert workflow_class is not None
    workflow_class.__pydantic_ai_agents__ = [durable]  # pydantic-ai's convention
    workflow_class.limits = _pai_limits(steps)
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    worker = Worker(
        client,
        task_queue="bench-long-pai",
        workflows=[workflow_class],
        plugins=[AgentPlugin(durable)],
    )
    # never shut down: the child exits with os._exit once the figures are out
    running = asyncio.create_task(worker.run())
    handle = await client.start_workflow(
        workflow_class.run, args=args, id="pai-long", task_queue="bench-long-pai"
    )
    start = time.perf_counter()
    error: str | None = None
    largest_message: int | None = None
    try:
        output, largest_message = json.loads(await asyncio.wait_for(handle.result(), timeout))
        assert output == f"done {steps}", output
    except TimeoutError:
        error = f"no result after {timeout:.0f} s"
        await handle.terminate("the benchmark's timeout")
    except Exception as exc:  # the run's failure is a finding: record it
        cause = exc.__cause__
        error = f"{type(exc).__name__}: {exc}" + (
            f" ({type(cause).__name__}: {cause})" if cause else ""
        )
    seconds = time.perf_counter() - start
    history = _History(lambda name: name.endswith("__call_tool"))
    history_error = None
    try:
        await _read_history(client, "pai-long", history)
    except Exception as exc:  # recorded: the figures cover the executions read
        history_error = (
            f"reading the history stopped after {history.executions} executions:"
            f" {type(exc).__name__}: {exc}"
        )
    if error is not None:
        why = _why(history.last)
        error = f"{error}; history: {why}" if why else error
    if largest_message is None:  # the run stopped: the messages of a plain run of 50 steps
        plain = await _pai_long_agent(50, []).run("go", usage_limits=_pai_limits(50))
        largest_message = _pai_largest_message(plain.all_messages())
    assert not running.done() or running.exception() is None
    return {
        **per_step(times),
        "seconds": seconds,
        "largest_message": largest_message,
        "error": error,
        **history.figures(),
        "history_error": history_error,
    }


_workflow: Any
try:
    from temporalio import workflow as _workflow
except ImportError:  # Temporal is optional: the DBOS figures need none of this
    _workflow = None

_PaiLongRun: Any = None
_PaiLongContinued: Any = None
if _workflow is not None:

    @_workflow.defn(name="BenchLongPai", sandboxed=False)  # as golem's workflow: no sandbox
    class _PaiLongRunWorkflow:
        """pydantic-ai's long run as a workflow (Temporal refuses a class defined in a
        function, so the agent and its limits are set on the class before the worker starts)."""

        __pydantic_ai_agents__: ClassVar[list[Any]] = []
        limits: ClassVar[Any] = None

        @_workflow.run  # type: ignore[untyped-decorator]
        async def run(self, prompt: str) -> str:
            (agent,) = self.__pydantic_ai_agents__
            result = await agent.run(prompt, usage_limits=self.limits)
            return json.dumps([result.output, _pai_largest_message(result.all_messages())])

    _PaiLongRun = _PaiLongRunWorkflow

    @_workflow.defn(name="BenchLongPaiContinued", sandboxed=False)
    class _PaiLongContinuedWorkflow:
        """pydantic-ai's long run on its ``TemporalDurability`` capability with a
        ``continue_as_new`` handler (:func:`_pai_continue`): when Temporal suggests it, the
        run continues as new carrying its messages, and resumes from them."""

        __pydantic_ai_agents__: ClassVar[list[Any]] = []
        limits: ClassVar[Any] = None

        @_workflow.run  # type: ignore[untyped-decorator]
        async def run(self, prompt: str | None, history: str | None) -> str:
            from pydantic_ai.messages import ModelMessagesTypeAdapter

            (agent,) = self.__pydantic_ai_agents__
            carried = None if history is None else ModelMessagesTypeAdapter.validate_json(history)
            result = await agent.run(prompt, message_history=carried, usage_limits=self.limits)
            return json.dumps([result.output, _pai_largest_message(result.all_messages())])

    _PaiLongContinued = _PaiLongContinuedWorkflow


def _pai_continue(ctx: Any) -> None:
    """pydantic-ai's ``continue_as_new`` handler: the messages so far, carried as new."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    history = ModelMessagesTypeAdapter.dump_json(ctx.messages).decode()
    _workflow.continue_as_new(args=[None, history])


async def diagnose(address: str, workflow_id: str) -> dict[str, Any]:
    """What the server's history says of a run whose child gave no figures: its executions,
    the activities completed, and why its newest execution stopped or is stuck."""
    from temporalio.client import Client

    client = await Client.connect(address)
    # a step ends with its tool call: golem's ``golem.tool``, pydantic-ai's ``__call_tool``
    history = _History(lambda name: name == "golem.tool" or name.endswith("__call_tool"))
    await _read_history(client, workflow_id, history)
    why = _why(history.last) or "no failure recorded"
    return {
        "diagnosis": f"{history.done} steps done over {history.executions} executions;"
        f" the newest execution: {why}"
    }
