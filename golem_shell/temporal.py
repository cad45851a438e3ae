"""Durable runs on Temporal: an ``Agent`` run as a workflow whose activities are its effects.

Owns the mapping of golem's run driver (``golem_shell.run._driver``) onto Temporal (ADR 0083,
docs/durable.md). The workflow ``golem.run`` (``GolemRun``) is the driver, replayed from
its history; each effect is an activity recorded there before the run moves on:
``golem.instructions`` (dynamic instructions), ``golem.processor`` (the history
processor, once per run), ``golem.compact`` (compact and retry's one compaction),
``golem.request`` (one model request, the adapter's retries inside), ``golem.tool`` (one
tool call; a batch's calls are concurrent activities scheduled in call order).
Validation and every transition run in the workflow. Inputs and results are
``golem_shell.engines._records`` JSON; the workflow id is the run id.

Nothing a conversation grows into crosses Temporal (ADR 0125): the run's input, each
request and tool activity carry the head of the conversation's chain in the agent's blob
store (``blobs=``), not the messages; a payload over ``STASH_LIMIT`` (a 700 kB tool
result, a long prompt) crosses as a reference to a blob. The workflow continues as new
when its event history passes ``history_events`` (or Temporal suggests it), carrying the
head of its journal (the outcomes it consumed), and the new execution replays the driver
over that journal without performing anything, so a history stays bounded whatever the
length of the run.

Retries stay golem's: ``RetryPolicy(maximum_attempts=1)``, and an activity returns its
effect's failure as an outcome. An activity heartbeats; when its worker dies the
heartbeat times out and the workflow schedules the effect again (at least once), up to
``_LOST_LIMIT`` times. A paused run waits in the same workflow: the query
``golem.waiting`` reads its waiting calls, the update ``golem.answer`` answers them, and
its validator runs the core's check, so answers for another pause are refused before
anything is recorded.

The workflow is not sandboxed: ``golem_shell`` does effects at import, so it cannot be
re-imported in Temporal's sandbox; ``golem_core``, which decides, runs there as it is
(``tests/test_temporal_sandbox.py``). ``temporalio`` is optional: importing this module
without it raises ``UsageError`` naming the extra. Create every ``TemporalAgent`` in every
worker process before its worker starts, so a run finds its agent by name.

Over 600 lines because it is one mapping: the workflow, its activities and the client
side (start, waiting, answer, result) agree on names and payloads, and are read together.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Generic, TypeAlias, TypeVar

import attrs

from golem_core import (
    CompactionRecord,
    DeferredAnswer,
    Message,
    ModelRequest,
    Part,
    ToolCallPart,
    Usage,
    failed_outcome,
    make_converter,
)
from golem_core.loop import (
    Answered,
    CompactHistory,
    CompactionDeclined,
    Fail,
    Finish,
    HistoryCompacted,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    RequestModel,
    RunConfig,
    RunState,
    ToolCrashed,
    ToolOutcome,
    check_resume,
)
from golem_shell._agent import Agent
from golem_shell._errors import DeferredResultsError, RunError, Stage, UsageError, error_type
from golem_shell._results import RunResult
from golem_shell.engines._blobs import (
    LOG_CHAIN,
    MESSAGE_CHAIN,
    BlobStore,
    Chain,
    MemoryBlobs,
    SQLiteBlobs,
    extend_chain,
    is_stashed,
    load_chain,
    messages_chain,
    stash,
    unstash,
)
from golem_shell.engines._engine import (
    WaitingCalls,
    answers_to_send,
    check_wrapped,
    ended,
    input_chain,
    resolve_instructions,
    result_of,
    run_chain,
    run_input,
    run_processor,
    set_up,
    waiting_of,
)
from golem_shell.engines._records import (
    CALL,
    MESSAGES,
    USAGE,
    AnswersSent,
    CorruptRecord,
    InstructionsResolved,
    ProcessorRan,
    RunEnded,
    Waiting,
    decode,
    decode_as,
    encode,
)
from golem_shell.observe._observe import EventHandler, observe_run
from golem_shell.run._asyncio import AgentEffects
from golem_shell.run._driver import Progress, ToolBatch, run
from golem_shell.run._setup import Prompt, RunSpec, compact_once, validate_output
from golem_shell.run._steering import steering_message
from golem_shell.tools._tools import RunContext

try:
    from temporalio import activity, workflow
    from temporalio.client import (
        Client,
        WorkflowFailureError,
        WorkflowHandle,
        WorkflowUpdateFailedError,
    )
    from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import (
        ActivityError,
        ApplicationError,
        TimeoutType,
        WorkflowAlreadyStartedError,
    )
    from temporalio.exceptions import TimeoutError as TemporalTimeout
    from temporalio.service import RPCError, RPCStatusCode
    from temporalio.worker import Worker
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise UsageError(
        "golem_shell.temporal needs Temporal's SDK: install golem with the temporal extra"
        " (pip install 'golem-agents[temporal]')"
    ) from _missing

__all__ = [
    "STEER_SIGNAL",
    "ACTIVITIES",
    "ANSWER_UPDATE",
    "BlobStore",
    "GolemRun",
    "MemoryBlobs",
    "SQLiteBlobs",
    "TASK_QUEUE",
    "TemporalAgent",
    "WAITING_QUERY",
    "WORKFLOW_NAME",
    "WaitingCalls",
]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")
JSON: TypeAlias = Any
"""A plain JSON value (what ``json.loads`` returns)."""

WORKFLOW_NAME = "golem.run"
"""The Temporal workflow type every run is an execution of (its id is the run id)."""
WAITING_QUERY = "golem.waiting"
"""The query that reads a paused run's waiting calls (``null`` when it does not wait)."""
STEER_SIGNAL = "golem.steer"
"""The signal that sends a running run a steering message (``TemporalAgent.steer``)."""
ANSWER_UPDATE = "golem.answer"
"""The update that answers a paused run's waiting calls (refused when they do not fit)."""
TASK_QUEUE = "golem"
"""The default task queue of runs and workers."""
_LOST_LIMIT = 5  # how many times an effect whose worker died is scheduled again
_POLL_SECONDS = 0.05  # how often ``waiting(timeout=)`` asks a run that has not paused yet
_CONVERTER = make_converter()
_RETRIES = RetryPolicy(maximum_attempts=1)  # golem's adapters retry; Temporal never does
_BROKEN = "GolemRecord"  # the failure type of a run whose records cannot be read
_PROCESS_BLOBS = MemoryBlobs()  # the default store: client and worker in one process

_AGENTS: dict[str, TemporalAgent[Any, Any]] = {}


def _registered(name: str) -> TemporalAgent[Any, Any]:
    durable = _AGENTS.get(name)
    if durable is None:  # a workflow task failure: Temporal retries it (a worker may know it)
        raise UsageError(
            f"no TemporalAgent named {name!r} is registered in this worker; create it"
            f" before the worker starts (registered: {', '.join(sorted(_AGENTS)) or 'none'})"
        )
    return durable


# -- the workflow ------------------------------------------------------------------------


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class GolemRun:
    """One run of the agent registered under the name the run was started with."""

    def __init__(self) -> None:
        self.agent = ""  # the registration name of the run's agent
        self.paused: RunState | None = None
        self.sent: list[tuple[int, AnswersSent]] = []  # accepted, not yet taken by the run
        self.taken: dict[int, str | None] = {}  # by update: applied (None) or why not
        self.steered: list[JSON] = []  # steering messages, not yet taken by the run

    @workflow.run
    async def run(self, agent: str, run: JSON) -> JSON:
        durable = _registered(agent)
        self.agent = agent
        try:
            return await durable._workflow(unstash(durable.blobs, run, "input"), self)
        except CorruptRecord as e:  # a workflow task failure would be retried without end
            raise ApplicationError(str(e), type=_BROKEN, non_retryable=True) from e

    def _read(self, sent: JSON) -> JSON:
        """Answers as sent, read back from the run's store if they were stashed."""
        return unstash(_registered(self.agent).blobs, sent, "answers") if is_stashed(sent) else sent

    @workflow.signal(name=STEER_SIGNAL)
    def steer(self, sent: JSON) -> None:
        """A steering message for the run: taken at its next safe point."""
        self.steered.append(sent)

    @workflow.query(name=WAITING_QUERY)
    def waiting(self) -> JSON:
        paused = self.paused
        return None if paused is None else encode(waiting_of(paused))

    @workflow.update(name=ANSWER_UPDATE)
    async def answer(self, sent: JSON) -> None:
        """Hand the answers to the waiting run; end when it has applied them (or refused
        them: an answer that lost a race to another for the same pause)."""
        number = len(self.taken) + len(self.sent)
        sent = self._read(sent)
        self.sent.append((number, decode_as(AnswersSent, sent, "answers")))
        await workflow.wait_condition(lambda: number in self.taken)
        refused = self.taken[number]
        if refused is not None:
            raise ApplicationError(refused, type="Rejected")

    @answer.validator
    def check_answer(self, sent: JSON) -> None:
        """Refuse answers that do not fit the pause they name (nothing is recorded)."""
        paused = self.paused
        if paused is None:
            raise ApplicationError("the run is not waiting for answers", type="NotWaiting")
        try:
            sent = self._read(sent)
            answers = decode_as(AnswersSent, sent, "answers")
        except CorruptRecord as e:
            raise ApplicationError(f"answers that cannot be read: {e}", type="Corrupt") from e
        rejected = check_resume(paused, Answered(answers.answers, pause=answers.pause))
        if rejected is not None:
            raise ApplicationError(str(rejected), list(rejected.call_ids), type="Rejected")


# -- the activities (each result is recorded; none is retried by Temporal) -----------------


async def _beating(durable: TemporalAgent[Any, Any], work: Awaitable[JSON]) -> JSON:
    """Await ``work``, heartbeating meanwhile, so a dead worker is noticed in time; its
    result crosses stashed when it is large (``STASH_LIMIT``)."""
    timeout = activity.info().heartbeat_timeout
    task = asyncio.ensure_future(work)
    if not timeout:
        return stash(durable.blobs, await task)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=timeout.total_seconds() / 3)
            if done:
                return stash(durable.blobs, task.result())
            activity.heartbeat()
    finally:
        if not task.done():
            task.cancel()


def _arrived(payload: JSON) -> tuple[TemporalAgent[Any, Any], JSON]:
    """The agent an activity's payload names, and the payload (read back if stashed)."""
    durable = _registered(payload["agent"])
    return durable, unstash(durable.blobs, payload, "activity input")


def _history(durable: TemporalAgent[Any, Any], payload: JSON) -> tuple[Message, ...]:
    """The conversation an activity's payload names by its chain's head."""
    return load_chain(durable.blobs, MESSAGE_CHAIN, payload["history"], "history").values


def _context(durable: TemporalAgent[Any, Any], payload: JSON) -> RunContext[Any]:
    return RunContext(durable.deps, payload["runId"], payload["conversationId"])


def _seen(payload: JSON, messages: Sequence[Message] = ()) -> RunState:
    """A state holding what an effect reads of the run (its ids, messages, counts)."""
    config = RunConfig(run_id=payload["runId"], conversation_id=payload["conversationId"])
    usage = USAGE[1](payload["usage"], "usage") if "usage" in payload else Usage()
    return RunState(config, tuple(messages), usage=usage, requests=payload.get("requests", 0))


@activity.defn(name="golem.instructions")
async def instructions_activity(payload: JSON) -> JSON:
    """Resolve the dynamic instructions of the run's agent."""
    durable, payload = _arrived(payload)
    spec = durable.agent.run_spec()
    return await _beating(durable, resolve_instructions(spec, _context(durable, payload)))


@activity.defn(name="golem.processor")
async def processor_activity(payload: JSON) -> JSON:
    """Run the history processor of the run's agent once on the supplied history (named
    by its chain's head); the processed history is stored, the result holds its head."""
    durable, payload = _arrived(payload)
    spec = durable.agent.run_spec()
    history = _history(durable, payload)
    return await _beating(durable, run_processor(spec, history, durable.blobs))


@activity.defn(name="golem.request")
async def request_activity(payload: JSON) -> JSON:
    """Send one model request (its messages named by their chain's head); a failure
    comes back as a recorded ``ModelFailed``."""
    durable, payload = _arrived(payload)
    set_up = unstash(durable.blobs, payload["request"], "model request")
    request = _CONVERTER.structure({**set_up, "messages": []}, ModelRequest)
    request = attrs.evolve(request, messages=_history(durable, payload))
    effects = AgentEffects(durable.agent.run_spec(), _context(durable, payload), None)

    async def once() -> JSON:
        return encode(await effects.request(RequestModel(request), _seen(payload)))

    return await _beating(durable, once())


@activity.defn(name="golem.tool")
async def tool_activity(payload: JSON) -> JSON:
    """Execute one tool call (the run's messages named by their chain's head); its
    outcome (a crash included) comes back recorded."""
    durable, payload = _arrived(payload)
    call = CALL[1](payload["call"], "call")
    system = MESSAGES[1](payload["system"], "system")
    state = _seen(payload, system + _history(durable, payload))
    effects = AgentEffects(durable.agent.run_spec(), _context(durable, payload), None)
    (work,) = effects.tools((call,), state)

    async def once() -> JSON:
        return encode(await work)

    return await _beating(durable, once())


@activity.defn(name="golem.compact")
async def compact_activity(payload: JSON) -> JSON:
    """Compact once for compact and retry (ADR 0141), with the run's history processor,
    on the history named by its chain's head."""
    durable, payload = _arrived(payload)
    command = CompactHistory(_history(durable, payload), payload["keep"], payload["reason"])
    return await _beating(durable, _compacted(durable, command))


async def _compacted(durable: TemporalAgent[Any, Any], command: CompactHistory) -> JSON:
    outcome = await compact_once(durable.agent.run_spec(), command)
    if isinstance(outcome, CompactionDeclined):
        return encode(outcome)
    # the history as stored bytes (by its chain's head): Temporal's JSON would reorder
    # the keys of the messages' extra fields on the way
    head = messages_chain(durable.blobs, outcome.history).head
    return {"type": "compactedRef", "history": head, "record": outcome.record.to_json()}


ACTIVITIES = (
    instructions_activity,
    processor_activity,
    compact_activity,
    request_activity,
    tool_activity,
)
"""The activities a worker of golem runs registers (with ``GolemRun``)."""


# -- the agent ---------------------------------------------------------------------------


class TemporalAgent(Generic[DepsT, OutputT]):
    """An ``Agent`` whose runs are Temporal workflows: they survive a crashed worker.

    Create one per agent, under a name unique in the process, in every process that
    starts or executes runs; a worker (``worker(client)``) executes the runs of every
    ``TemporalAgent`` of its process, finding each run's agent (model, tools, output
    type) by name. Start runs with ``start`` (or ``run``, which also waits) and read the
    result by run id with ``result``, from any process connected to the server. The run
    id is the workflow id: starting a run id again does not start a second run.

    The run is driven by the same driver as ``Agent.run`` (``golem_shell.run._driver``),
    with effects that are activities. As with DBOS: the tools of one batch all run to
    their end (``tool_batch="run_all"``); ``timeout`` and streaming do not apply (use
    Temporal's workflow timeouts); a paused run waits for ``answer``; the history
    processor and output validation run in the workflow and must be deterministic.

    Args:
        agent: the agent to run (toolsets are not supported yet).
        name: its registration name, the same in every worker (default: ``agent.name``).
        task_queue: the task queue its runs are started on (default ``"golem"``).
        deps: what ``RunContext.deps`` holds for tools and instructions in this process.
        on_event: receives the lifecycle events of the runs this worker executes; a
            replayed run reports its replayed steps again (at least once). It runs inside
            the workflow: it must not await I/O.
        activity_timeout: the longest one effect (a model request with the adapter's
            retries, a tool call) may take; past it, the effect fails.
        heartbeat_timeout: how soon a worker that died with an effect in flight is
            noticed (the effect is then scheduled again).
        blobs: where conversations and large payloads are stored by reference, shared
            by every process that starts, executes or reads the runs (``SQLiteBlobs``
            on one host, ``SQLBlobs`` on a database); default: this process's memory
            (client and worker in one process). A run whose blobs another process
            cannot read fails with ``RunError(stage="history")``.
        history_events: the event history length past which a run continues as new
            (carrying the head of its journal), so a run of any length keeps its
            history bounded; Temporal's own suggestion also triggers it.

    Raises:
        UsageError: ``agent`` is not an ``Agent``, the name is empty or taken by another
            agent, or the agent has toolsets.
    """

    def __init__(
        self,
        agent: Agent[DepsT, OutputT],
        *,
        name: str | None = None,
        task_queue: str = TASK_QUEUE,
        deps: DepsT | None = None,
        on_event: EventHandler | None = None,
        activity_timeout: timedelta = timedelta(minutes=10),
        heartbeat_timeout: timedelta = timedelta(seconds=10),
        blobs: BlobStore | None = None,
        history_events: int = 2000,
    ) -> None:
        self.name = check_wrapped("TemporalAgent", agent, name, _AGENTS)
        if not isinstance(history_events, int) or history_events < 50:
            raise UsageError(
                f"history_events must be an integer of 50 or more, got {history_events!r}"
            )
        self.agent: Agent[DepsT, OutputT] = agent
        self.task_queue = task_queue
        self.deps = deps
        self.on_event = on_event
        self.activity_timeout = activity_timeout
        self.heartbeat_timeout = heartbeat_timeout
        self.blobs: BlobStore = blobs if blobs is not None else _PROCESS_BLOBS
        self.history_events = history_events
        _AGENTS[self.name] = self

    def __repr__(self) -> str:
        return f"TemporalAgent({self.name!r}, {self.agent!r})"

    def worker(self, client: Client, **options: Any) -> Worker:
        """A Temporal ``Worker`` on this agent's task queue, for every ``TemporalAgent``
        of this process (``options`` go to ``Worker``: concurrency limits, ...)."""
        return Worker(
            client,
            task_queue=self.task_queue,
            workflows=[GolemRun],
            activities=list(ACTIVITIES),
            **options,
        )

    # -- starting and reading runs ----------------------------------------------------

    async def start(
        self,
        client: Client,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        run_id: str | None = None,
        conversation_id: str | None = None,
    ) -> str:
        """Start a durable run and return its run id (also its workflow id).

        Args:
            client: a client of the Temporal server.
            prompt: the user's prompt (``None`` continues ``history`` as it is).
            history: the conversation so far (a previous ``result.messages``), of any
                size: it is stored in ``blobs`` and the run carries its head.
            run_id: the run's id; a fresh UUIDv7 when omitted. A run id already started
                is not started again: its existing run goes on.
            conversation_id: as for ``Agent.run_with_history``.

        Raises:
            UsageError: the history, prompt or ids are not valid, or Temporal refused
                to start the run (the server's reason is in the message).
        """
        handle = await self._start(client, prompt, history, run_id, conversation_id)
        return handle.id

    async def run(
        self,
        client: Client,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        run_id: str | None = None,
        conversation_id: str | None = None,
    ) -> RunResult[OutputT]:
        """``start`` the run, then wait for its result (see ``result``)."""
        handle = await self._start(client, prompt, history, run_id, conversation_id)
        return await self._result_of(handle)

    async def result(self, client: Client, run_id: str) -> RunResult[OutputT]:
        """The result of the run ``run_id``, waiting for it to finish (wherever it runs).

        Raises:
            RunError: the run failed (``partial`` holds the evidence it recorded), or it
                was cancelled or terminated through Temporal (stage ``canceled``), or
                its records could not be read (stage ``history``: a blob another
                process's store holds).
            UsageError: there is no run with this id, or it belongs to another agent.
        """
        return await self._result_of(client.get_workflow_handle(run_id))

    async def _result_of(self, handle: WorkflowHandle[Any, Any]) -> RunResult[OutputT]:
        try:
            value = await handle.result()
        except RPCError as e:
            if e.status is RPCStatusCode.NOT_FOUND:
                raise UsageError(f"there is no durable run with id {handle.id!r}") from None
            raise RunError(
                Stage.CANCELED, f"reading the durable run {handle.id!r} failed: {e}", cause=e
            ) from e
        except WorkflowFailureError as e:
            cause = e.cause
            if isinstance(cause, ApplicationError) and cause.type == _BROKEN:
                raise RunError(
                    Stage.HISTORY,
                    f"the durable run {handle.id!r} could not read its records: {cause.message}",
                    cause=e,
                ) from e
            raise RunError(
                Stage.CANCELED,
                f"the durable run {handle.id!r} ended through Temporal: {e.cause}",
                cause=e,
            ) from e
        value = unstash(self.blobs, value, "result")
        return result_of("TemporalAgent", self.name, self.agent.run_spec(), value, self.blobs)

    async def _start(
        self,
        client: Client,
        prompt: Prompt,
        history: Sequence[Message],
        run_id: str | None,
        conversation_id: str | None,
    ) -> WorkflowHandle[Any, Any]:
        payload = run_input(prompt, history, run_id, conversation_id, self.blobs)
        try:
            return await client.start_workflow(
                WORKFLOW_NAME,
                args=[self.name, stash(self.blobs, payload)],
                id=payload["runId"],
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            )
        except WorkflowAlreadyStartedError:
            return client.get_workflow_handle(payload["runId"])
        except RPCError as e:
            raise UsageError(
                f"Temporal refused to start the run {payload['runId']!r}: {e.message}"
            ) from e

    async def waiting(self, client: Client, run_id: str, *, timeout: float = 0.0) -> WaitingCalls:
        """The calls the run ``run_id`` waits for, with the number of their pause
        (``WaitingCalls.pause``); empty when it does not wait. ``timeout`` is how long to
        wait for the run to pause."""
        handle = client.get_workflow_handle(run_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = await handle.query(WAITING_QUERY)
            if value or loop.time() >= deadline:
                break
            await asyncio.sleep(_POLL_SECONDS)
        if not value:
            return WaitingCalls()
        waiting = decode_as(Waiting, unstash(self.blobs, value, "waiting"), "waiting")
        return WaitingCalls.of(waiting)

    async def steer(self, client: Client, run_id: str, prompt: str | Sequence[Part]) -> None:
        """Send the running run ``run_id`` a message (steering, a signal): it joins the
        run at its next safe point (before its next request, or instead of taking its
        output), recorded in the workflow's history.

        Raises:
            UsageError: the run does not run (there is none, or it ended: start the next
                run with the message), or the prompt is empty.
        """
        payload = stash(self.blobs, MESSAGES[0]((steering_message(prompt),)))
        try:
            await client.get_workflow_handle(run_id).signal(STEER_SIGNAL, payload)
        except RPCError as e:
            raise UsageError(
                f"run {run_id!r} cannot take a steering message ({e.message}): if it has"
                " ended, start the next run with this message"
            ) from None

    async def answer(
        self,
        client: Client,
        run_id: str,
        answers: Mapping[str, DeferredAnswer],
        *,
        pause: int | WaitingCalls | None = None,
    ) -> None:
        """Answer waiting calls of the paused run ``run_id``, by call id; it goes on.

        As ``DurableAgent.answer``: the answers are bound to ``pause`` (or the pause the
        run is in now); the run's update validator refuses answers for another pause, for
        calls that do not wait, or of the wrong kind, before anything is recorded.

        Raises:
            DeferredResultsError: the answers do not fit (nothing is applied).
            UsageError: an answer is not ``Approved``, ``Denied`` or ``ExternalResult``.
        """
        sent = answers_to_send(run_id, answers, await self.waiting(client, run_id), pause)
        handle = client.get_workflow_handle(run_id)
        try:
            await handle.execute_update(ANSWER_UPDATE, stash(self.blobs, encode(sent)))
        except WorkflowUpdateFailedError as e:
            cause = e.cause
            ids: tuple[str, ...] = tuple(sorted(answers))
            if isinstance(cause, ApplicationError) and cause.details:
                ids = tuple(str(i) for i in cause.details[0])
            message = cause.message if isinstance(cause, ApplicationError) else str(e)
            raise DeferredResultsError(
                f"run {run_id!r} refused the answers for pause {sent.pause}: {message}", ids
            ) from e

    # -- the workflow body (deterministic: it replays) ----------------------------------

    async def _workflow(self, run_input: JSON, run_: GolemRun) -> JSON:
        spec = self.agent.run_spec()
        store = self.blobs
        journal = _Journal(self, run_input)
        chain = input_chain(run_input, store)

        async def instructions() -> JSON:
            try:
                return await journal.effect("golem.instructions", self._payload(run_input))
            except ActivityError as e:
                return encode(InstructionsResolved(failed=f"the activity failed: {e.cause}"))

        async def processor() -> JSON:
            payload = self._payload(run_input, history=chain.head)
            try:
                return await journal.effect("golem.processor", payload)
            except ActivityError as e:
                return encode(ProcessorRan(failed=f"the activity failed: {e.cause}"))

        state = await set_up(
            self.name, spec, run_input, instructions, processor, store, chain.values
        )
        if isinstance(state, RunEnded):
            return stash(store, encode(state))
        on_event = self.on_event
        muted = None if on_event is None else journal.muted(on_event)
        progress = Progress(state, observe_run(spec, state, muted))
        effects = _TemporalEffects(self, run_, spec, state.config, journal, chain)
        try:
            end = await run(progress, effects)
        except CorruptRecord as e:  # a record it needs cannot be read: fail, with the partial
            end = Fail(Stage.HISTORY, str(e), progress.state)
        assert isinstance(end, Finish | Fail)  # a durable run waits instead of pausing
        await workflow.wait_condition(workflow.all_handlers_finished)  # answers told
        return stash(store, encode(ended(self.name, spec, end, store, effects.chain)))

    def _payload(self, run_input: JSON, **more: JSON) -> JSON:
        return {
            "agent": self.name,
            "runId": run_input["runId"],
            "conversationId": run_input["conversationId"],
            **more,
        }

    async def _effect(self, name: str, payload: JSON) -> JSON:
        """Perform the activity ``name``; again when its worker died (up to a limit). The
        payload crosses stashed when large; the result is read back if it was.

        Raises:
            ActivityError: it failed otherwise (timed out, or golem's activity broke).
            MissingBlob: its stashed result is not in this worker's store.
        """
        payload = stash(self.blobs, payload)
        lost = 0
        while True:
            try:
                result = await workflow.execute_activity(
                    name,
                    payload,
                    start_to_close_timeout=self.activity_timeout,
                    heartbeat_timeout=self.heartbeat_timeout,
                    retry_policy=_RETRIES,
                )
                return unstash(self.blobs, result, name)
            except ActivityError as e:
                died = (
                    isinstance(e.cause, TemporalTimeout) and e.cause.type is TimeoutType.HEARTBEAT
                )
                if not died or lost >= _LOST_LIMIT:
                    raise
                lost += 1


class _Journal:
    """What a run's execution consumed, in the order it asked for it: every activity's
    result and every accepted answer (``entries``, by sequence number), so a run that
    continues as new replays the driver over them without performing anything.

    The entries of earlier executions arrive as the head of a chain in the run's input
    (``"journal"``); the driver asks for effects in a deterministic order (the request,
    then a batch's calls in call order), so entry ``n`` is the answer to the ``n``-th
    ask of every execution."""

    def __init__(self, durable: TemporalAgent[Any, Any], run_input: JSON) -> None:
        self.durable = durable
        self.run_input = run_input
        self.earlier: Chain[JSON] = load_chain(
            durable.blobs, LOG_CHAIN, run_input.get("journal"), "journal"
        )
        self.entries: dict[int, JSON] = dict(enumerate(self.earlier.values))
        self.asked = 0
        self.continuing = False
        self.reported = run_input.get("events", 0)  # events earlier executions reported
        self.seen = 0

    @property
    def replaying(self) -> bool:
        """Whether the run is still going over what an earlier execution consumed."""
        return self.asked < len(self.earlier.values)

    def muted(self, on_event: EventHandler) -> EventHandler:
        """``on_event``, silent for the events earlier executions reported (the replay
        over their journal makes the same events in the same order) and once the run
        continues as new."""

        def handler(event: Any) -> Any:
            if self.continuing:
                return None
            self.seen += 1
            if self.seen <= self.reported:
                return None
            return on_event(event)

        return handler

    def ask(self) -> int:
        """The sequence number of the next effect asked for."""
        self.asked += 1
        return self.asked - 1

    async def effect(self, name: str, payload: JSON | Callable[[], JSON]) -> JSON:
        """The result of the activity ``name`` for the next ask: the journal's, or the
        activity's (performed now and journaled). A ``payload`` given as a function is
        made only when the activity is performed: replaying an earlier execution's
        journal then stores nothing and hashes nothing, so a run that continues as new
        after many steps takes its first workflow task in time (Temporal fails a task
        that runs 2 s without yielding, and retries it, over and over)."""
        number = self.ask()
        if number in self.entries:
            return self.entries[number]
        if callable(payload):
            payload = payload()
        result = await self.durable._effect(name, payload)
        self.entries[number] = stash(self.durable.blobs, result)
        return result

    def recorded(self, number: int) -> JSON | None:
        """The journaled entry ``number`` (read back if stashed), or ``None``."""
        entry = self.entries.get(number)
        return None if entry is None else unstash(self.durable.blobs, entry, "journal")

    def due(self) -> bool:
        """Whether the run should continue as new before its next effect."""
        if self.replaying:
            return False
        info = workflow.info()
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self.durable.history_events
        )

    async def continue_as_new(self) -> None:
        """Continue the run as a new execution carrying the head of this journal (never
        returns: Temporal's ``ContinueAsNewError`` ends this execution)."""
        self.continuing = True
        await workflow.wait_condition(workflow.all_handlers_finished)
        values = tuple(self.entries[i] for i in range(len(self.entries)))
        head = extend_chain(self.durable.blobs, LOG_CHAIN, self.earlier, values).head
        carried = {**self.run_input, "journal": head, "events": max(self.seen, self.reported)}
        carried = stash(self.durable.blobs, carried)
        workflow.continue_as_new(args=[self.durable.name, carried])


class _TemporalEffects:
    """A run's effects on Temporal: requests and tool calls are activities (recorded in
    the workflow's history, replayed from it, or from the journal of an earlier
    execution); their payloads name the conversation by its chain's head; the clock is
    the workflow's; a paused run waits for answers sent through the update
    ``golem.answer``."""

    tool_batch: ToolBatch = "run_all"
    streaming = False

    def __init__(
        self,
        durable: TemporalAgent[Any, Any],
        run_: GolemRun,
        spec: RunSpec,
        config: RunConfig,
        journal: _Journal,
        chain: Chain[Message],
    ) -> None:
        self.durable = durable
        self.run = run_
        self.spec = spec
        self.run_config = config
        self.journal = journal
        self.chain = chain
        self.cause: BaseException | None = None
        self._request: tuple[JSON, JSON] | None = None  # (a request's set-up, its reference)

    def _ids(self, state: RunState) -> JSON:
        config = state.config
        return {"runId": config.run_id, "conversationId": config.conversation_id}

    def _head(self, state: RunState) -> str | None:
        """The head of the run's conversation (``history + added``), stored."""
        self.chain = run_chain(self.durable.blobs, state, self.chain)
        return self.chain.head

    def _set_up(self, request: JSON) -> JSON:
        """A request without its messages (instructions, tool definitions, settings, the
        output schema), by reference: stored once as a blob, since it is the same at
        every step of a run, so an activity's input is bounded by what a step adds, not
        by the size of the agent's tools (ADR 0125)."""
        if self._request is None or self._request[0] != request:
            self._request = (request, stash(self.durable.blobs, request, limit=0))
        return self._request[1]

    async def request(self, command: RequestModel, state: RunState) -> ModelResponded | ModelFailed:
        if self.journal.due():
            await self.journal.continue_as_new()

        def payload() -> JSON:
            # the messages are named by the chain's head: never unstructured here (that
            # was the one cost of a step that grew with the conversation)
            request = _CONVERTER.unstructure(attrs.evolve(command.request, messages=()))
            del request["messages"]
            return self.durable._payload(
                self._ids(state),
                request=self._set_up(request),
                history=self._head(state),
                requests=state.requests,
            )

        try:
            recorded = await self.journal.effect("golem.request", payload)
        except ActivityError as e:
            return ModelFailed(f"the model request activity failed: {e.cause or e}")
        outcome = decode(unstash(self.durable.blobs, recorded, "model outcome"), "model outcome")
        if not isinstance(outcome, ModelResponded | ModelFailed):
            raise CorruptRecord(f"model outcome: got a {type(outcome).__name__}")
        return outcome

    def tools(self, calls: Sequence[ToolCallPart], state: RunState) -> list[Awaitable[ToolOutcome]]:
        made: list[JSON] = []

        def shared() -> JSON:  # made once, when the batch's first call is performed
            if not made:
                made.append(
                    self.durable._payload(
                        self._ids(state),
                        system=MESSAGES[0](state.system),
                        history=self._head(state),
                        usage=USAGE[0](state.usage),
                        requests=state.requests,
                    )
                )
            return made[0]

        async def one(call: ToolCallPart) -> ToolOutcome:
            try:
                recorded = await self.journal.effect(
                    "golem.tool", lambda: {**shared(), "call": CALL[0](call)}
                )
            except ActivityError as e:
                return ToolCrashed(
                    str(call.id),
                    f"the tool activity failed: {e.cause or e}",
                    error_type=error_type(e.cause or e),
                )
            outcome: ToolOutcome = decode(
                unstash(self.durable.blobs, recorded, "tool outcome"), "tool outcome"
            )
            return outcome

        return [one(c) for c in calls]

    async def steering(self, state: RunState) -> tuple[Message, ...]:
        """The steering messages signalled since the run last looked (journaled, so a run
        continued as new takes the same ones at the same point)."""
        number = self.journal.ask()
        journaled = self.journal.recorded(number)
        if journaled is None:
            sent, self.run.steered = self.run.steered, []
            messages = tuple(
                m
                for s in sent
                for m in MESSAGES[1](unstash(self.durable.blobs, s, "steering"), "steering")
            )
            self.journal.entries[number] = stash(self.durable.blobs, MESSAGES[0](messages))
            return messages
        taken: tuple[Message, ...] = MESSAGES[1](
            unstash(self.durable.blobs, journaled, "journal"), "journal"
        )
        return taken

    async def compact(
        self, command: CompactHistory, state: RunState
    ) -> HistoryCompacted | CompactionDeclined:
        """Compact and retry's one compaction (ADR 0141), an activity."""
        history = messages_chain(self.durable.blobs, command.history).head
        payload = self.durable._payload(
            self._ids(state), history=history, keep=command.keep, reason=command.reason
        )
        try:
            recorded = await self.journal.effect("golem.compact", payload)
        except ActivityError as e:
            return CompactionDeclined(failed_outcome(f"the compaction activity failed: {e.cause}"))
        value = unstash(self.durable.blobs, recorded, "compaction")
        if isinstance(value, dict) and value.get("type") == "compactedRef":
            record = CompactionRecord.from_json(value.get("record"))
            if record is None:
                raise CorruptRecord("compaction: not a compaction record")
            head = value.get("history")
            folded = load_chain(self.durable.blobs, MESSAGE_CHAIN, head or None, "compacted")
            return HistoryCompacted(folded.values, record)
        outcome = decode(value, "compaction")
        if not isinstance(outcome, HistoryCompacted | CompactionDeclined):
            raise CorruptRecord(f"compaction: got a {type(outcome).__name__}")
        return outcome

    async def validate(self, candidate: ToolCallPart | Message) -> OutputValid | OutputInvalid:
        config = self.run_config
        context = RunContext(self.durable.deps, config.run_id, config.conversation_id)
        return await validate_output(self.spec, candidate, context)

    async def wait(self, paused: RunState) -> Answered:
        """Publish the waiting calls (the query), then take accepted answers in order
        until some fit this pause; answers for an earlier pause are refused. A run that
        replays an earlier execution's journal takes the answers it journaled."""
        number = self.journal.ask()
        journaled = self.journal.recorded(number)
        if journaled is not None:
            sent = decode_as(AnswersSent, journaled, "journal")
            return Answered(sent.answers, pause=sent.pause)
        run_ = self.run
        run_.paused = paused
        while True:
            await workflow.wait_condition(lambda: bool(run_.sent))
            taken, sent = run_.sent.pop(0)
            answered = Answered(sent.answers, pause=sent.pause)
            rejected = check_resume(paused, answered)
            run_.taken[taken] = None if rejected is None else str(rejected)
            if rejected is None:
                run_.paused = None  # no answer is accepted until the next pause
                for late, _ in run_.sent:  # accepted for this pause, beaten by this one
                    run_.taken[late] = f"pause {paused.pauses} was answered already"
                run_.sent.clear()
                self.journal.entries[number] = stash(self.durable.blobs, encode(sent))
                return answered
