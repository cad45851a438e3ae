"""The DBOS engine's client side: ``DurableAgent``.

Owns what a process does with a durable run on DBOS: start it (its input, with its
history stored in the agent's blob store and its recorded keywords, here or on a DBOS
queue), read its result, read what a paused run waits for and answer it (the topic
``golem.answers``), and steer it (the topic ``golem.steer``). The workflow that executes
the run is ``_workflow``'s. Register every ``DurableAgent`` (by name) in every worker
process before ``DBOS.launch()``, so a recovered run finds its agent.

How a run maps onto DBOS (ADR 0042, docs/durable.md): the workflow body is the driver,
each effect a recorded step; step outputs, the workflow's input and its result are plain
JSON in golem's message contract, so a run recorded by one version of golem resumes in
the next; conversations go by reference (ADR 0125) to a ``golem_blobs`` table of DBOS's
own system database (or the ``blobs=`` store given). A worker that dies (even by
SIGKILL) and restarts replays the body: recorded effects return their recorded outputs
and are not performed again; an effect that was interrupted mid-flight (not recorded)
is performed again (at least once). The workflow id is the run id.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Generic, TypeVar, overload

import sqlalchemy as sa
from dbos import DBOS, SetWorkflowID, WorkflowHandleAsync
from dbos import error as dbos_error
from dbos._dbos import _get_dbos_instance
from typing_extensions import TypeForm, Unpack

from golem_core import DeferredAnswer, Message, Part
from golem_shell._agent import Agent
from golem_shell._errors import RunError, Stage, UsageError
from golem_shell._results import RunResult
from golem_shell.engines._blobs import BlobStore, MissingBlob, stash, unstash
from golem_shell.engines._collect import GRACE, KEEP_NOTES
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
from golem_shell.engines.dbos._common import (
    AGENTS,
    ANSWERS_TOPIC,
    JSON,
    PORTABLE,
    STEER_CLOSED_EVENT,
    STEER_TOPIC,
    WAITING_EVENT,
    system_blobs,
)
from golem_shell.engines.dbos._retention import Forgotten, forget_runs
from golem_shell.engines.dbos._workflow import durable_run
from golem_shell.models import Model
from golem_shell.observe._observe import EventHandler
from golem_shell.run._event_stream import RunEvent
from golem_shell.run._options import RunOptions
from golem_shell.run._setup import Prompt
from golem_shell.run._steering import steering_message
from golem_shell.store._methods import StoreMethods
from golem_shell.store._streams import StreamLog

__all__ = ["DurableAgent"]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")
T = TypeVar("T")
_POLL_SECONDS = 0.1  # how often a waiting reader checks for a run's result


class DurableAgent(Generic[DepsT, OutputT]):
    """An ``Agent`` whose runs are DBOS workflows: they survive a crashed worker.

    Create one per agent, under a name unique in the process, in every process that
    starts or executes runs, before ``DBOS.launch()``: a worker resuming a run finds its
    agent (model, tools, output type) by that name. Start runs with ``start`` (or
    ``run``, which also waits), here or on a DBOS queue that other workers pull from;
    read the result by run id with ``result``. The run id is the DBOS workflow id:
    starting a run id again does not start a second run.

    The run is driven by the same driver as ``Agent.run`` (``golem_shell.run._driver``),
    with effects that are DBOS steps. What differs: tools of one batch all run to the
    end (``tool_batch="run_all"``: a tool that stops the run does not cancel its
    siblings, so a replay never runs a cancelled tool again); ``timeout`` does not apply
    (use DBOS's workflow timeouts); a run's events and deltas are followed with
    ``events`` (from any process, with ``event_log=``); a paused run does not end but waits for
    ``answer``; the history processor runs once per run as a step (a summarizing one
    calls its model once), output validation runs in the workflow body and must be
    deterministic.

    Args:
        agent: the agent to run. Its toolsets (MCP servers) are listed once at a run's
            start, as a recorded step (a replay offers the recorded tools); each call of
            one of their tools is a recorded ``golem.tool`` step, made through the
            worker's toolset (enter it, or the agent, in every worker).
        name: its registration name, the same in every worker (default: the agent's
            ``name``).
        deps: what ``RunContext.deps`` holds for tools and instructions in this process,
            for runs that pass no ``deps=`` of their own (a run's JSON ``deps=`` are
            recorded with it).
        on_event: receives the lifecycle events of the runs this worker executes (the
            same events as ``Agent.run``'s ``on_event``, from the same driver). A run a
            restarted worker replays reports its replayed steps again (at least once).
        event_log: where its runs publish their events and text deltas as they happen
            (a ``StreamLog``, or the golem SQL store, ``SQLiteHistoryStore`` or
            ``PostgresHistoryStore``, whose log it is), the same database in every
            process: ``events(run_id)`` follows a run from any of them (ADR 0151).
            Requests then stream; the deltas never enter DBOS's records.
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
            agent, or a model or output type is not one.
    """

    def __init__(
        self,
        agent: Agent[DepsT, OutputT],
        *,
        name: str | None = None,
        deps: DepsT | None = None,
        on_event: EventHandler | None = None,
        event_log: StreamLog | StoreMethods | None = None,
        blobs: BlobStore | None = None,
        steerable: bool = False,
        models: Mapping[str, Model] | None = None,
        output_types: Mapping[str, Any] | None = None,
    ) -> None:
        name = check_wrapped("DurableAgent", agent, name, AGENTS)
        self.keywords = Keywords("DurableAgent", agent, models, output_types)
        self.steerable = steerable
        self.agent: Agent[DepsT, OutputT] = agent
        self.name = name
        self.deps = deps
        self.on_event = on_event
        self.event_log = _event_log(event_log, "DurableAgent")
        self.blobs = blobs
        AGENTS[name] = self

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
        """``start`` the run, then wait for its result (see ``result``). With
        ``on_event=`` (and ``event_log=``), its events and deltas, as ``events`` gives
        them, are handed to it meanwhile; it returns once they all were."""
        on_event = options.pop("on_event", None)
        if on_event is not None:
            self._log("run(on_event=...)")
        handle = await self._start("run", prompt, history, output_type, queue, options)
        if on_event is None:
            return await self._result_of(handle)
        events = self.events(handle.get_workflow_id())
        return await follow_into(self._result_of(handle), events, on_event)

    def _log(self, use: str) -> StreamLog:
        if self.event_log is None:
            raise UsageError(
                f"{use} needs the runs' event log: make the DurableAgent with"
                " event_log= (the same store in every process of its runs)"
            )
        return self.event_log

    def events(self, run_id: str, *, after: int = 0) -> AsyncIterator[tuple[int, RunEvent]]:
        """The events of the run ``run_id`` after offset ``after``, as ``(offset, event)``,
        as they happen, wherever the run executes: the events a plain streamed run hands
        its ``on_event`` (lifecycle events, ``DeltaEvent``, ``ToolResultEvent``), read
        from the ``event_log``. Offsets are dense (1, 2, ...) and never change: after a
        disconnect, follow again from the last offset read, and no event is missed or
        repeated. A request executed again after its worker died starts again (a second
        ``RequestStarted`` of that request, then the new answer's deltas). It ends with
        the run (the run's ``RunFinished`` or ``RunFailed`` is the last event).

        Raises:
            UsageError: the agent has no ``event_log``.
        """
        return follow(self._log("events"), run_id, after, lambda: _run_ended(run_id))

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
        try:
            return self._decode_result(value)
        except MissingBlob as e:
            raise missing_blob("DurableAgent", handle.get_workflow_id(), e) from e

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
                return await DBOS.start_workflow_async(durable_run, self.name, payload)
            return await DBOS.enqueue_workflow_async(queue, durable_run, self.name, payload)

    async def forget(
        self,
        older_than: timedelta | float,
        *,
        grace: float = GRACE,
        keep_notes: float = KEEP_NOTES,
    ) -> Forgotten:
        """Delete DBOS's records of this agent's runs that finished more than
        ``older_than`` ago (a ``timedelta`` or seconds), and the blobs only they held.

        A conversation none of whose runs (of any agent) is still recorded stops holding
        its blobs; ``collect`` then deletes the blobs no conversation has held for
        ``grace`` seconds (so a run of it starting meanwhile, which writes its history
        again, keeps what it reads), and the erasure notes older than ``keep_notes``
        seconds. Call it from a periodic job in any process that launched DBOS (ADR
        0154). A forgotten run's ``result`` is gone with it.

        Raises:
            UsageError: a negative age or grace.
        """
        return await forget_runs(self.name, self.store(), older_than, grace, keep_notes)

    async def steer(self, run_id: str, prompt: str | Sequence[Part]) -> None:
        """Send the running run ``run_id`` a message (steering): it joins the run at its
        next safe point (before its next request, or instead of taking its output),
        durably: a restarted worker's replay takes it at the same point.

        When this returns, the run has the message: it takes it, or, when it came after
        the run's last look, the run gives it back in its result's ``steering_left``
        (``RunError.steering_left`` if it failed). A message that reaches a run closing
        its steering is withdrawn (this raises): never lost, never given back twice.

        Raises:
            UsageError: there is no such run, it has ended (the message was not taken:
                start the next run with it), or the prompt is empty.
        """
        message = steering_message(prompt)
        if not self.steerable:
            raise UsageError(
                f"{self!r} takes no steering: make it with DurableAgent(..., steerable=True)"
            )
        status = await DBOS.get_workflow_status_async(run_id)
        if status is None:
            raise UsageError(f"there is no durable run with id {run_id!r}")
        if status.status not in ("PENDING", "ENQUEUED") or await self._closed(run_id):
            raise _ended(run_id, status.status)
        key = f"golem-steer-{uuid.uuid4()}"
        await DBOS.send_async(
            run_id,
            stash(self.store(), MESSAGES[0]((message,))),  # the run holds it once it reads it
            STEER_TOPIC,
            idempotency_key=key,
            serialization_type=PORTABLE,
        )
        state = "closing"
        if not await self._closed(run_id):
            status = await DBOS.get_workflow_status_async(run_id)
            if status is not None and status.status in ("PENDING", "ENQUEUED"):
                return  # sent before the run closed its steering: it takes or drains it
            state = "ended" if status is None else status.status  # it ended otherwise
        if await asyncio.to_thread(_withdraw, run_id, key):
            raise _ended(run_id, state)
        # the run consumed it first: taken, or given back in its result

    async def _closed(self, run_id: str) -> bool:
        """Whether the run ``run_id`` has closed its steering (it is ending)."""
        return bool(await DBOS.get_event_async(run_id, STEER_CLOSED_EVENT, 0))

    async def waiting(self, run_id: str, *, timeout: float = 0.0) -> WaitingCalls:
        """The calls the run ``run_id`` waits for (approval or an external result), with
        the number of the pause they belong to (``WaitingCalls.pause``).

        Empty when the run is not paused. ``timeout`` is how long to wait for the run to
        pause the first time.
        """
        value = await DBOS.get_event_async(run_id, WAITING_EVENT, timeout)
        if not value:
            return WaitingCalls()
        waiting = decode_as(Waiting, unstash(self.store(), value, "waiting"), "waiting")
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
        sent_ref = stash(self.store(), encode(sent))  # the run holds it once it reads it
        await DBOS.send_async(run_id, sent_ref, ANSWERS_TOPIC, serialization_type=PORTABLE)

    def _decode_result(self, value: JSON) -> RunResult[Any]:
        store = self.store()
        value = unstash(store, value, "result")
        return result_of("DurableAgent", self.name, self.keywords.output_of, value, store)


async def _run_ended(run_id: str) -> bool:
    """Whether DBOS says the run ``run_id`` has ended (unknown here: no)."""
    try:
        status = await DBOS.get_workflow_status_async(run_id)
    except Exception:  # DBOS not launched in this process: the stream says when it ends
        return False
    return status is not None and status.status not in ("PENDING", "ENQUEUED")


def _ended(run_id: str, status: str) -> UsageError:
    return UsageError(
        f"run {run_id!r} has ended ({status.lower()}): the steering message was not"
        " taken; start the next run with it"
    )


def _withdraw(run_id: str, key: str) -> bool:
    """Withdraw the steering message sent to ``run_id`` with the idempotency key
    ``key`` if the run has not consumed it (DBOS's ``recv`` marks a message consumed in
    one transaction; this deletes it only while unconsumed: exactly one of the two wins).
    Reads DBOS's system database (its ``notifications`` table): DBOS has no API to
    take a message back."""
    sys_db: Any = _get_dbos_instance()._sys_db
    table = sys_db.tables.notifications
    with sys_db.engine.begin() as connection:
        deleted = connection.execute(
            sa.delete(table).where(
                table.c.destination_uuid == run_id,
                table.c.message_uuid == f"{key}::{run_id}",
                table.c.consumed == False,  # noqa: E712 (SQL, not Python)
            )
        )
    return bool(deleted.rowcount)
