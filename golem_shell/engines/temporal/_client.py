"""The Temporal engine's client side: ``TemporalAgent``.

Owns what a process connected to the Temporal server does with a run: start it (the
run's input, with its history stored in the agent's blob store and its recorded
keywords), read its result, read what a paused run waits for and answer it (through the
update ``golem.answer``), steer it (the signal ``golem.steer``), and make a worker that
executes the runs of every ``TemporalAgent`` of its process (the workflow of
``_workflow``, the activities of ``_activities``). Create every ``TemporalAgent`` in
every worker process before its worker starts, so a run finds its agent by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Generic, TypeVar, overload

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker
from typing_extensions import TypeForm, Unpack

from golem_core import DeferredAnswer, Message, Part
from golem_shell._agent import Agent
from golem_shell._errors import DeferredResultsError, RunError, Stage, UsageError
from golem_shell._results import RunResult
from golem_shell.engines._blobs import BlobStore, MissingBlob, owned_by, stash, unstash
from golem_shell.engines._engine import (
    WaitingCalls,
    answers_to_send,
    check_wrapped,
    missing_blob,
    result_of,
    run_input,
)
from golem_shell.engines._events import event_log as _event_log
from golem_shell.engines._events import follow, follow_into
from golem_shell.engines._keywords import Keywords
from golem_shell.engines._records import MESSAGES, Waiting, decode_as, encode
from golem_shell.engines.temporal._activities import ACTIVITIES
from golem_shell.engines.temporal._common import (
    AGENTS,
    ANSWER_UPDATE,
    BROKEN,
    PROCESS_BLOBS,
    STEER_SIGNAL,
    TASK_QUEUE,
    WAITING_QUERY,
    WORKFLOW_NAME,
)
from golem_shell.engines.temporal._refs import Batched
from golem_shell.engines.temporal._workflow import GolemRun
from golem_shell.models import Model
from golem_shell.observe._observe import EventHandler
from golem_shell.run._event_stream import RunEvent
from golem_shell.run._options import RunOptions
from golem_shell.run._setup import Prompt
from golem_shell.run._steering import steering_message
from golem_shell.store._methods import StoreMethods
from golem_shell.store._streams import StreamLog

__all__ = ["TemporalAgent"]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")
T = TypeVar("T")
_POLL_SECONDS = 0.05  # how often ``waiting(timeout=)`` asks a run that has not paused yet
_NO_WORKER_YET = (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.FAILED_PRECONDITION)
"""A query's failures while no worker polls the run's queue (its worker restarting): a
``waiting(timeout=)`` asks again until its deadline."""


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
    their end (``tool_batch="run_all"``); ``timeout`` does not apply (use Temporal's
    workflow timeouts); a run's events and deltas are followed with ``events`` (from any
    process, with ``event_log=``); a paused run waits for ``answer``; the history
    processor and output validation run in the workflow and must be deterministic.

    Args:
        agent: the agent to run. Its toolsets (MCP servers) are listed once at a run's
            start, by the activity ``golem.toolsets`` (a replay offers the recorded
            tools); each call of one of their tools is a ``golem.tool`` activity, made
            through the worker's toolset (enter it, or the agent, in every worker).
        name: its registration name, the same in every worker (default: ``agent.name``).
        task_queue: the task queue its runs are started on (default ``"golem"``).
        deps: what ``RunContext.deps`` holds for tools and instructions in this process,
            for runs that pass no ``deps=`` of their own (a run's JSON ``deps=`` are
            recorded with it).
        on_event: receives the lifecycle events of the runs this worker executes; a
            replayed run reports its replayed steps again (at least once). It runs inside
            the workflow: it must not await I/O.
        event_log: where its runs publish their events and text deltas as they happen
            (a ``StreamLog``, or the golem SQL store, ``SQLiteHistoryStore`` or
            ``PostgresHistoryStore``, whose log it is), the same database in every
            process: ``events(client, run_id)`` follows a run from any of them (ADR
            0151). Requests then stream; the deltas never enter the workflow's history.
        activity_timeout: the longest one effect (a model request with the adapter's
            retries, a tool call) may take; past it, the effect fails.
        heartbeat_timeout: how soon a worker that died with an effect in flight is
            noticed (the effect is then scheduled again).
        blobs: where conversations and large payloads are stored by reference, shared
            by every process that starts, executes or reads the runs (``SQLiteBlobs``
            on one host, ``SQLBlobs`` on a database); default: this process's memory
            (client and worker in one process). A worker that does not share the
            starter's store fails the run at its start (a handshake blob the starter
            wrote is not in its store), and a result whose blobs this process cannot
            read raises: both ``RunError(stage="history")``, naming ``blobs=``.
        history_events: the event history length past which a run continues as new
            (carrying the head of its journal), so a run of any length keeps its
            history bounded; Temporal's own suggestion also triggers it.
        models: models a run may use, by a name the same in every worker: a run's
            ``model=`` (the name, or the instance) and the agent's own model, when it is
            one of them, are recorded by that name, so a recovered run keeps its model.
        output_types: output types a run may ask for (``output_type=``), by a name the
            same in every worker.

    Raises:
        UsageError: ``agent`` is not an ``Agent``, the name is empty or taken by another
            agent, or a model or output type is not one.
    """

    def __init__(
        self,
        agent: Agent[DepsT, OutputT],
        *,
        name: str | None = None,
        task_queue: str = TASK_QUEUE,
        deps: DepsT | None = None,
        on_event: EventHandler | None = None,
        event_log: StreamLog | StoreMethods | None = None,
        activity_timeout: timedelta = timedelta(minutes=10),
        heartbeat_timeout: timedelta = timedelta(seconds=10),
        blobs: BlobStore | None = None,
        history_events: int = 2000,
        models: Mapping[str, Model] | None = None,
        output_types: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = check_wrapped("TemporalAgent", agent, name, AGENTS)
        self.keywords = Keywords("TemporalAgent", agent, models, output_types)
        if not isinstance(history_events, int) or history_events < 50:
            raise UsageError(
                f"history_events must be an integer of 50 or more, got {history_events!r}"
            )
        self.agent: Agent[DepsT, OutputT] = agent
        self.task_queue = task_queue
        self.deps = deps
        self.on_event = on_event
        self.event_log = _event_log(event_log, "TemporalAgent")
        self.activity_timeout = activity_timeout
        self.heartbeat_timeout = heartbeat_timeout
        self.blobs: BlobStore = blobs if blobs is not None else PROCESS_BLOBS
        self.history_events = history_events
        AGENTS[self.name] = self

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
        output_type: Any = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> str:
        """Start a durable run and return its run id (also its workflow id).

        Args:
            client: a client of the Temporal server.
            prompt: the user's prompt (``None`` continues ``history`` as it is).
            history: the conversation so far (a previous ``result.messages``), of any
                size: it is stored in ``blobs`` and the run carries its head.
            output_type: the run's own output type, one of ``output_types`` (or its
                name); the agent's output validators do not run then.
            **options: the run keywords (``RunOptions``), recorded with the run:
                ``run_id`` (a run id already started is not started again: its existing
                run goes on), ``conversation_id``, ``model`` (a name of ``models``, a
                registered instance or a ``"provider:model"`` string), ``settings``,
                ``usage_limits``, ``deps`` (a JSON value).

        Raises:
            UsageError: a keyword that cannot be recorded (``on_event``, ``steering``,
                an unregistered model or output type, deps that are not JSON), the
                history, prompt or ids are not valid, or Temporal refused to start the
                run (the server's reason is in the message).
        """
        handle = await self._start("start", client, prompt, history, output_type, options)
        return handle.id

    @overload
    async def run(
        self,
        client: Client,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]: ...

    @overload
    async def run(
        self,
        client: Client,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: TypeForm[T],
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[T]: ...

    async def run(
        self,
        client: Client,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: Any = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]:
        """``start`` the run, then wait for its result (see ``result``). With
        ``on_event=`` (and ``event_log=``), its events and deltas, as ``events`` gives
        them, are handed to it meanwhile; it returns once they all were."""
        on_event = options.pop("on_event", None)
        if on_event is not None:
            self._log("run(on_event=...)")
        handle = await self._start("run", client, prompt, history, output_type, options)
        if on_event is None:
            return await self._result_of(handle)
        events = self.events(client, handle.id)
        return await follow_into(self._result_of(handle), events, on_event)

    def _log(self, use: str) -> StreamLog:
        if self.event_log is None:
            raise UsageError(
                f"{use} needs the runs' event log: make the TemporalAgent with"
                " event_log= (the same store in every process of its runs)"
            )
        return self.event_log

    def events(
        self, client: Client, run_id: str, *, after: int = 0
    ) -> AsyncIterator[tuple[int, RunEvent]]:
        """The events of the run ``run_id`` after offset ``after``, as ``(offset, event)``,
        as they happen: as ``DurableAgent.events`` (dense offsets that never change,
        resumable after a disconnect; it ends with the run). They are read from the
        ``event_log``, never from the workflow's history.

        Raises:
            UsageError: the agent has no ``event_log``.
        """
        handle = client.get_workflow_handle(run_id)

        async def ended() -> bool:
            try:
                described = await handle.describe()
            except RPCError:
                return False
            return described.status not in (None, WorkflowExecutionStatus.RUNNING)

        return follow(self._log("events"), run_id, after, ended)

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
            if isinstance(cause, ApplicationError) and cause.type == BROKEN:
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
        try:
            value = unstash(self.blobs, value, "result")
            return result_of("TemporalAgent", self.name, self.keywords.output_of, value, self.blobs)
        except MissingBlob as e:
            raise missing_blob("TemporalAgent", handle.id, e) from e

    async def _start(
        self,
        method: str,
        client: Client,
        prompt: Prompt,
        history: Sequence[Message],
        output_type: Any,
        options: RunOptions[DepsT],
    ) -> WorkflowHandle[Any, Any]:
        recorded = self.keywords.record(method, options, output_type)
        run_id, conversation_id = options.get("run_id"), options.get("conversation_id")
        batch = Batched(self.blobs)  # the history, the prompt and the input: one write
        payload = run_input(prompt, history, run_id, conversation_id, self.blobs, recorded, batch)
        with owned_by(payload["conversationId"]):  # the history holds no content (ADR 0152)
            stashed = {
                "runId": payload["runId"],
                "conversationId": payload["conversationId"],
                "blobs": payload["blobs"],  # a worker of another store fails the run readably
                "input": stash(batch, payload),
            }
            batch.flush()
        try:
            return await client.start_workflow(
                WORKFLOW_NAME,
                args=[self.name, stashed],
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
        wait for the run to pause; within it, a query no worker answers (the run's worker
        restarting: timed out, no poller) is asked again."""
        handle = client.get_workflow_handle(run_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                value = await handle.query(WAITING_QUERY)
            except RPCError as e:  # no worker answers yet (one restarting): ask again
                if e.status not in _NO_WORKER_YET or loop.time() >= deadline:
                    raise
                value = None
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

        When this returns, the run has the message: it takes it, or, when it came after
        the run's last look, gives it back in its result's ``steering_left``
        (``RunError.steering_left`` if it failed); Temporal refuses to complete a run
        while a signal waits, and refuses a signal to a completed run.

        Raises:
            UsageError: the run does not run (there is none, or it ended: the message
                was not taken; start the next run with it), or the prompt is empty.
        """
        payload = stash(self.blobs, MESSAGES[0]((steering_message(prompt),)))
        try:
            await client.get_workflow_handle(run_id).signal(STEER_SIGNAL, payload)
        except RPCError as e:
            raise UsageError(
                f"run {run_id!r} cannot take a steering message ({e.message}): it was"
                " not taken; if the run has ended, start the next run with it"
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
