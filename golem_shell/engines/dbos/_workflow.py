"""The DBOS engine's workflow: ``golem.run``, the run's driver replayed from its steps.

Owns the workflow function (it finds the run's agent by name and runs the body), the
body (the run's spec built once from its recorded keywords, its set-up, the driver, the
recorded end) and the run's effects as DBOS steps, each recorded before the run moves
on: ``golem.instructions`` (dynamic instructions, for an agent that has them),
``golem.toolsets`` (the tool list of the agent's toolsets, for an agent that has them),
``golem.processor`` (the history processor, once per run), ``golem.compact`` (compact and
retry's one compaction), ``golem.request`` (one model request, the adapter's retries
inside; DBOS never retries a step) and ``golem.tool`` (one tool call; a batch's calls run
concurrently, each its own step, at step ids reserved in call order). Validation and
every transition run in the body. A paused run publishes its waiting calls as the event
``golem.waiting`` and receives answers on the topic ``golem.answers``; a steerable run
takes steering messages from ``golem.steer`` and, at its end, sets
``golem.steer.closed`` and gives back what it did not take (``run_workflow``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
from dbos import DBOS

from golem_core import Message, ToolCallPart
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
from golem_shell._errors import UsageError
from golem_shell.engines._blobs import (
    BlobStore,
    Chain,
    MissingBlob,
    owned_by,
    stash,
    unstash,
    unstash_held,
)
from golem_shell.engines._engine import (
    ended,
    foreign_store,
    input_chain,
    recorded_options,
    resolve_instructions,
    run_processor,
    set_up,
    unreadable,
    waiting_of,
)
from golem_shell.engines._events import body_handler, close_run, request_streamed
from golem_shell.engines._records import (
    MESSAGES,
    AnswersSent,
    CorruptRecord,
    RunEnded,
    decode,
    decode_as,
    encode,
)
from golem_shell.engines._toolsets import (
    TOOLSETS_STEP,
    Listed,
    Recorder,
    list_toolsets,
    toolset_tool,
)
from golem_shell.engines.dbos._common import (
    ANSWERS_TOPIC,
    JSON,
    PORTABLE,
    REJECTED_EVENT,
    STEER_CLOSED_EVENT,
    STEER_TOPIC,
    WAIT_SECONDS,
    WAITING_EVENT,
    WORKFLOW_NAME,
    Engine,
    lookup,
    step,
)
from golem_shell.observe._observe import observe_run
from golem_shell.run._asyncio import AgentEffects
from golem_shell.run._driver import Progress, ToolBatch, run
from golem_shell.run._setup import RunSpec, compact_once, validate_output
from golem_shell.store._streams import StreamLog
from golem_shell.tools._tools import RunContext

__all__ = ["durable_run", "run_workflow"]


@DBOS.workflow(name=WORKFLOW_NAME, serialization_type=PORTABLE)
async def durable_run(agent: str, run: dict[str, Any]) -> JSON:
    """One durable run of the agent registered as ``agent``; ``run`` is its JSON input."""
    durable = await lookup(agent)
    return await run_workflow(durable, run)


async def run_workflow(durable: Engine, recorded_input: JSON) -> JSON:
    """The body of the run ``recorded_input`` of ``durable`` (deterministic: it replays).
    Its spec is built once, from the run's recorded keywords; every step receives it.

    A steerable run closes its steering at its end, however it ends: it sets the event
    ``golem.steer.closed``, then drains its topic (recorded ``recv`` steps) into the
    result's ``steering_left``. A message ``steer`` sent before the event was set is
    drained; one sent after finds the event set and is withdrawn by ``steer`` (or was
    drained first): never lost, never both taken and given back."""
    store = durable.store()
    with owned_by(recorded_input["conversationId"]):  # what it stores, the run's conversation holds
        record = await _body(durable, recorded_input)
        if durable.steerable:
            await DBOS.set_event_async(STEER_CLOSED_EVENT, True, serialization_type=PORTABLE)
            record = attrs.evolve(record, steering_left=await _drain(store))
        await close_run(durable.event_log, recorded_input["runId"])
        if record.stage == "history" and not (
            record.history or record.messages or record.system or record.steering_left
        ):
            return encode(record)  # unreadable here: inline (no content) for any reader
        return stash(store, encode(record))  # DBOS records hashes only (ADR 0152)


async def _drain(store: BlobStore) -> tuple[Message, ...]:
    """The steering messages sent to the run and not taken yet (each ``recv`` recorded:
    a replay takes the same ones)."""
    taken: list[Message] = []
    while True:
        sent = await DBOS.recv_async(STEER_TOPIC, timeout_seconds=0)
        if sent is None:
            return tuple(taken)
        taken.extend(MESSAGES[1](unstash_held(store, sent, "steering"), "steering"))


async def _body(durable: Engine, recorded_input: JSON) -> RunEnded:
    store = durable.store()
    foreign = foreign_store("DurableAgent", recorded_input, store)
    if foreign is not None:  # before anything: a starter and a worker of other stores
        return unreadable(durable.name, recorded_input, foreign)
    try:  # the spec is built once, from the run's recorded keywords
        recorded = recorded_options(recorded_input)
        spec = durable.keywords.spec(recorded)
    except (CorruptRecord, UsageError) as e:
        return unreadable(durable.name, recorded_input, str(e))
    deps = durable.keywords.deps(recorded, durable.deps)
    context: RunContext[Any] = RunContext(
        deps, recorded_input["runId"], recorded_input["conversationId"]
    )
    recorder = Recorder(
        lambda: DBOS.run_step_async(step(TOOLSETS_STEP), list_toolsets, spec, context)
    )
    try:  # reading a blob by its key is as deterministic as the key (ADR 0125)
        chain = input_chain(recorded_input, store)
        state = await set_up(
            durable.name,
            spec,
            recorded_input,
            lambda: DBOS.run_step_async(
                step("golem.instructions"), resolve_instructions, spec, context
            ),
            lambda: DBOS.run_step_async(
                step("golem.processor"), run_processor, spec, chain.values, store
            ),
            store,
            chain.values,
            recorder,
        )
    except MissingBlob as e:
        state = unreadable(durable.name, recorded_input, str(e))
    if isinstance(state, RunEnded):
        return state
    handler = body_handler(durable.event_log, state, durable.on_event)
    progress = Progress(state, observe_run(spec, state, handler))
    end = await run(progress, _DBOSEffects(durable, spec, context, recorder.listed))
    assert not isinstance(end, Pause)  # a durable run waits instead of pausing
    known: Chain[Any] = chain if spec.processor is None else Chain()
    return ended(durable.name, spec, end, store, known, recorded.output_type)


# -- the steps (each output is recorded; none is retried by DBOS; each reads the run's spec)


async def _request_step(
    spec: RunSpec,
    command: RequestModel,
    state: RunState,
    store: BlobStore,
    log: StreamLog | None = None,
) -> JSON:
    if log is not None:  # streamed: its deltas go to the run's event stream (ADR 0151)
        return stash(store, encode(await request_streamed(log, spec, command, state)))
    effects = AgentEffects(spec, _NO_CONTEXT, None)
    return stash(store, encode(await effects.request(command, state)))


async def _tool_step(
    spec: RunSpec,
    call: ToolCallPart,
    state: RunState,
    context: RunContext[Any],
    entry: JSON,
    store: BlobStore,
) -> JSON:
    await toolset_tool(spec, context, call.name, entry)  # a toolset's: from the record
    (work,) = AgentEffects(spec, context, None).tools((call,), state)
    return stash(store, encode(await work))


async def _compact_step(spec: RunSpec, command: CompactHistory, store: BlobStore) -> JSON:
    return stash(store, encode(await compact_once(spec, command)))


_NO_CONTEXT: RunContext[Any] = RunContext(None, "", "")


class _DBOSEffects:
    """A durable run's effects: each model request and each tool call is a DBOS step
    (recorded before the run moves on, replayed from the record after a crash); a paused
    run publishes what it waits for and receives answers on a topic, durably."""

    tool_batch: ToolBatch = "run_all"
    streaming = False

    def __init__(
        self, durable: Engine, spec: RunSpec, context: RunContext[Any], listed: Listed
    ) -> None:
        self.durable = durable
        self.listed = listed
        self.spec = spec
        self.context = context
        # the driver asks only a steerable run (each look is two recorded DBOS steps)
        self.steering: Callable[[RunState], Awaitable[tuple[Message, ...]]] | None = (
            self._steering if durable.steerable else None
        )
        self.cause: BaseException | None = None
        self.streaming = durable.event_log is not None  # its deltas go to the event log
        self.store = durable.store()

    async def request(self, command: RequestModel, state: RunState) -> ModelResponded | ModelFailed:
        recorded = await DBOS.run_step_async(
            step("golem.request"),
            _request_step,
            self.spec,
            command,
            state,
            self.store,
            self.durable.event_log,
        )
        outcome = decode(unstash(self.store, recorded, "model outcome"), "model outcome")
        if not isinstance(outcome, ModelResponded | ModelFailed):
            raise CorruptRecord(f"model outcome: got a {type(outcome).__name__}")
        return outcome

    def tools(self, calls: Sequence[ToolCallPart], state: RunState) -> list[Awaitable[ToolOutcome]]:
        reserved = [DBOS.reserve_step() for _ in calls]  # step ids in call order

        async def one(reserved: Any, call: ToolCallPart) -> ToolOutcome:
            recorded = await reserved.run_async(
                step("golem.tool"),
                _tool_step,
                self.spec,
                call,
                state,
                self.context,
                self.listed.entry(call.name),
                self.store,
            )
            outcome: ToolOutcome = decode(
                unstash(self.store, recorded, "tool outcome"), "tool outcome"
            )
            return outcome

        return [one(r, c) for r, c in zip(reserved, calls, strict=True)]

    async def validate(self, candidate: ToolCallPart | Message) -> OutputValid | OutputInvalid:
        return await validate_output(self.spec, candidate, self.context)

    async def _steering(self, state: RunState) -> tuple[Message, ...]:
        """The steering messages sent to the run since it last looked (``recv`` is
        recorded: a replay takes the same ones at the same point)."""
        return await _drain(self.store)

    async def compact(
        self, command: CompactHistory, state: RunState
    ) -> HistoryCompacted | CompactionDeclined:
        """Compact and retry's one compaction (ADR 0141), a step: a summarizing
        processor's model call is made once and replayed from the record."""
        recorded = await DBOS.run_step_async(
            step("golem.compact"), _compact_step, self.spec, command, self.store
        )
        outcome = decode(unstash(self.store, recorded, "compaction"), "compaction")
        if not isinstance(outcome, HistoryCompacted | CompactionDeclined):
            raise CorruptRecord(f"compaction: got a {type(outcome).__name__}")
        return outcome

    async def wait(self, paused: RunState) -> Answered:
        """Publish the waiting calls (and why earlier answers were refused), then receive
        answers until some fit this pause; the run goes on in the same workflow."""
        waiting = waiting_of(paused)
        published = stash(self.store, encode(waiting))
        await DBOS.set_event_async(WAITING_EVENT, published, serialization_type=PORTABLE)
        while True:
            message = await DBOS.recv_async(ANSWERS_TOPIC, timeout_seconds=WAIT_SECONDS)
            if message is None:
                continue
            try:
                sent = decode_as(
                    AnswersSent, unstash_held(self.store, message, "answers"), "answers"
                )
            except CorruptRecord as e:
                reason = f"answers that cannot be read: {e}"
            else:
                answered = Answered(sent.answers, pause=sent.pause)
                rejected = check_resume(paused, answered)
                if rejected is None:
                    await DBOS.set_event_async(WAITING_EVENT, None, serialization_type=PORTABLE)
                    return answered
                reason = str(rejected)
            await DBOS.set_event_async(REJECTED_EVENT, reason, serialization_type=PORTABLE)
