"""The Temporal engine's workflow: ``golem.run`` (``GolemRun``), the run's driver
replayed from its history.

Owns the workflow class (its query ``golem.waiting``, signal ``golem.steer`` and update
``golem.answer``, whose validator runs the core's check), the workflow body (the run's
set-up, the driver, the recorded end), the journal of what an execution consumed (so a
run that continues as new replays the driver over it without performing anything), and
the run's effects as activities (``_TemporalEffects``). Validation and every transition
run here; everything here is deterministic. The workflow is not sandboxed:
``golem_shell`` does effects at import, so it cannot be re-imported in Temporal's sandbox
(``golem_core``, which decides, runs there as it is: ``tests/test_temporal_sandbox.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from golem_core import CompactionRecord, Message, ToolCallPart, failed_outcome
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
from golem_shell._errors import Stage, UsageError, error_type
from golem_shell.engines._blobs import (
    LOG_CHAIN,
    MESSAGE_CHAIN,
    BlobStore,
    Chain,
    extend_chain,
    hold_in_task,
    is_stashed,
    load_chain,
    messages_chain,
    stash,
    unstash,
    unstash_held,
)
from golem_shell.engines._engine import (
    ended,
    foreign_store,
    input_chain,
    recorded_options,
    run_chain,
    set_up,
    unreadable,
    waiting_of,
)
from golem_shell.engines._events import body_handler, close_run_sync
from golem_shell.engines._records import (
    MESSAGES,
    USAGE,
    AnswersSent,
    CorruptRecord,
    InstructionsResolved,
    ProcessorRan,
    RunEnded,
    decode,
    decode_as,
    encode,
)
from golem_shell.engines._toolsets import TOOLSETS_STEP, Listed, Recorder, listing_failed
from golem_shell.engines.temporal._common import (
    ANSWER_UPDATE,
    BROKEN,
    JSON,
    STEER_SIGNAL,
    WAITING_QUERY,
    WORKFLOW_NAME,
    Engine,
    registered,
)
from golem_shell.engines.temporal._perform import performed
from golem_shell.engines.temporal._refs import Batched, Refs
from golem_shell.observe._observe import EventHandler, observe_run
from golem_shell.run._driver import Progress, ToolBatch, run
from golem_shell.run._setup import RunSpec, validate_output
from golem_shell.tools._tools import RunContext

__all__ = ["GolemRun", "payload_of", "run_workflow"]


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
        durable = registered(agent)
        self.agent = agent
        checked = "input" in run  # the ids and handshake inline, the rest by reference
        if checked:
            foreign = foreign_store("TemporalAgent", run, durable.blobs)
            if foreign is not None:  # the input cannot be read here: fail, readably
                return encode(unreadable(durable.name, run, foreign))
            run = run["input"]
        run = unstash(durable.blobs, run, "input")
        # carried over a continue-as-new, before any signalled to this execution already
        self.steered[:0] = run.get("steered", ())
        hold_in_task(run["conversationId"])  # what it stores, its conversation holds
        try:
            result = await run_workflow(durable, run, self, checked)
        except CorruptRecord as e:  # a workflow task failure would be retried without end
            close_run_sync(durable.event_log, run["runId"])
            raise ApplicationError(str(e), type=BROKEN, non_retryable=True) from e
        close_run_sync(durable.event_log, run["runId"])  # not reached when continued as new
        return result

    def _read(self, sent: JSON) -> JSON:
        """Answers as sent, read back from the run's store if they were stashed."""
        return unstash(registered(self.agent).blobs, sent, "answers") if is_stashed(sent) else sent

    @workflow.signal(name=STEER_SIGNAL)
    def steer(self, sent: JSON) -> None:
        """A steering message for the run: taken at its next safe point."""
        self.steered.append(sent)

    def left(self, store: BlobStore) -> tuple[Message, ...]:
        """The steering messages signalled and not taken: the run ends with them in its
        result (``steering_left``). Nothing is lost between this and the end: the run
        completes in the workflow task that calls this, and Temporal refuses to complete
        a workflow while a signal it has not delivered waits (the task is replayed with
        the signal, which the run then takes or gives back here); a signal sent after
        the run completed fails, so ``steer`` raises."""
        sent, self.steered = self.steered, []
        return tuple(
            m for s in sent for m in MESSAGES[1](unstash_held(store, s, "steering"), "steering")
        )

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


async def run_workflow(
    durable: Engine, run_input: JSON, run_: GolemRun, checked: bool = False
) -> JSON:
    """The body of the run ``run_input`` of ``durable`` (deterministic: it replays; its
    handshake ``checked`` already). Its spec is built once, from the run's recorded
    keywords; the activities build theirs from the same record, which their payloads carry."""
    store = durable.blobs
    foreign = None if checked else foreign_store("TemporalAgent", run_input, store)
    if foreign is not None:  # before anything: a client and a worker of other stores
        return encode(unreadable(durable.name, run_input, foreign))  # inline: no content
    try:
        recorded = recorded_options(run_input)
        spec = durable.keywords.spec(recorded)
    except UsageError as e:  # a model or output type this worker does not register
        return _end(store, unreadable(durable.name, run_input, str(e)), run_)
    journal = _Journal(durable, run_input, run_)
    chain = input_chain(run_input, store)

    async def instructions() -> JSON:
        try:  # the payload is made only if performed (never in a replay of the journal)
            return await journal.effect(
                "golem.instructions", lambda: payload_of(durable, run_input)
            )
        except ActivityError as e:
            return encode(InstructionsResolved(failed=f"the activity failed: {e.cause}"))

    async def processor() -> JSON:
        try:
            return await journal.effect(
                "golem.processor", lambda: payload_of(durable, run_input, history=chain.head)
            )
        except ActivityError as e:
            return encode(ProcessorRan(failed=f"the activity failed: {e.cause}"))

    async def toolsets() -> JSON:
        try:
            return await journal.effect(TOOLSETS_STEP, lambda: payload_of(durable, run_input))
        except ActivityError as e:
            return listing_failed(f"the toolsets activity failed: {e.cause}")

    recorder = Recorder(toolsets)
    state = await set_up(
        durable.name, spec, run_input, instructions, processor, store, chain.values, recorder
    )
    if isinstance(state, RunEnded):
        return _end(store, state, run_)
    on_event = durable.on_event
    muted = None if on_event is None else journal.muted(on_event)
    # the event log sees every event (its keys dedupe a replay); written only when new,
    # and not the failure a continue-as-new looks like to the observer
    quiet = lambda: (  # noqa: E731
        journal.replaying or journal.continuing or workflow.unsafe.is_replaying()
    )
    handler = body_handler(durable.event_log, state, muted, sync=True, quiet=quiet)
    progress = Progress(state, observe_run(spec, state, handler))
    deps = durable.keywords.deps(recorded, durable.deps)
    effects = _TemporalEffects(durable, run_, spec, state.config, deps, journal, chain)
    effects.listed = recorder.listed
    try:
        end = await run(progress, effects)
    except CorruptRecord as e:  # a record it needs cannot be read: fail, with the partial
        end = Fail(Stage.HISTORY, str(e), progress.state)
    assert isinstance(end, Finish | Fail)  # a durable run waits instead of pausing
    await workflow.wait_condition(workflow.all_handlers_finished)  # answers told
    output_type = recorded.output_type
    batch = Batched(store)  # the end's chain and record: one write
    result = _end(batch, ended(durable.name, spec, end, batch, effects.chain, output_type), run_)
    batch.flush()
    return result


def _end(store: BlobStore, record: RunEnded, run_: GolemRun) -> JSON:
    """The run's result: its recorded end, with the steering messages it did not take."""
    return stash(store, encode(attrs.evolve(record, steering_left=run_.left(store))))


def payload_of(durable: Engine, run_input: JSON, **more: JSON) -> JSON:
    """An activity's payload: the agent's name, the run's ids, its recorded keywords
    (every activity builds the run's spec from them) and ``more``."""
    carried = {"options": run_input["options"]} if "options" in run_input else {}
    return {
        "agent": durable.name,
        "runId": run_input["runId"],
        "conversationId": run_input["conversationId"],
        **carried,
        **more,
    }


class _Journal:
    """What a run's execution consumed, in the order it asked for it: every activity's
    result and every accepted answer (``entries``, by sequence number), so a run that
    continues as new replays the driver over them without performing anything.

    The entries of earlier executions arrive as the head of a chain in the run's input
    (``"journal"``); the driver asks for effects in a deterministic order (the request,
    then a batch's calls in call order), so entry ``n`` is the answer to the ``n``-th
    ask of every execution."""

    def __init__(self, durable: Engine, run_input: JSON, run_: GolemRun) -> None:
        self.durable = durable
        self.run = run_
        self.run_input = run_input
        self.earlier: Chain[JSON] = load_chain(
            durable.blobs, LOG_CHAIN, run_input.get("journal"), "journal"
        )
        self.entries: dict[int, JSON] = dict(enumerate(self.earlier.values))
        self.asked = 0
        self.last: JSON = None  # the last effect's entry, as recorded
        self.pending: Batched | None = None  # what payloads stored, not written yet
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

    async def effect(
        self, name: str, payload: JSON | Callable[[], JSON], inline: bool = False
    ) -> JSON:
        """The result of the activity ``name`` for the next ask: the journal's, or the
        activity's (performed now and journaled). A ``payload`` given as a function is
        made only when the activity is performed: replaying an earlier execution's
        journal then stores nothing and hashes nothing, so a run that continues as new
        after many steps takes its first workflow task in time (Temporal fails a task
        that runs 2 s without yielding, and retries it, over and over)."""
        number = self.ask()
        if number in self.entries:
            self.last = self.entries[number]
            return unstash(self.durable.blobs, self.last, "journal")
        if callable(payload):
            payload = payload()
        if self.pending is not None:
            self.pending.flush()  # what the payload names is stored, in one write
        # journaled as the activity returned it (a reference), not encoded again
        self.last = await performed(self.durable, name, payload, inline)
        self.entries[number] = self.last
        return unstash(self.durable.blobs, self.last, name)

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
        carried = {
            **self.run_input,
            "journal": head,
            "events": max(self.seen, self.reported),
            "steered": self.run.steered,  # signalled, not taken yet: the next takes them
        }
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
        durable: Engine,
        run_: GolemRun,
        spec: RunSpec,
        config: RunConfig,
        deps: Any,
        journal: _Journal,
        chain: Chain[Message],
    ) -> None:
        self.durable = durable
        self.run = run_
        self.spec = spec
        self.run_config = config
        self.deps = deps
        self.journal = journal
        self.chain = chain
        self.cause: BaseException | None = None
        self.listed = Listed()  # the run's toolsets' tools, as recorded at its start
        self.streaming = durable.event_log is not None  # its deltas go to the event log
        # a request's and a tool call's payload: inline, what it stores in one write
        self.pending = Batched(durable.blobs)
        self.refs = Refs(self.pending)
        journal.pending = self.pending

    def _ids(self, state: RunState) -> JSON:
        config, run_input = state.config, self.journal.run_input
        ids = {"runId": config.run_id, "conversationId": config.conversation_id}
        if "options" in run_input:
            ids["options"] = self.refs.kept("options", run_input["options"])
        return ids

    def _head(self, state: RunState) -> str | None:
        """The head of the run's conversation (``history + added``), stored."""
        self.chain = run_chain(self.pending, state, self.chain)
        return self.chain.head

    def _since(self, state: RunState) -> JSON:
        """The run's conversation as the stored head of the last request's and the
        messages added since (the step's response), inline: a tool batch's payload
        stores nothing, and the next request stores the step's messages in one write."""
        known = self.chain.values
        messages = state.history + state.added
        if len(messages) < len(known) or messages[: len(known)] != known:
            return {"history": self._head(state)}  # not a continuation: stored
        added = messages[len(known) :]
        ids = (state.config.run_id, state.config.conversation_id)
        return {"history": self.chain.head, **(self.refs.added(added, ids) if added else {})}

    async def request(self, command: RequestModel, state: RunState) -> ModelResponded | ModelFailed:
        if self.journal.due():
            await self.journal.continue_as_new()

        def payload() -> JSON:
            # the messages are named by the chain's head: never unstructured here (that
            # was the one cost of a step that grew with the conversation)
            if self.spec.tools or self.spec.toolsets:  # for its tool calls: the same write
                self.refs.kept("system", state.system, MESSAGES[0])
            return payload_of(
                self.durable,
                self._ids(state),
                request=self.refs.set_up(command.request),  # the agent's, by reference
                requestIds=[command.request.run_id, command.request.conversation_id],
                history=self._head(state),
                requests=state.requests,
            )

        try:
            recorded = await self.journal.effect("golem.request", payload, inline=True)
        except ActivityError as e:
            return ModelFailed(f"the model request activity failed: {e.cause or e}")
        outcome = decode(unstash(self.durable.blobs, recorded, "model outcome"), "model outcome")
        if not isinstance(outcome, ModelResponded | ModelFailed):
            raise CorruptRecord(f"model outcome: got a {type(outcome).__name__}")
        message = outcome.message if isinstance(outcome, ModelResponded) else None
        self.refs.responded(message, self.journal.last)  # a tool payload names it
        return outcome

    def tools(self, calls: Sequence[ToolCallPart], state: RunState) -> list[Awaitable[ToolOutcome]]:
        made: list[JSON] = []

        def shared() -> JSON:  # made once, when the batch's first call is performed
            if not made:
                made.append(
                    payload_of(
                        self.durable,
                        self._ids(state),
                        system=self.refs.kept("system", state.system, MESSAGES[0]),
                        **self._since(state),
                        usage=USAGE[0](state.usage),
                        requests=state.requests,
                    )
                )
            return made[0]

        async def one(call: ToolCallPart) -> ToolOutcome:
            try:
                recorded = await self.journal.effect(
                    "golem.tool",
                    lambda: {**shared(), **self.refs.call(call, self.listed.carried(call.name))},
                    inline=True,
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
                for m in MESSAGES[1](unstash_held(self.durable.blobs, s, "steering"), "steering")
            )
            # none taken: nothing to store (a step took none, mostly)
            entry = stash(self.durable.blobs, MESSAGES[0](messages)) if messages else []
            self.journal.entries[number] = entry
            return messages
        taken: tuple[Message, ...] = MESSAGES[1](
            unstash(self.durable.blobs, journaled, "journal"), "journal"
        )
        return taken

    async def compact(
        self, command: CompactHistory, state: RunState
    ) -> HistoryCompacted | CompactionDeclined:
        """Compact and retry's one compaction (ADR 0141), an activity."""

        def payload() -> JSON:  # made only if performed: a replay stores and hashes nothing
            history = messages_chain(self.durable.blobs, command.history).head
            return payload_of(
                self.durable,
                self._ids(state),
                history=history,
                keep=command.keep,
                reason=command.reason,
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
        context = RunContext(self.deps, config.run_id, config.conversation_id)
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
