"""What every durable engine does the same way around the driver: input, first state, end.

Owns the engine-neutral parts of a durable run (DBOS in ``golem_shell.durable``, Temporal
in ``golem_shell.temporal``, a third engine next): checking the agent an engine wraps,
the JSON input a run is started with (its recorded keywords among it, which
``golem_shell.engines._keywords`` builds the run's spec from), resolving dynamic
instructions as a recorded value, the run's first state (built inside the workflow body,
deterministically), the recorded end of a run (``RunEnded``) made from the driver's last
command, and the ``RunResult`` (or ``RunError``) read back from it. An engine adds only
how it records effects and how a paused run receives its answers.

Conversations go by reference (ADR 0125): the input, the processor's outcome and the end
hold the head of a chain of messages in the engine's ``BlobStore``
(``golem_shell.engines._blobs``), never the messages, so what an engine records per run is
bounded by what the run adds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeAlias

from returns.result import Failure, Success

from golem_core import (
    Approved,
    DeferredAnswer,
    Denied,
    ExternalResult,
    Message,
    Role,
    join_instructions,
)
from golem_core.loop import DeferredCall, Fail, Finish, RunState, ToolSpec, check_answers
from golem_shell._agent import Agent
from golem_shell._errors import (
    DeferredResultsError,
    PartialResult,
    RunError,
    Stage,
    UsageError,
)
from golem_shell._results import RunResult, partial_of
from golem_shell.engines._blobs import (
    MESSAGE_CHAIN,
    BlobStore,
    Chain,
    ErasedBlob,
    handshake,
    load_chain,
    messages_chain,
    owned_by,
    shares_store,
    stash,
    unstash,
)
from golem_shell.engines._records import (
    MESSAGES,
    PARTS,
    AnswersSent,
    CorruptRecord,
    InstructionsResolved,
    ProcessorRan,
    RecordedOptions,
    RunEnded,
    Waiting,
    decode_as,
    encode,
)
from golem_shell.engines._toolsets import Listed
from golem_shell.run._checks import check_history
from golem_shell.run._setup import (
    Processed,
    Prompt,
    RunSpec,
    process_history,
    prompt_parts,
    run_config,
    run_ids,
)
from golem_shell.run._setup import first_state as spec_first_state
from golem_shell.run._setup import resolve_instructions as spec_instructions
from golem_shell.tools._output import Output
from golem_shell.tools._schema import ValidationFailed, validate
from golem_shell.tools._tools import RunContext

__all__ = [
    "WaitingCalls",
    "answers_to_send",
    "check_wrapped",
    "ended",
    "ended_messages",
    "first_state",
    "foreign_store",
    "input_chain",
    "input_history",
    "instructions_failed",
    "missing_blob",
    "processed_of",
    "recorded_options",
    "resolve_instructions",
    "result_of",
    "run_chain",
    "run_input",
    "run_processor",
    "set_up",
    "static_instructions",
    "toolsets_failed",
    "unreadable",
    "waiting_of",
]

JSON: TypeAlias = Any


class WaitingCalls(tuple[DeferredCall, ...]):
    """The calls a paused run waits for (a tuple), and ``pause``: which pause of the run
    they belong to (0 when the run does not wait). Pass it to ``answer(..., pause=)``
    (the value itself, or its ``pause``) so the answers apply to this pause and never to
    a later one. ``repeated``: waiting call ids that an earlier, answered call had too
    (answers to them must name the pause)."""

    pause: int
    repeated: tuple[str, ...]

    def __new__(
        cls, calls: Sequence[DeferredCall] = (), pause: int = 0, repeated: Sequence[str] = ()
    ) -> WaitingCalls:
        made = super().__new__(cls, calls)
        made.pause = pause
        made.repeated = tuple(repeated)
        return made

    @classmethod
    def of(cls, waiting: Waiting) -> WaitingCalls:
        """The calls a recorded ``Waiting`` value names."""
        return cls(waiting.calls, waiting.pause, waiting.repeated)


def waiting_of(paused: RunState) -> Waiting:
    """What a paused run publishes: its waiting calls, the pause's number, and which of
    their ids an earlier, answered call of the run had too."""
    answered = {m.tool_call_id for m in paused.messages if m.role is Role.TOOL}
    repeated = tuple(
        str(d.call.id) for d in paused.deferred if d.call.id is not None and d.call.id in answered
    )
    return Waiting(paused.pauses, paused.deferred, repeated)


def check_wrapped(
    wrapper: str, agent: object, name: str | None, registry: Mapping[str, Any]
) -> str:
    """The registration name of ``agent`` wrapped by an engine's ``wrapper`` class.

    Raises:
        UsageError: ``agent`` is not an ``Agent``, the name is empty or taken by another
            agent in ``registry``.
    """
    if not isinstance(agent, Agent):
        raise UsageError(f"{wrapper} wraps an Agent, not {type(agent).__name__}")
    name = name if name is not None else agent.name
    if not isinstance(name, str) or not name:
        raise UsageError(
            f"a {wrapper} needs a non-empty name (name=, or Agent(name=)), got {name!r}"
        )
    taken = registry.get(name)
    if taken is not None and taken.agent is not agent:
        raise UsageError(f"a {wrapper} named {name!r} is already registered")
    return name


def answers_to_send(
    run_id: str,
    answers: Mapping[str, DeferredAnswer],
    waiting: WaitingCalls,
    pause: int | WaitingCalls | None,
) -> AnswersSent:
    """The answers to send to the paused run ``run_id``, bound to ``pause`` (a number,
    or the ``WaitingCalls`` the person answering saw; default: the pause it is in now,
    ``waiting.pause``), checked against what it waits for.

    An answer that names no pause may not answer a call whose id an earlier, answered
    call of the run had too: it may be a retry of the answer to that earlier call, and
    would approve a call nobody saw.

    Raises:
        UsageError: an answer is not ``Approved``, ``Denied`` or ``ExternalResult``.
        DeferredResultsError: the run does not wait, the pause is over (a repeated or
            stale answer), an answer that names no pause names a repeated call id, or
            the answers do not fit the waiting calls (an unknown call, the wrong kind of
            answer).
    """
    if isinstance(pause, WaitingCalls):
        pause = pause.pause
    for call_id, answer in answers.items():
        if not isinstance(answer, Approved | Denied | ExternalResult):
            raise UsageError(
                f"the answer for call {call_id!r} is a {type(answer).__name__}; answer with"
                " Approved(), Denied(reason) or ExternalResult(parts)"
            )
    if pause is not None and pause != waiting.pause:
        raise DeferredResultsError(
            f"these answers are for pause {pause} of run {run_id!r}, which is "
            + (f"now at pause {waiting.pause}" if waiting else "not waiting now")
            + ": a repeated or stale answer is not applied",
            tuple(sorted(answers)),
        )
    if not waiting:
        raise DeferredResultsError(
            f"run {run_id!r} is not waiting for answers", tuple(sorted(answers))
        )
    ambiguous = sorted(i for i in answers if i in waiting.repeated) if pause is None else []
    if ambiguous:
        raise DeferredResultsError(
            f"call {', '.join(map(repr, ambiguous))} of run {run_id!r} has the id of a call"
            " answered at an earlier pause: this may be a retry of that answer, so it is"
            f" not applied; name the pause to answer the new call (pause={waiting.pause},"
            " or pass the WaitingCalls you showed)",
            tuple(ambiguous),
        )
    error = check_answers(waiting, answers)
    if error is not None:
        raise DeferredResultsError(str(error), error.call_ids)
    return AnswersSent(waiting.pause, dict(answers))


def run_input(
    prompt: Prompt,
    history: Sequence[Message],
    run_id: str | None,
    conversation_id: str | None,
    store: BlobStore,
    options: RecordedOptions,
    writes: BlobStore | None = None,
) -> JSON:
    """The JSON a durable run starts from: ids (checked as ``Agent`` checks them), the
    head of the history's chain (stored in ``store`` here, once per message: a message a previous
    run stored is not written again; or in ``writes``, a batch of ``store``'s writes the
    caller flushes), the prompt, the time it was submitted (the prompt message's time)
    and the run's recorded keywords (``golem_shell.engines._keywords``). The history and
    the prompt are stored held by the conversation; the input holds their references."""
    history, parts, writes = check_history(history), prompt_parts(prompt), writes or store
    run_id, conversation_id = run_ids(history, run_id, conversation_id)
    with owned_by(conversation_id):  # erasing the conversation erases them (ADR 0152)
        head = messages_chain(writes, history).head
        prompt = None if parts is None else stash(writes, PARTS[0](parts))
    return {
        "runId": run_id,
        "conversationId": conversation_id,
        "historyHead": head,
        "prompt": prompt,
        "now": datetime.now(UTC).isoformat(),
        "options": encode(options),
        "blobs": handshake(store),
    }


def foreign_store(wrapper: str, run_input: JSON, store: BlobStore) -> str | None:
    """Why the worker whose blob store is ``store`` cannot execute the run
    ``run_input`` (its starter wrote its handshake blob to another store), or ``None``
    (the same store, or a run started before handshakes)."""
    key = run_input.get("blobs")
    if key is None or shares_store(store, key):
        return None
    return (
        f"this worker's blob store ({store!r}) is not the one the run was started with:"
        f" every process that starts, executes or reads a {wrapper}'s runs needs the same"
        f" store; pass the same blobs= (SQLiteBlobs on one host, SQLBlobs on a database)"
        " to it in each (the default of a TemporalAgent, this process's memory, serves a"
        " client and a worker in one process only)"
    )


def recorded_options(run_input: JSON) -> RecordedOptions:
    """The keywords a run's input recorded (none: a run started before they were)."""
    return decode_as(RecordedOptions, run_input.get("options", {"type": "options"}), "options")


async def resolve_instructions(spec: RunSpec, context: RunContext[Any]) -> JSON:
    """The recorded value of resolving the run's dynamic instructions (an effect)."""
    try:
        resolved = InstructionsResolved(await spec_instructions(spec, context))
    except Exception as e:
        resolved = InstructionsResolved(failed=f"resolving the instructions failed: {e}")
    return encode(resolved)


def input_chain(run_input: JSON, store: BlobStore) -> Chain[Message]:
    """The history a run was started with (its recorded input), as a stored chain.

    Raises:
        MissingBlob: the history's chain is not in ``store`` (another store than the
            starter's).
    """
    if "history" in run_input:  # recorded inline, before ADR 0125
        return messages_chain(store, MESSAGES[1](run_input["history"], "history"))
    return load_chain(store, MESSAGE_CHAIN, run_input["historyHead"], "history")


def input_history(run_input: JSON, store: BlobStore) -> tuple[Message, ...]:
    """The history a run was started with (see ``input_chain``)."""
    return input_chain(run_input, store).values


def run_chain(store: BlobStore, state: RunState, known: Chain[Message]) -> Chain[Message]:
    """The run's conversation without its instructions (``history + added``, what a
    model request sends), stored, reusing ``known``'s nodes for the shared prefix."""
    return messages_chain(store, state.history + state.added, known)


async def run_processor(spec: RunSpec, history: Sequence[Message], store: BlobStore) -> JSON:
    """The recorded value of running the history processor once on the run's supplied
    history (an effect: ``summarize_history`` calls a model); replayed from the record.
    The processed history is stored in ``store``; the record holds its head."""
    match await process_history(spec, history):
        case Success(processed) if isinstance(processed, tuple | list) and all(
            type(m) is Message for m in processed
        ):
            return encode(ProcessorRan(history=messages_chain(store, processed).head or ""))
        case Failure(error):
            return encode(ProcessorRan(failed=str(error)))
        case other:
            return encode(
                ProcessorRan(
                    failed=f"it returned {type(other).__name__}, not Success(messages)"
                    " (a sequence of Message) or Failure(error)"
                )
            )


def processed_of(recorded: JSON, store: BlobStore) -> Processed:
    """The processor's outcome a recorded ``run_processor`` value stands for.

    Raises:
        MissingBlob: the processed history is not in ``store``.
    """
    ran = decode_as(ProcessorRan, recorded, "processor")
    if ran.failed is not None:
        return Failure(ran.failed)
    if ran.history is not None:
        return Success(load_chain(store, MESSAGE_CHAIN, ran.history or None, "processed").values)
    return Success(ran.messages or ())


def missing_blob(wrapper: str, run_id: str, error: Exception) -> RunError:
    """What a caller reading the run ``run_id`` gets when a blob of it is not in this
    process's store: the run's records cannot be read here (stage ``history``)."""
    if isinstance(error, ErasedBlob):
        return RunError(
            Stage.HISTORY,
            f"the durable run {run_id!r} cannot be read: content it needs was erased: {error}",
            cause=error,
        )
    return RunError(
        Stage.HISTORY,
        f"the durable run {run_id!r} cannot be read with this {wrapper}'s blob store: {error}"
        " (every process that starts, executes or reads its runs needs the same blobs=)",
        cause=error,
    )


def unreadable(name: str, run_input: JSON, reason: str) -> RunEnded:
    """The end of a run whose records this worker cannot read: a blob another store
    holds, a recorded model or output type it does not register (stage ``history``)."""
    return RunEnded(
        name,
        "failed",
        run_input["runId"],
        run_input["conversationId"],
        stage=Stage.HISTORY.value,
        reason=reason,
    )


def instructions_failed(name: str, run_input: JSON, reason: str) -> RunEnded:
    """The end of a run whose instructions could not be resolved (nothing done yet)."""
    return RunEnded(
        name,
        "failed",
        run_input["runId"],
        run_input["conversationId"],
        stage=Stage.INSTRUCTIONS.value,
        reason=reason,
    )


def toolsets_failed(name: str, run_input: JSON, reason: str) -> RunEnded:
    """The end of a run whose toolsets could not be listed (nothing done yet)."""
    return RunEnded(
        name,
        "failed",
        run_input["runId"],
        run_input["conversationId"],
        stage=Stage.TOOL.value,
        reason=reason,
    )


def first_state(
    spec: RunSpec,
    run_input: JSON,
    instructions: str | None,
    processed: Processed,
    history: Sequence[Message],
    toolset_specs: tuple[ToolSpec, ...] = (),
) -> RunState:
    """The run's first state, from its input and ``history`` (``input_history``),
    resolved instructions, the processor's recorded outcome and its toolsets' recorded
    tools (deterministic: the prompt's time is the recorded submission time)."""
    prompt = None if run_input["prompt"] is None else PARTS[1](run_input["prompt"], "prompt")
    ids = run_input["runId"], run_input["conversationId"]
    config = run_config(spec, *ids, instructions, toolset_specs)
    now = datetime.fromisoformat(run_input["now"])
    return spec_first_state(spec, config, history, prompt, processed, now)


async def set_up(
    name: str,
    spec: RunSpec,
    run_input: JSON,
    instructions: Callable[[], Awaitable[JSON]],
    processor: Callable[[], Awaitable[JSON]],
    store: BlobStore,
    history: Sequence[Message],
    toolsets: Callable[[], Awaitable[JSON]] | None = None,
) -> RunState | RunEnded:
    """The run's first state, its set-up effects performed as the engine records them:
    ``instructions`` (a recorded ``resolve_instructions``, only when the spec has
    dynamic ones), ``toolsets`` (a recorded ``list_toolsets``, only when it has
    toolsets) and ``processor`` (a recorded ``run_processor``, only when it has a
    processor); or the run's end when its instructions could not be resolved or its
    toolsets not listed (stage ``tool``).
    ``history`` is the run's input history (``input_history``).

    Raises:
        MissingBlob: the processed history or the prompt is not in ``store``.
    """
    text = static_instructions(spec)
    if spec.dynamic_instructions is not None:
        resolved = decode_as(InstructionsResolved, await instructions(), "instructions")
        if resolved.failed is not None:
            return instructions_failed(name, run_input, resolved.failed)
        text = resolved.instructions
    listed = Listed()
    if spec.toolsets and toolsets is not None:  # the tool list, as recorded at the start
        listed = Listed.of(await toolsets())
        if listed.failed is not None:
            return toolsets_failed(name, run_input, listed.failed)
    processed: Processed = None
    if spec.processor is not None:  # once per run: a summarizing one calls a model
        processed = processed_of(await processor(), store)
    prompt = unstash(store, run_input["prompt"], "prompt")  # inline before ADR 0152
    return first_state(
        spec, {**run_input, "prompt": prompt}, text, processed, history, listed.specs
    )


def static_instructions(spec: RunSpec) -> str | None:
    """The instructions of a run without dynamic ones (no effect needed)."""
    return join_instructions(spec.instructions, None)


def _by_reference(
    store: BlobStore,
    system: tuple[Message, ...],
    messages: tuple[Message, ...],
    known: Chain[Message],
) -> dict[str, Any]:
    """``messages`` as a ``RunEnded`` holds them: the instructions inline, the rest as
    the head of its chain (extending ``known``)."""
    if messages[: len(system)] != system:
        system = ()
    head = messages_chain(store, messages[len(system) :], known).head
    return {"system": system, "history": head or ""}


def ended(
    name: str,
    spec: RunSpec,
    end: Finish | Fail,
    store: BlobStore,
    known: Chain[Message],
    output_type: str | None = None,
) -> RunEnded:
    """The recorded end of a run from the driver's last command; its messages are
    stored in ``store`` (a chain extending ``known``, the run's conversation so far) and
    the record holds their head, and ``output_type``, the key of the run's own output
    type (``RecordedOptions.output_type``), so its output is read back into it."""
    state = end.state
    config = state.config
    if isinstance(end, Fail):
        partial = partial_of(state)
        chained = (
            {} if partial is None else _by_reference(store, state.system, partial.messages, known)
        )
        return RunEnded(
            name,
            "failed",
            config.run_id,
            config.conversation_id,
            **chained,
            usage=state.usage,
            requests=state.requests,
            tool_executions=state.tool_executions,
            stage=end.stage.value,
            reason=end.reason,
        )
    return RunEnded(
        name,
        "done",
        config.run_id,
        config.conversation_id,
        **_by_reference(store, state.system, state.messages, known),
        added=len(state.added),
        usage=state.usage,
        requests=state.requests,
        tool_executions=state.tool_executions,
        output=spec.output.dump(end.output),
        output_type=output_type,
    )


def ended_messages(record: RunEnded, store: BlobStore) -> tuple[Message, ...]:
    """The messages a recorded end stands for (its chain read from ``store``)."""
    chained: tuple[Message, ...] = ()
    if record.history:
        chained = load_chain(store, MESSAGE_CHAIN, record.history, "result").values
    return record.system + chained + record.messages


def result_of(
    wrapper: str,
    name: str,
    outputs: Callable[[str | None], Output],
    value: JSON,
    store: BlobStore,
) -> RunResult[Any]:
    """The ``RunResult`` a recorded end stands for (its messages read from ``store``; its
    output read back into ``outputs(key)``, the output of the run's recorded output type
    key, ``None`` for the agent's: ``Keywords.output_of``).

    Raises:
        RunError: the run failed (``partial`` holds the evidence it recorded).
        UsageError: the run is not a run of ``name`` (another agent's, or not golem's).
        CorruptRecord: the recorded output no longer fits the agent's output type, or
            (``MissingBlob``) its messages are not in ``store``.
    """
    try:
        record = decode_as(RunEnded, value, "result")
    except CorruptRecord:
        owner = value.get("agent") if isinstance(value, dict) else None
        raise UsageError(
            f"run {value.get('runId') if isinstance(value, dict) else value!r} is not a"
            f" run of {wrapper} {name!r} (it belongs to {owner!r})"
        ) from None
    if record.agent != name:
        raise UsageError(
            f"run {record.run_id!r} is not a run of {wrapper} {name!r}"
            f" (it belongs to {record.agent!r})"
        )
    messages = ended_messages(record, store)
    if record.status == "failed":
        partial = None
        if messages:
            partial = PartialResult(
                messages=messages,
                usage=record.usage,
                requests=record.requests,
                tool_executions=record.tool_executions,
                run_id=record.run_id,
                conversation_id=record.conversation_id,
            )
        raise RunError(
            Stage(str(record.stage)),
            str(record.reason),
            partial=partial,
            steering_left=record.steering_left,
        )
    output: Any = record.output
    try:
        kind = outputs(record.output_type)
    except UsageError as e:
        raise CorruptRecord(f"the recorded output cannot be read back: {e}") from e
    if not kind.text:
        try:
            output = validate(output, kind.type, path="output")
        except ValidationFailed as e:
            raise CorruptRecord(f"the recorded output no longer fits the output type: {e}") from e
    return RunResult(
        output=output,
        messages=messages,
        new_messages=messages[len(messages) - record.added :],
        usage=record.usage,
        run_id=record.run_id,
        conversation_id=record.conversation_id,
        requests=record.requests,
        tool_executions=record.tool_executions,
        steering_left=record.steering_left,
    )
