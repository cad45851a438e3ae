"""Durable runs on DBOS: an ``Agent`` run as a workflow whose steps are the loop's effects.

Owns the mapping of golem's sans-IO loop onto DBOS (ADR 0042). The workflow body is the
driver: it asks ``golem_core.loop`` for the next command and feeds the outcome back, so
every decision is replayed deterministically. Each effect is a DBOS step whose output is
recorded before the run moves on:

- ``golem.instructions``: the dynamic instructions (only for an agent that has them);
- ``golem.processor``: the history processor's outcome on the supplied history (only
  for an agent that has one; once per run, so a summarizing processor's model call is
  made once and replayed from the record);
- ``golem.compact``: the one compaction of compact and retry, when a provider refused a
  request as too long (ADR 0141);
- ``golem.request``: one model request (the adapter's own retries happen inside it;
  DBOS never retries a step);
- ``golem.tool``: one tool call (the calls of one batch run concurrently, each its own
  step, at step ids reserved in call order).

Validation of the output and every transition run in the body.
Step outputs, the workflow's input and its result are plain JSON in golem's message
contract, so a run recorded by one version of golem resumes in the next. Conversations go
by reference (ADR 0125): the input, the processor's outcome and the result hold the head
of a chain of messages stored once, content-addressed, in a ``golem_blobs`` table of DBOS's
own system database (or the ``blobs=`` store given), so a conversation of many runs is
recorded once, not once per run. A worker that
dies (even by SIGKILL) and restarts replays the body: recorded effects return their
recorded outputs and are not performed again; an effect that was interrupted mid-flight
(not recorded) is performed again (at least once). The workflow id is the run id.

A run that pauses on deferred tools publishes the waiting calls as the event
``golem.waiting`` and waits, durably, for answers sent to the topic ``golem.answers``
(``DurableAgent.answer``); then it goes on in the same workflow.

The run's keywords (``model=``, ``settings=``, ...) are recorded in its input and the
run's spec is built once, in the body, from the agent and that record
(``golem_shell.engines._keywords``); every step receives it.

``dbos`` is an optional dependency: importing this module without it raises
``UsageError`` naming the extra. Register every ``DurableAgent`` (by name) in every
worker process before ``DBOS.launch()``, so a recovered run finds its agent. The public
face is ``golem_shell.durable``.

Over 600 lines because it is one mapping, as ``golem_shell.engines.temporal`` is in four
rooms: the workflow, its steps and ``DurableAgent`` (start, result, waiting, answer,
steer) agree on names and payloads; with DBOS a step is a function the body calls, so
the roles do not split as Temporal's workflow, activities and client do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, TypeAlias, TypeVar, overload

from typing_extensions import TypeForm, Unpack

from golem_core import DeferredAnswer, Message, Part, ToolCallPart
from golem_core.loop import (
    Answered,
    CompactHistory,
    CompactionDeclined,
    HistoryCompacted,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Pause,
    RequestModel,
    RunState,
    ToolOutcome,
    check_resume,
)
from golem_shell._agent import Agent
from golem_shell._asyncio import AgentEffects
from golem_shell._driver import Progress, ToolBatch, run
from golem_shell._errors import RunError, Stage, UsageError
from golem_shell._observe import EventHandler, observe_run
from golem_shell._options import RunOptions
from golem_shell._results import RunResult
from golem_shell._setup import Prompt, RunSpec, compact_once, validate_output
from golem_shell._steering import steering_message
from golem_shell._tools import RunContext
from golem_shell.engines._blobs import (
    BlobStore,
    Chain,
    MemoryBlobs,
    MissingBlob,
    SQLBlobs,
    SQLiteBlobs,
)
from golem_shell.engines._engine import (
    WaitingCalls,
    answers_to_send,
    check_wrapped,
    ended,
    input_chain,
    recorded_options,
    resolve_instructions,
    result_of,
    run_input,
    run_processor,
    set_up,
    unreadable,
    waiting_of,
)
from golem_shell.engines._keywords import Keywords
from golem_shell.engines._records import (
    MESSAGES,
    AnswersSent,
    CorruptRecord,
    RunEnded,
    Waiting,
    decode,
    decode_as,
    encode,
)
from golem_shell.models import Model

try:
    from dbos import (
        DBOS,
        SetWorkflowID,
        StepOptions,
        WorkflowHandleAsync,
        WorkflowSerializationFormat,
    )
    from dbos import error as dbos_error
    from dbos._dbos import _get_dbos_instance
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise UsageError(
        "golem_shell.durable needs DBOS: install golem with the dbos extra"
        " (pip install 'golem-agents[dbos]')"
    ) from _missing

__all__ = [
    "STEER_TOPIC",
    "ANSWERS_TOPIC",
    "BlobStore",
    "DurableAgent",
    "MemoryBlobs",
    "SQLBlobs",
    "SQLiteBlobs",
    "WAITING_EVENT",
    "WORKFLOW_NAME",
    "WaitingCalls",
    "system_blobs",
]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")
T = TypeVar("T")
JSON: TypeAlias = Any
"""A plain JSON value (what ``json.loads`` returns)."""

WORKFLOW_NAME = "golem.run"
"""The DBOS workflow every durable run is an instance of (its id is the run id)."""
WAITING_EVENT = "golem.waiting"
"""The DBOS event a paused run sets to the calls it waits for (none once answered)."""
ANSWERS_TOPIC = "golem.answers"
"""The DBOS topic a paused run receives its answers on."""
STEER_TOPIC = "golem.steer"
"""The DBOS topic a running run receives steering messages on (``DurableAgent.steer``)."""
_REJECTED_EVENT = "golem.rejected"
_WAIT_SECONDS = 24 * 3600.0  # one durable recv; a paused run waits in a loop of these
_POLL_SECONDS = 0.1  # how often a waiting reader checks for a run's result
_LOOKUP_SECONDS = 30.0  # how long a recovered run waits for its agent to be registered
_PORTABLE = WorkflowSerializationFormat.PORTABLE

_AGENTS: dict[str, DurableAgent[Any, Any]] = {}
_SYSTEM_BLOBS: list[tuple[Any, SQLBlobs]] = []  # (DBOS's system engine, its blobs)


def system_blobs() -> SQLBlobs:
    """The blobs in the system database of the DBOS instance launched in this process
    (table ``golem_blobs``, created on first use).

    Raises:
        UsageError: DBOS is not launched.
    """
    try:
        engine = _get_dbos_instance()._sys_db.engine
    except Exception as e:
        raise UsageError(
            f"durable runs need DBOS launched (DBOS(config=...); DBOS.launch()): {e}"
        ) from e
    for known, blobs in _SYSTEM_BLOBS:
        if known is engine:
            return blobs
    blobs = SQLBlobs(engine)
    _SYSTEM_BLOBS[:] = [(engine, blobs)]
    return blobs


def _step(name: str) -> StepOptions:
    """A golem step: recorded, never retried by DBOS (golem's adapters retry requests)."""
    return {"name": name, "retries_allowed": False}


# -- the workflow ---------------------------------------------------------------------


async def _lookup(name: str) -> DurableAgent[Any, Any]:
    """The agent registered as ``name``, waiting briefly for a worker still starting."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _LOOKUP_SECONDS
    while name not in _AGENTS and loop.time() < deadline:
        await asyncio.sleep(0.05)  # not recorded: it decides nothing
    durable = _AGENTS.get(name)
    if durable is None:
        raise UsageError(
            f"no DurableAgent named {name!r} is registered in this worker; create it"
            f" before DBOS.launch() (registered: {', '.join(sorted(_AGENTS)) or 'none'})"
        )
    return durable


@DBOS.workflow(name=WORKFLOW_NAME, serialization_type=_PORTABLE)
async def _durable_run(agent: str, run: dict[str, Any]) -> JSON:
    """One durable run of the agent registered as ``agent``; ``run`` is its JSON input."""
    durable = await _lookup(agent)
    return await durable._workflow(run)


class DurableAgent(Generic[DepsT, OutputT]):
    """An ``Agent`` whose runs are DBOS workflows: they survive a crashed worker.

    Create one per agent, under a name unique in the process, in every process that
    starts or executes runs, before ``DBOS.launch()``: a worker resuming a run finds its
    agent (model, tools, output type) by that name. Start runs with ``start`` (or
    ``run``, which also waits), here or on a DBOS queue that other workers pull from;
    read the result by run id with ``result``. The run id is the DBOS workflow id:
    starting a run id again does not start a second run.

    The run is driven by the same driver as ``Agent.run`` (``golem_shell._driver``),
    with effects that are DBOS steps. What differs: tools of one batch all run to the
    end (``tool_batch="run_all"``: a tool that stops the run does not cancel its
    siblings, so a replay never runs a cancelled tool again); ``timeout`` and streaming
    do not apply (use DBOS's workflow timeouts); a paused run does not end but waits for
    ``answer``; the history processor runs once per run as a step (a summarizing one
    calls its model once), output validation runs in the workflow body and must be
    deterministic.

    Args:
        agent: the agent to run (toolsets are not supported: their tool lists are
            asked per run, which a restarted worker cannot replay).
        name: its registration name, the same in every worker (default: the agent's
            ``name``).
        deps: what ``RunContext.deps`` holds for tools and instructions in this process,
            for runs that pass no ``deps=`` of their own (a run's JSON ``deps=`` are
            recorded with it).
        on_event: receives the lifecycle events of the runs this worker executes (the
            same events as ``Agent.run``'s ``on_event``, from the same driver). A run a
            restarted worker replays reports its replayed steps again (at least once).
        blobs: where conversations are stored by reference (content-addressed, once per
            message); default: a ``golem_blobs`` table in DBOS's system database, which
            every worker of the runs shares already.
        steerable: its runs take steering messages (``steer``): before each request and
            each output the run checks its steering topic, two recorded DBOS steps
            (``recv`` and its zero-second wait) each time, so it is off by default.
        models: models a run may use, by a name the same in every worker: a run's
            ``model=`` (the name, or the instance) and the agent's own model, when it is
            one of them, are recorded by that name, so a recovered run keeps its model.
        output_types: output types a run may ask for (``output_type=``), by a name the
            same in every worker.

    Raises:
        UsageError: ``agent`` is not an ``Agent``, the name is empty or taken by another
            agent, the agent has toolsets, or a model or output type is not one.
    """

    def __init__(
        self,
        agent: Agent[DepsT, OutputT],
        *,
        name: str | None = None,
        deps: DepsT | None = None,
        on_event: EventHandler | None = None,
        blobs: BlobStore | None = None,
        steerable: bool = False,
        models: Mapping[str, Model] | None = None,
        output_types: Mapping[str, Any] | None = None,
    ) -> None:
        name = check_wrapped("DurableAgent", agent, name, _AGENTS)
        self.keywords = Keywords("DurableAgent", agent, models, output_types)
        self.steerable = steerable
        self.agent: Agent[DepsT, OutputT] = agent
        self.name = name
        self.deps = deps
        self.on_event = on_event
        self.blobs = blobs
        _AGENTS[name] = self

    def store(self) -> BlobStore:
        """The blob store this agent's runs keep their conversations in."""
        return self.blobs if self.blobs is not None else system_blobs()

    def __repr__(self) -> str:
        return f"DurableAgent({self.name!r}, {self.agent!r})"

    # -- starting and reading runs ----------------------------------------------------

    async def start(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: Any = None,
        queue: str | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> str:
        """Start a durable run and return its run id (also its DBOS workflow id).

        Args:
            prompt: the user's prompt (``None`` continues ``history`` as it is).
            history: the conversation so far (a previous ``result.messages``).
            output_type: the run's own output type, one of ``output_types`` (or its
                name); the agent's output validators do not run then.
            queue: the name of a DBOS queue (``DBOS.register_queue``) to enqueue the run
                on, for any worker listening to it; ``None`` runs it in this process.
            **options: the run keywords (``RunOptions``), recorded with the run:
                ``run_id`` (a run id already started is not started again: its existing
                run continues), ``conversation_id``, ``model`` (a name of ``models``, a
                registered instance or a ``"provider:model"`` string), ``settings``,
                ``usage_limits``, ``deps`` (a JSON value).

        Raises:
            UsageError: a keyword that cannot be recorded (``on_event``, ``steering``,
                an unregistered model or output type, deps that are not JSON), or a bad
                history, prompt or id.
        """
        handle = await self._start("start", prompt, history, output_type, queue, options)
        return handle.get_workflow_id()

    @overload
    async def run(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: None = None,
        queue: str | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]: ...

    @overload
    async def run(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: TypeForm[T],
        queue: str | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[T]: ...

    async def run(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: Any = None,
        queue: str | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]:
        """``start`` the run, then wait for its result (see ``result``)."""
        handle = await self._start("run", prompt, history, output_type, queue, options)
        return await self._result_of(handle)

    async def result(self, run_id: str) -> RunResult[OutputT]:
        """The result of the run ``run_id``, waiting for it to finish (wherever it runs).

        Raises:
            RunError: the run failed (``partial`` holds the evidence it recorded), or it
                was cancelled through DBOS (stage ``canceled``, no partial).
            UsageError: there is no run with this id, or it belongs to another agent.
        """
        try:
            handle: Any = await DBOS.retrieve_workflow_async(run_id)
        except dbos_error.DBOSNonExistentWorkflowError:
            raise UsageError(f"there is no durable run with id {run_id!r}") from None
        return await self._result_of(handle)

    async def _result_of(self, handle: WorkflowHandleAsync[dict[str, Any]]) -> RunResult[OutputT]:
        try:
            value = await handle.get_result(polling_interval_sec=_POLL_SECONDS)
        except dbos_error.DBOSAwaitedWorkflowCancelledError as e:
            raise RunError(
                Stage.CANCELED,
                f"the durable run {handle.get_workflow_id()!r} was cancelled (through DBOS)",
                cause=e,
            ) from e
        return self._decode_result(value)

    async def _start(
        self,
        method: str,
        prompt: Prompt,
        history: Sequence[Message],
        output_type: Any,
        queue: str | None,
        options: RunOptions[DepsT],
    ) -> WorkflowHandleAsync[JSON]:
        recorded = self.keywords.record(method, options, output_type)
        run_id, conversation_id = options.get("run_id"), options.get("conversation_id")
        payload = run_input(prompt, history, run_id, conversation_id, self.store(), recorded)
        run_id = payload["runId"]
        with SetWorkflowID(run_id):
            if queue is None:
                return await DBOS.start_workflow_async(_durable_run, self.name, payload)
            return await DBOS.enqueue_workflow_async(queue, _durable_run, self.name, payload)

    async def steer(self, run_id: str, prompt: str | Sequence[Part]) -> None:
        """Send the running run ``run_id`` a message (steering): it joins the run at its
        next safe point (before its next request, or instead of taking its output),
        durably: a restarted worker's replay takes it at the same point.

        Raises:
            UsageError: there is no such run, it has ended (start the next run with the
                message), or the prompt is empty.
        """
        message = steering_message(prompt)
        if not self.steerable:
            raise UsageError(
                f"{self!r} takes no steering: make it with DurableAgent(..., steerable=True)"
            )
        status = await DBOS.get_workflow_status_async(run_id)
        if status is None:
            raise UsageError(f"there is no durable run with id {run_id!r}")
        if status.status not in ("PENDING", "ENQUEUED"):
            raise UsageError(
                f"run {run_id!r} has ended ({status.status.lower()}): start the next run"
                " with this message"
            )
        await DBOS.send_async(
            run_id, MESSAGES[0]((message,)), STEER_TOPIC, serialization_type=_PORTABLE
        )

    async def waiting(self, run_id: str, *, timeout: float = 0.0) -> WaitingCalls:
        """The calls the run ``run_id`` waits for (approval or an external result), with
        the number of the pause they belong to (``WaitingCalls.pause``).

        Empty when the run is not paused. ``timeout`` is how long to wait for the run to
        pause the first time.
        """
        value = await DBOS.get_event_async(run_id, WAITING_EVENT, timeout)
        if not value:
            return WaitingCalls()
        waiting = decode_as(Waiting, value, "waiting")
        return WaitingCalls.of(waiting)

    async def answer(
        self,
        run_id: str,
        answers: Mapping[str, DeferredAnswer],
        *,
        pause: int | WaitingCalls | None = None,
    ) -> None:
        """Answer waiting calls of the paused run ``run_id``, by call id; it goes on.

        ``Approved()`` runs the tool, ``Denied(reason)`` gives the model a failed result,
        ``ExternalResult`` is the result of a call executed elsewhere. Calls left
        unanswered keep the run paused. The calls are the run's own (recorded by the
        workflow), so a forged call cannot be answered.

        Answers are bound to one pause of the run: ``pause`` (the ``WaitingCalls`` from
        ``waiting(...)`` that the person answering saw, or its ``pause``), or else the
        pause the run is in now. A repeated answer (a double click, an HTTP retry) is
        refused here once the run has moved on, and by the run itself if it arrives
        late: it never applies to a later pause, even one whose call has the same id (an
        answer that names no pause is refused for a call whose id an earlier, answered
        call had: name the pause then).

        Raises:
            DeferredResultsError: an answer names a call that is not waiting, answers it
                with the wrong kind of answer, answers a pause that is over, or names no
                pause for a call with a repeated id; nothing
                is sent then.
        """
        sent = answers_to_send(run_id, answers, await self.waiting(run_id), pause)
        await DBOS.send_async(run_id, encode(sent), ANSWERS_TOPIC, serialization_type=_PORTABLE)

    # -- the workflow body --------------------------------------------------------------

    async def _workflow(self, recorded_input: JSON) -> JSON:
        store = self.store()
        try:  # the spec is built once, from the run's recorded keywords
            recorded = recorded_options(recorded_input)
            spec = self.keywords.spec(recorded)
        except (CorruptRecord, UsageError) as e:
            return encode(unreadable(self.name, recorded_input, str(e)))
        deps = self.keywords.deps(recorded, self.deps)
        context: RunContext[Any] = RunContext(
            deps, recorded_input["runId"], recorded_input["conversationId"]
        )
        try:  # reading a blob by its key is as deterministic as the key (ADR 0125)
            chain = input_chain(recorded_input, store)
            state = await set_up(
                self.name,
                spec,
                recorded_input,
                lambda: DBOS.run_step_async(
                    _step("golem.instructions"), resolve_instructions, spec, context
                ),
                lambda: DBOS.run_step_async(
                    _step("golem.processor"), run_processor, spec, chain.values, store
                ),
                store,
                chain.values,
            )
        except MissingBlob as e:
            state = unreadable(self.name, recorded_input, str(e))
        if isinstance(state, RunEnded):
            return encode(state)
        progress = Progress(state, observe_run(spec, state, self.on_event))
        end = await run(progress, _DBOSEffects(self, spec, context))
        assert not isinstance(end, Pause)  # a durable run waits instead of pausing
        known: Chain[Any] = chain if spec.processor is None else Chain()
        return encode(ended(self.name, spec, end, store, known, recorded.output_type))

    def _decode_result(self, value: JSON) -> RunResult[Any]:
        return result_of("DurableAgent", self.name, self.keywords.output_of, value, self.store())


# -- the steps (each output is recorded; none is retried by DBOS; each reads the run's spec)


async def _request_step(spec: RunSpec, command: RequestModel, state: RunState) -> JSON:
    effects = AgentEffects(spec, _NO_CONTEXT, None)
    return encode(await effects.request(command, state))


async def _tool_step(
    spec: RunSpec, call: ToolCallPart, state: RunState, context: RunContext[Any]
) -> JSON:
    (work,) = AgentEffects(spec, context, None).tools((call,), state)
    return encode(await work)


async def _compact_step(spec: RunSpec, command: CompactHistory) -> JSON:
    return encode(await compact_once(spec, command))


_NO_CONTEXT: RunContext[Any] = RunContext(None, "", "")


class _DBOSEffects:
    """A durable run's effects: each model request and each tool call is a DBOS step
    (recorded before the run moves on, replayed from the record after a crash); a paused
    run publishes what it waits for and receives answers on a topic, durably."""

    tool_batch: ToolBatch = "run_all"
    streaming = False

    def __init__(
        self, durable: DurableAgent[Any, Any], spec: RunSpec, context: RunContext[Any]
    ) -> None:
        self.durable = durable
        self.spec = spec
        self.context = context
        # the driver asks only a steerable run (each look is two recorded DBOS steps)
        self.steering: Callable[[RunState], Awaitable[tuple[Message, ...]]] | None = (
            self._steering if durable.steerable else None
        )
        self.cause: BaseException | None = None

    async def request(self, command: RequestModel, state: RunState) -> ModelResponded | ModelFailed:
        recorded = await DBOS.run_step_async(
            _step("golem.request"), _request_step, self.spec, command, state
        )
        outcome = decode(recorded, "model outcome")
        if not isinstance(outcome, ModelResponded | ModelFailed):
            raise CorruptRecord(f"model outcome: got a {type(outcome).__name__}")
        return outcome

    def tools(self, calls: Sequence[ToolCallPart], state: RunState) -> list[Awaitable[ToolOutcome]]:
        reserved = [DBOS.reserve_step() for _ in calls]  # step ids in call order

        async def one(step: Any, call: ToolCallPart) -> ToolOutcome:
            recorded = await step.run_async(
                _step("golem.tool"), _tool_step, self.spec, call, state, self.context
            )
            outcome: ToolOutcome = decode(recorded, "tool outcome")
            return outcome

        return [one(r, c) for r, c in zip(reserved, calls, strict=True)]

    async def validate(self, candidate: ToolCallPart | Message) -> OutputValid | OutputInvalid:
        return await validate_output(self.spec, candidate, self.context)

    async def _steering(self, state: RunState) -> tuple[Message, ...]:
        """The steering messages sent to the run since it last looked (``recv`` is
        recorded: a replay takes the same ones at the same point)."""
        taken: list[Message] = []
        while True:
            sent = await DBOS.recv_async(STEER_TOPIC, timeout_seconds=0)
            if sent is None:
                return tuple(taken)
            taken.extend(MESSAGES[1](sent, "steering"))

    async def compact(
        self, command: CompactHistory, state: RunState
    ) -> HistoryCompacted | CompactionDeclined:
        """Compact and retry's one compaction (ADR 0141), a step: a summarizing
        processor's model call is made once and replayed from the record."""
        recorded = await DBOS.run_step_async(
            _step("golem.compact"), _compact_step, self.spec, command
        )
        outcome = decode(recorded, "compaction")
        if not isinstance(outcome, HistoryCompacted | CompactionDeclined):
            raise CorruptRecord(f"compaction: got a {type(outcome).__name__}")
        return outcome

    async def wait(self, paused: RunState) -> Answered:
        """Publish the waiting calls (and why earlier answers were refused), then receive
        answers until some fit this pause; the run goes on in the same workflow."""
        waiting = waiting_of(paused)
        await DBOS.set_event_async(WAITING_EVENT, encode(waiting), serialization_type=_PORTABLE)
        while True:
            message = await DBOS.recv_async(ANSWERS_TOPIC, timeout_seconds=_WAIT_SECONDS)
            if message is None:
                continue
            try:
                sent = decode_as(AnswersSent, message, "answers")
            except CorruptRecord as e:
                reason = f"answers that cannot be read: {e}"
            else:
                answered = Answered(sent.answers, pause=sent.pause)
                rejected = check_resume(paused, answered)
                if rejected is None:
                    await DBOS.set_event_async(WAITING_EVENT, None, serialization_type=_PORTABLE)
                    return answered
                reason = str(rejected)
            await DBOS.set_event_async(_REJECTED_EVENT, reason, serialization_type=_PORTABLE)
