"""The agent loop as a sans-IO state machine: every decision of a run, none of its effects.

Owns what a run does next. ``start_run`` prepares the history once (the processor, the
instructions' replacement of system messages, pairing repair) and returns the first
state; ``next_command(state)`` says what the driver must do; ``receive(state, outcome)``
folds the outcome in and returns the next state. The driver (``golem_shell``) performs
commands and feeds outcomes back; it has no policy of its own, so the loop can be
embedded in any runtime (asyncio, a job queue, a durable workflow, a test).

Over 600 lines because it is one concept: the transition table, the states it moves
between and every handler, kept beside the table (h11's rule: whatever affects a
transition lives next to it), so no runtime holds a rule of its own.

Transitions (``Phase`` -> command -> outcome -> phase)::

    REQUEST   -> RequestModel    -> ModelResponded  -> TOOLS | VALIDATE | REQUEST | PAUSED | FAILED
                                 -> ModelFailed     -> FAILED (stage request)
    TOOLS     -> ExecuteTools    -> ToolDone        -> TOOLS (more) | REQUEST | PAUSED | FAILED
                                 -> ToolsReturned   -> REQUEST | PAUSED | FAILED (tool, canceled)
    VALIDATE  -> ValidateOutput  -> OutputValid     -> DONE
                                 -> OutputInvalid   -> REQUEST (correction) | FAILED (output)
    PAUSED    -> Pause           -> Answered        -> TOOLS | REQUEST | PAUSED (or refused)
    DONE      -> Finish
    FAILED    -> Fail

``TRANSITIONS`` holds this table as data and ``receive`` dispatches on it: a step that
is not in the table raises, and a handler landing outside its row's phases is a bug.

Rules the loop keeps:

- Instructions are resolved by the driver once per run, before the first request;
  they replace every system message of the history and lead the canonical conversation.
- The history is processed and repaired once, in ``start_run``; requests reuse it.
- Messages the run adds (prompt, model turns, tool results) carry the run's identity;
  the history it received keeps its own stamps; synthesized no-result results carry
  none (they equal what repair would produce, so resumes stay cache-friendly).
- A call without an id gets ``golem_<n>_<index>``, ``n`` new within the conversation,
  so its result can be paired and its signature vouched for in any later run.
- A call whose arguments are not a JSON object is never executed: the model gets a
  failed result saying the arguments were cut off. An unknown tool likewise. Both count
  against that tool's retries.
- Structured output arrives through the output tool, or as a text answer (JSON) that
  the driver validates (native structured output, ``output_schema``); a bad value or an
  answer that is neither gets a correction round, bounded by ``output_retries``.
- Each tool outcome lands as it completes (``ToolDone``); an interrupted run's partial
  (``RunState.partial_messages``) keeps every completed outcome and tells a call that
  was running (``unfinished_result``) from one that never started.
- A paused run goes on when it receives ``Answered`` (a row of the table, like every
  other step), bound to the pause it answers, so counters and stamps carry across a
  pause in every runtime alike; ``resume_run`` starts from a stored history.
- A failure inside a tool batch leaves the evidence ending at the assistant turn that
  requested it. A deliberate stop (``ToolCanceled``) keeps results recorded before it
  and closes every unanswered call with the synthesized no-result result, so the
  partial needs no repair.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, TypeAlias, assert_never

import attrs
from attrs import field, frozen
from returns.result import Failure, Result, Success

from golem_core._deferred import (
    Approved,
    DeferredAnswer,
    DeferredCall,
    DeferredError,
    Denied,
    ExternalResult,
    check_answers,
    frontier,
    unanswered_calls,
    waiting_calls,
)
from golem_core._history import _calls_of, interrupted_result, normalize_history, unfinished_result
from golem_core._messages import Message, Part, Role, TextPart, ToolCallPart, Usage
from golem_core._model import ModelErrorKind, ModelRequest, ModelSettings, ToolDefinition
from golem_core._prefix import HistoryChange, describe_processing
from golem_core._processors import HistoryProcessor
from golem_core._provenance import carry_signatures, sign_message
from golem_core._sanitize import safe_parts

__all__ = [
    "TRANSITIONS",
    "Answered",
    "DeferredCall",
    "ExecuteTools",
    "Fail",
    "Finish",
    "LoopCommand",
    "LoopOutcome",
    "ModelFailed",
    "ModelResponded",
    "OutputInvalid",
    "OutputValid",
    "Pause",
    "Phase",
    "RequestModel",
    "RunConfig",
    "RunState",
    "Stage",
    "ToolCanceled",
    "ToolCrashed",
    "ToolKind",
    "ToolOutcome",
    "ToolRetry",
    "ToolReturned",
    "ToolDone",
    "ToolSpec",
    "ToolsReturned",
    "Transition",
    "ValidateOutput",
    "next_command",
    "paused_from",
    "receive",
    "resume_run",
    "start_run",
]

ToolKind: TypeAlias = Literal["function", "output", "approval", "external"]
"""How a tool's calls are answered: run now, end the run with output, or wait (deferred)."""


class Stage(enum.StrEnum):
    """Where a run failed: the loop's own stages, and the driver's (instructions, timeout)."""

    HISTORY = "history"
    INSTRUCTIONS = "instructions"
    REQUEST = "request"
    TOOL = "tool"
    OUTPUT = "output"
    LIMIT = "limit"
    CANCELED = "canceled"
    TIMEOUT = "timeout"


NOT_EXECUTED_TEXT = "not executed: the run ended with its final result before this call ran"
FINAL_RESULT_TEXT = "final result processed"


@frozen
class ToolSpec:
    """What the loop knows of a tool: its definition, how it is answered, its retry budget."""

    definition: ToolDefinition
    kind: ToolKind = "function"
    max_retries: int = 2

    @property
    def name(self) -> str:
        return self.definition.name


@frozen
class RunConfig:
    """Everything fixed for one run.

    Args:
        run_id: this run's id (fresh per run, or the caller's).
        conversation_id: the conversation it joins (explicit, donated, or new).
        instructions: the resolved instructions (static then dynamic), or ``None``.
        tools: the tools the model may call, the output tool included.
        output_tool: the output tool's name when output is structured; ``None`` for text.
        settings: sampling settings sent with every request.
        max_requests: the most model requests the run may make.
        output_retries: how many correction rounds a bad output may get.
        signing_key: when set, every message the run adds (and every call it issues)
            is signed with it (``sign_message``, ADR 0054); never shown in a repr.
        output_schema: the output's JSON Schema sent as every request's
            ``output_schema`` (native structured output, ADR 0059); ``None`` otherwise.
        max_input_tokens, max_output_tokens, max_total_tokens: token budgets of the run
            (``None``: none). Checked when each answer arrives: an answer that brings the
            run's usage to a budget fails the run at stage ``limit``, its evidence kept,
            so no further request is sent.
    """

    run_id: str
    conversation_id: str
    instructions: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    output_tool: str | None = None
    settings: ModelSettings = ModelSettings()
    max_requests: int = 50
    output_retries: int = 2
    signing_key: bytes | None = field(default=None, kw_only=True, repr=False)
    output_schema: ToolDefinition | None = field(default=None, kw_only=True)
    max_input_tokens: int | None = field(default=None, kw_only=True)
    max_output_tokens: int | None = field(default=None, kw_only=True)
    max_total_tokens: int | None = field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        """Refuse a configuration the types allow but the loop cannot run soundly.

        Raises:
            ValueError: two tools share a name; ``output_tool`` names no tool of kind
                ``output``, or an ``output`` tool is not the ``output_tool``; a limit is out
                of range.
        """
        names = [t.name for t in self.tools]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"RunConfig: two tools share the name {repeated[0]!r}")
        outputs = [t.name for t in self.tools if t.kind == "output"]
        if self.output_tool is not None and outputs != [self.output_tool]:
            raise ValueError(
                f"RunConfig: output_tool {self.output_tool!r} must be the one tool of kind"
                f" 'output' (tools of kind output: {outputs})"
            )
        if self.output_tool is None and outputs:
            raise ValueError(
                f"RunConfig: tool {outputs[0]!r} is of kind 'output' but output_tool is None"
            )
        if self.max_requests < 1:
            raise ValueError(f"RunConfig: max_requests must be at least 1, got {self.max_requests}")
        if self.output_retries < 0:
            raise ValueError(
                f"RunConfig: output_retries must be at least 0, got {self.output_retries}"
            )

    def tool(self, name: str) -> ToolSpec | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None


class Phase(enum.Enum):
    REQUEST = "request"
    TOOLS = "tools"
    VALIDATE = "validate"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"


@frozen
class RunState:
    """The whole state of a run: a value; ``receive`` returns a new one.

    ``history`` is the prepared history (system-free, repaired); ``added`` what the run
    added, stamped; ``evidence`` how many of ``added`` are completed evidence (through
    the last completed model turn and the tool results of completed batches). ``turn``
    is the assistant message whose calls are being answered and ``awaiting`` its calls
    that still need a result; ``answered`` holds results decided before the batch ran
    (unknown tools, cut-off arguments, denials), joined to the batch in call order.
    """

    config: RunConfig
    history: tuple[Message, ...]
    added: tuple[Message, ...] = ()
    evidence: int = 0
    usage: Usage = Usage()
    requests: int = 0
    tool_executions: int = 0
    phase: Phase = Phase.REQUEST
    to_execute: tuple[ToolCallPart, ...] = ()
    deferred: tuple[DeferredCall, ...] = ()
    candidate: ToolCallPart | Message | None = None
    turn: Message | None = None
    awaiting: tuple[ToolCallPart, ...] = ()
    answered: tuple[Message, ...] = ()
    output: Any = None
    output_attempts: int = 0
    retries: tuple[tuple[str, int], ...] = ()
    failure: tuple[Stage, str] | None = None
    returned: tuple[ToolOutcome, ...] = ()
    pauses: int = 0
    rejected: DeferredError | None = None
    processed: HistoryChange | None = None

    @property
    def system(self) -> tuple[Message, ...]:
        instructions = self.config.instructions
        if instructions is None:
            return ()
        system = Message.system(instructions).with_ids(
            self.config.run_id, self.config.conversation_id
        )
        key = self.config.signing_key  # system messages never count in a place: sign at the start
        return (system if key is None else sign_message(system, key, before=()),)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The full canonical conversation so far: instructions, history, what the run added."""
        return self.system + self.history + self.added

    @property
    def evidence_messages(self) -> tuple[Message, ...]:
        """The conversation through the last completed evidence (a failed run's partial)."""
        return self.system + self.history + self.added[: self.evidence]

    @property
    def partial_messages(self) -> tuple[Message, ...]:
        """What a run interrupted now (cancelled, timed out, crashed) leaves: the evidence,
        and, while a tool batch runs, every outcome it completed (stamped, as the batch's
        end would add it), a call that started and has no outcome yet closed with
        ``unfinished_result`` (it may have had effects), and the turn's other calls
        closed with ``interrupted_result`` (they never ran). Paired: it needs no repair."""
        evidence = self.evidence_messages
        if self.phase is not Phase.TOOLS:
            return evidence
        by_id = {o.call_id: o for o in self.returned}
        pre = {m.tool_call_id: m for m in self.answered}
        running = {c.id for c in self.to_execute}
        closing: list[Message] = []
        for call in self.awaiting:
            if call.id in pre:
                closing.append(pre[call.id])
                continue
            result = _outcome_result(call, by_id.get(call.id or ""))
            if result is not None:
                closing.append(_stamp(self, result))
            elif call.id in running:
                closing.append(unfinished_result(call))
            else:
                closing.append(interrupted_result(call))
        return evidence + tuple(closing)

    @property
    def produced_evidence(self) -> bool:
        """Whether the run completed anything (a model turn, a tool execution)."""
        return (
            self.requests > 0
            or self.tool_executions > 0
            or self.evidence > 0
            or bool(self.returned)
        )


# -- commands --------------------------------------------------------------------------


@frozen
class RequestModel:
    """Send ``request`` to the model; answer with ``ModelResponded`` or ``ModelFailed``."""

    request: ModelRequest


@frozen
class ExecuteTools:
    """Run these calls concurrently; answer with ``ToolsReturned`` in any order."""

    calls: tuple[ToolCallPart, ...]


@frozen
class ValidateOutput:
    """Check a candidate output: a call of the output tool, or an assistant text message."""

    candidate: ToolCallPart | Message


@frozen
class Finish:
    """The run is done: ``output`` and the final state."""

    output: Any
    state: RunState


@frozen
class Pause:
    """The run waits for answers from outside: ``deferred`` calls, in call order."""

    deferred: tuple[DeferredCall, ...]
    state: RunState


@frozen
class Fail:
    """The run failed at ``stage`` for ``reason``."""

    stage: Stage
    reason: str
    state: RunState


LoopCommand: TypeAlias = RequestModel | ExecuteTools | ValidateOutput | Finish | Pause | Fail


# -- outcomes --------------------------------------------------------------------------


@frozen
class ModelResponded:
    """The model answered with an assistant message."""

    message: Message


@frozen
class ModelFailed:
    """The request failed for good (after the model's own retries); ``kind`` says why in
    words common to every provider, when the driver knows it."""

    reason: str
    kind: ModelErrorKind | None = None


@frozen
class ToolReturned:
    """A tool ran and returned evidence (``failed`` for a definitive failure)."""

    call_id: str
    parts: tuple[Part, ...]
    failed: bool = False


@frozen
class ToolRetry:
    """The call could not run as asked (bad arguments, or the tool asked the model to retry)."""

    call_id: str
    reason: str


@frozen
class ToolCanceled:
    """The tool stopped the run deliberately."""

    call_id: str
    reason: str


@frozen
class ToolCrashed:
    """The tool raised an unexpected exception."""

    call_id: str
    reason: str


ToolOutcome: TypeAlias = ToolReturned | ToolRetry | ToolCanceled | ToolCrashed


@frozen
class ToolsReturned:
    """Outcomes of an ``ExecuteTools`` batch; calls with no outcome were never answered."""

    outcomes: tuple[ToolOutcome, ...]


@frozen
class ToolDone:
    """One call of the ``ExecuteTools`` batch in flight finished: its outcome lands in the
    state at once (so an interrupted run keeps it); the batch ends when every call has an
    outcome, or at the first ``ToolCrashed`` or ``ToolCanceled``."""

    outcome: ToolOutcome


@frozen
class Answered:
    """Answers for a paused run's waiting calls, by call id (``Approved``, ``Denied``,
    ``ExternalResult``).

    ``close_unanswered`` closes waiting calls left without an answer (otherwise they keep
    the run paused). ``pause`` binds the answers to the pause they answer (the state's
    ``pauses`` count when it paused): answers for an earlier pause are refused, so a
    repeated or stale answer never applies to a later pause. ``None`` skips that check
    (a resume from stored history, which has only the one pause).
    """

    answers: Mapping[str, DeferredAnswer]
    close_unanswered: bool = False
    pause: int | None = None


@frozen
class OutputValid:
    """The candidate output is valid; ``value`` is the run's output."""

    value: Any


@frozen
class OutputInvalid:
    """The candidate output is not valid; ``reason`` tells the model what was wrong."""

    reason: str


LoopOutcome: TypeAlias = (
    ModelResponded | ModelFailed | ToolsReturned | ToolDone | OutputValid | OutputInvalid | Answered
)


@frozen
class Transition:
    """One legal step of the loop: in ``phase`` the driver performs ``command`` and feeds
    back an ``outcome``; ``handler`` folds it in, landing in one of ``after``."""

    phase: Phase
    command: type
    outcome: type
    after: tuple[Phase, ...]
    handler: Callable[[RunState, Any], RunState] = field(repr=False)


def _table() -> tuple[Transition, ...]:
    return (
        Transition(
            Phase.REQUEST,
            RequestModel,
            ModelResponded,
            (Phase.TOOLS, Phase.VALIDATE, Phase.REQUEST, Phase.PAUSED, Phase.FAILED),
            lambda state, o: _on_response(state, o.message),
        ),
        Transition(
            Phase.REQUEST,
            RequestModel,
            ModelFailed,
            (Phase.FAILED,),
            lambda state, o: _failed(state, Stage.REQUEST, o.reason),
        ),
        Transition(
            Phase.TOOLS,
            ExecuteTools,
            ToolsReturned,
            (Phase.REQUEST, Phase.PAUSED, Phase.FAILED),
            lambda state, o: _end_batch(attrs.evolve(state, returned=state.returned + o.outcomes)),
        ),
        Transition(
            Phase.TOOLS,
            ExecuteTools,
            ToolDone,
            (Phase.TOOLS, Phase.REQUEST, Phase.PAUSED, Phase.FAILED),
            lambda state, o: _on_tool_done(state, o.outcome),
        ),
        Transition(
            Phase.VALIDATE,
            ValidateOutput,
            OutputValid,
            (Phase.DONE,),
            lambda state, o: _on_output_valid(state, o.value),
        ),
        Transition(
            Phase.VALIDATE,
            ValidateOutput,
            OutputInvalid,
            (Phase.REQUEST, Phase.FAILED),
            lambda state, o: _on_output_invalid(state, o.reason),
        ),
        Transition(
            Phase.PAUSED,
            Pause,
            Answered,
            (Phase.TOOLS, Phase.REQUEST, Phase.PAUSED),
            _on_answers,
        ),
    )


# -- starting --------------------------------------------------------------------------


def start_run(
    config: RunConfig,
    history: Sequence[Message],
    prompt: Sequence[Part] | None,
    *,
    processor: HistoryProcessor | None = None,
    processor_name: str = "history processor",
    now: datetime | None = None,
) -> RunState:
    """Prepare a run: process the history, drop its system messages, repair, add the prompt.

    Total and deterministic. A processor failure gives a state already ``FAILED`` at
    stage ``history`` (no model call is made); so does an empty conversation.

    Args:
        config: the run's fixed configuration.
        history: the history exactly as the caller supplied it.
        prompt: the fresh user prompt's parts, or ``None`` to continue the history as is.
        processor: the agent's history processor, run once on exactly ``history``;
            what it changed is ``RunState.processed`` (``describe_processing``), which
            the driver reports (``HistoryProcessed``).
        processor_name: the processor's name in that report.
        now: the time stamped on the prompt message.
    """
    state = RunState(config=config, history=())
    supplied = history
    if processor is not None:
        match processor(history):
            case Success(processed) if _is_history(processed):
                history = processed
                state = attrs.evolve(
                    state,
                    processed=describe_processing(supplied, processed, processor=processor_name),
                )
            case Failure(error):
                return _failed(state, Stage.HISTORY, f"history processor failed: {error}")
            case bad:
                return _failed(
                    state,
                    Stage.HISTORY,
                    f"history processor returned {_describe_value(bad)}; expected"
                    " Success(messages) (a sequence of Message) or Failure(error)."
                    " Nothing was sent",
                )
    if any(m.role is Role.SYSTEM for m in history):
        history = [m for m in history if m.role is not Role.SYSTEM]
    repaired, _ = normalize_history(history)
    key = config.signing_key
    if key is not None and history is not supplied:  # cut: the server's own move with it
        repaired = carry_signatures(supplied, repaired, key)
    added: tuple[Message, ...] = ()
    if prompt is not None:
        user = Message(
            Role.USER,
            tuple(prompt),
            created_at=now,
            run_id=config.run_id,
            conversation_id=config.conversation_id,
        )
        added = (user if key is None else sign_message(user, key, before=repaired),)
    state = attrs.evolve(state, history=repaired, added=added)
    if not state.history and not state.added:
        return _failed(state, Stage.HISTORY, "nothing to send: no history and no prompt")
    return state


def _is_history(value: object) -> bool:
    return isinstance(value, tuple | list) and all(type(m) is Message for m in value)


def _describe_value(value: object) -> str:
    if isinstance(value, Success):
        inner = value.unwrap()
        if isinstance(inner, tuple | list):
            bad = next((m for m in inner if type(m) is not Message), None)
            return (
                f"Success of a {type(inner).__name__} holding a {type(bad).__name__} ({bad!r:.60})"
            )
        return f"Success({inner!r:.60}) (a {type(inner).__name__})"
    return f"{value!r:.60} (a {type(value).__name__})"


def _failed(state: RunState, stage: Stage, reason: str) -> RunState:
    return attrs.evolve(state, phase=Phase.FAILED, failure=(stage, reason))


def _stamp(state: RunState, m: Message) -> Message:
    """``m`` as the run adds it after everything so far: the run's ids, an id for each call
    the model sent without one (``_with_call_ids``), and with a signing key a signature
    bound to that place (``sign_message(before=...)``, ADR 0068). Results of one batch
    may all be stamped against the same state: ``tool`` messages do not move the place
    of what follows them."""
    config = state.config
    m = attrs.evolve(m, run_id=config.run_id, conversation_id=config.conversation_id)
    key = config.signing_key
    minting = m.role is Role.ASSISTANT and any(
        type(p) is ToolCallPart and p.id is None for p in m.parts
    )
    if key is None and not minting:
        return m
    before = state.history + state.added
    if minting:
        m = _with_call_ids(m, before)
    return m if key is None else sign_message(m, key, before=before)


def _add(state: RunState, messages: Sequence[Message], *, stamp: bool = True) -> RunState:
    """``state`` with ``messages`` added, each stamped in its place after the ones before
    it (unless ``stamp`` is false: they are in final form already)."""
    if not stamp:
        return attrs.evolve(state, added=state.added + tuple(messages))
    for m in messages:
        state = attrs.evolve(state, added=(*state.added, _stamp(state, m)))
    return state


# -- deciding --------------------------------------------------------------------------


def next_command(state: RunState) -> LoopCommand:
    """What the driver must do next. Total and deterministic."""
    phase = state.phase
    if phase is Phase.REQUEST:
        if state.requests >= state.config.max_requests:
            return Fail(
                Stage.LIMIT,
                f"the run reached its limit of {state.config.max_requests} model requests",
                state,
            )
        config = state.config
        return RequestModel(
            ModelRequest(
                messages=state.history + state.added,
                instructions=config.instructions,
                tools=tuple(t.definition for t in config.tools),
                settings=config.settings,
                tool_choice_required=config.output_tool is not None,
                run_id=config.run_id,
                output_schema=config.output_schema,
                conversation_id=config.conversation_id,
            )
        )
    if phase is Phase.TOOLS:
        return ExecuteTools(state.to_execute)
    if phase is Phase.VALIDATE:
        assert state.candidate is not None
        return ValidateOutput(state.candidate)
    if phase is Phase.DONE:
        return Finish(state.output, state)
    if phase is Phase.PAUSED:
        return Pause(state.deferred, state)
    assert state.failure is not None
    return Fail(state.failure[0], state.failure[1], state)


def receive(state: RunState, outcome: LoopOutcome) -> RunState:
    """Fold an outcome into the state. Total and deterministic.

    Driven by ``TRANSITIONS``: the row for (the state's phase, the outcome's type) names
    the handler, and the phase it lands in is checked against the row.

    Raises:
        ValueError: the outcome does not answer the command of the current phase.
    """
    row = _BY_STEP.get((state.phase, type(outcome)))
    if row is None:
        raise ValueError(
            f"{type(outcome).__name__} does not answer the loop's {state.phase.value} phase"
        )
    after = row.handler(state, outcome)
    if after.phase not in row.after:  # pragma: no cover - the table and the handlers agree
        raise AssertionError(
            f"{state.phase.value} + {row.outcome.__name__} went to {after.phase.value},"
            f" which TRANSITIONS does not allow"
        )
    return after


def _with_call_ids(message: Message, conversation: Sequence[Message]) -> Message:
    """``message`` with an id for each call the model sent without one (Gemini 2.x).

    The id is ``golem_<n>_<part index>``, ``n`` one more than the highest ``n`` of such
    ids in ``conversation`` (the messages before it) and in ``message``: a conversation's
    first turns get ``golem_1_0``, ``golem_2_0``, ... and every later run goes on from
    there, so a minted id never repeats within a conversation (a repeated id would make
    a signed call unvouchable, ADR 0068). Derived from the history only: total and
    deterministic. Called by ``_stamp``, which stamps every message the run adds.
    """
    if not any(type(p) is ToolCallPart and p.id is None for p in message.parts):
        return message
    highest = 0
    for m in (*conversation, message):
        if m.role is not Role.ASSISTANT:
            continue
        for p in m.parts:
            if type(p) is ToolCallPart and p.id is not None and p.id.startswith("golem_"):
                n, _, index = p.id[6:].partition("_")
                if n.isdigit() and n.isascii() and len(n) < 19 and index.isdigit():
                    highest = max(highest, int(n))
    parts: list[Part] = []
    for i, p in enumerate(message.parts):
        if type(p) is ToolCallPart and p.id is None:
            p = attrs.evolve(p, id=f"golem_{highest + 1}_{i}")
        parts.append(p)
    return attrs.evolve(message, parts=tuple(parts))


def _result(call: ToolCallPart, text: str, *, failed: bool) -> Message:
    return Message.tool_result(call.id, call.name, text, failed=failed)


def _count_retry(state: RunState, name: str) -> tuple[RunState, bool]:
    """Count a retry of tool ``name``; ``True`` when its budget is exceeded."""
    counts = dict(state.retries)
    counts[name] = counts.get(name, 0) + 1
    spec = state.config.tool(name)
    limit = spec.max_retries if spec is not None else 2
    return attrs.evolve(state, retries=tuple(sorted(counts.items()))), counts[name] > limit


def _spent(config: RunConfig, usage: Usage) -> str | None:
    """Which token budget of the run ``usage`` has reached, in words, or ``None``."""
    checks = (
        ("input", usage.input_tokens, config.max_input_tokens),
        ("output", usage.output_tokens, config.max_output_tokens),
        ("total", usage.input_tokens + usage.output_tokens, config.max_total_tokens),
    )
    for kind, used, limit in checks:
        if limit is not None and used >= limit:
            return f"the run has used {used} {kind} tokens, its limit is {limit}"
    return None


def _on_response(state: RunState, message: Message) -> RunState:
    requests = state.requests + 1
    usage = state.usage + message.usage if message.usage is not None else state.usage
    stamped = _stamp(state, message)
    spent = _spent(state.config, usage)
    if spent is not None:  # the answer is evidence; no further request is sent
        state = attrs.evolve(
            state,
            requests=requests,
            usage=usage,
            added=(*state.added, stamped),
            evidence=len(state.added) + 1,
        )
        return _failed(state, Stage.LIMIT, f"usage limit reached: {spent}")
    # a call repeating an earlier call's id in this turn is not a new call: one id, one
    # execution, one result (ADR 0030 §3); the encoders answer the repeat on the wire
    calls = tuple(_calls_of(stamped))
    if not calls:  # a text answer: the driver validates it (JSON for structured output)
        return attrs.evolve(
            state,
            requests=requests,
            usage=usage,
            added=(*state.added, stamped),
            evidence=len(state.added) + 1,
            turn=stamped,
            awaiting=calls,
            phase=Phase.VALIDATE,
            candidate=message,
        )
    state = attrs.evolve(
        state,
        requests=requests,
        usage=usage,
        added=(*state.added, stamped),
        evidence=len(state.added) + 1,
        turn=stamped,
        awaiting=calls,
    )
    config = state.config
    output_calls = [c for c in calls if c.name == config.output_tool]
    if output_calls:
        return attrs.evolve(state, phase=Phase.VALIDATE, candidate=output_calls[0])
    results: list[Message] = []
    to_execute: list[ToolCallPart] = []
    deferred: list[DeferredCall] = []
    exceeded: list[str] = []
    for call in calls:
        spec = config.tool(call.name)
        if spec is None:
            names = ", ".join(t.name for t in config.tools) or "none"
            results.append(
                _stamp(
                    state,
                    _result(
                        call,
                        f"unknown tool {call.name!r}; the available tools are: {names}",
                        failed=True,
                    ),
                )
            )
        elif not call.arguments_valid:
            results.append(
                _stamp(
                    state,
                    _result(
                        call,
                        "the arguments of this call were cut off or are not a JSON object,"
                        " so it was not executed; call the tool again with complete arguments",
                        failed=True,
                    ),
                )
            )
        else:
            kind = spec.kind
            match kind:
                case "function":
                    to_execute.append(call)
                case "approval" | "external":
                    deferred.append(DeferredCall(call, kind))
                case "output":  # pragma: no cover - a turn calling the output tool ends above
                    raise AssertionError("an output call reached tool execution")
                case _:  # pragma: no cover
                    assert_never(kind)
            continue
        state, over = _count_retry(state, call.name)
        if over:
            exceeded.append(call.name)
    if exceeded:
        return _failed(
            state,
            Stage.TOOL,
            f"tool {exceeded[0]!r} exceeded its retry budget: the model kept calling it"
            " with arguments that could not be used",
        )
    if not to_execute:
        state = _add(state, results, stamp=False)
        state = attrs.evolve(
            state,
            evidence=len(state.added),
            deferred=tuple(deferred),
            awaiting=tuple(d.call for d in deferred),
        )
        return _pause(state) if deferred else attrs.evolve(state, phase=Phase.REQUEST)
    return attrs.evolve(
        state,
        phase=Phase.TOOLS,
        to_execute=tuple(to_execute),
        deferred=tuple(deferred),
        candidate=None,
        # results for unknown tools and cut-off arguments join the batch's results
        answered=tuple(results),
    )


def _outcome_result(call: ToolCallPart, o: ToolOutcome | None) -> Message | None:
    """The result an outcome gives its call (unstamped): ``None`` for no outcome, or for a
    crash or a deliberate stop (those end the run instead)."""
    if type(o) is ToolReturned:
        return Message.tool_result(call.id, call.name, o.parts, failed=o.failed)
    if type(o) is ToolRetry:
        return _result(call, o.reason, failed=True)
    return None


def _on_tool_done(state: RunState, outcome: ToolOutcome) -> RunState:
    state = attrs.evolve(state, returned=(*state.returned, outcome))
    if type(outcome) is ToolCrashed or type(outcome) is ToolCanceled:
        return _end_batch(state)
    done = {o.call_id for o in state.returned}
    if all(c.id in done for c in state.to_execute):
        return _end_batch(state)
    return state


def _end_batch(state: RunState) -> RunState:
    """Close the batch in flight with the outcomes in ``state.returned``."""
    outcomes = state.returned
    by_id = {o.call_id: o for o in outcomes}
    calls = state.awaiting
    pre = {m.tool_call_id: m for m in state.answered}
    executions = state.tool_executions + sum(
        1 for o in outcomes if type(o) in (ToolReturned, ToolCanceled, ToolCrashed)
    )
    state = attrs.evolve(state, tool_executions=executions, answered=(), returned=())
    crashed = next((o for o in outcomes if type(o) is ToolCrashed), None)
    if crashed is not None:
        return _failed(state, Stage.TOOL, crashed.reason)
    canceled = next((o for o in outcomes if type(o) is ToolCanceled), None)
    results: list[Message] = []
    keep: set[int] = set()  # results already in final form: not stamped again
    exceeded: str | None = None
    still_waiting: list[DeferredCall] = []
    for call in calls:
        if call.id in pre:
            keep.add(len(results))
            results.append(pre[call.id])
            continue
        o = by_id.get(call.id) if call.id is not None else None
        result = _outcome_result(call, o)
        if result is not None:
            results.append(result)
            if type(o) is ToolRetry:
                state, over = _count_retry(state, call.name)
                if over and exceeded is None:
                    exceeded = call.name
        elif canceled is not None:
            keep.add(len(results))
            results.append(interrupted_result(call))
        else:
            waiting = next((d for d in state.deferred if d.call.id == call.id), None)
            if waiting is None:
                raise ValueError(f"no outcome for tool call {call.id!r} ({call.name})")
            still_waiting.append(waiting)
    stamped = [m if i in keep else _stamp(state, m) for i, m in enumerate(results)]
    state = _add(state, stamped, stamp=False)
    state = attrs.evolve(
        state,
        evidence=len(state.added),
        to_execute=(),
        deferred=tuple(still_waiting),
        awaiting=tuple(d.call for d in still_waiting),
    )
    if canceled is not None:
        return _failed(attrs.evolve(state, deferred=()), Stage.CANCELED, canceled.reason)
    if exceeded is not None:
        return _failed(
            state,
            Stage.TOOL,
            f"tool {exceeded!r} exceeded its retry budget: the model kept calling it with"
            " arguments that could not be used",
        )
    if state.deferred:
        return _pause(state)
    return attrs.evolve(state, phase=Phase.REQUEST)


def _pause(state: RunState) -> RunState:
    """Wait for answers: a new pause (``pauses`` counts them, so answers bind to one)."""
    return attrs.evolve(state, phase=Phase.PAUSED, pauses=state.pauses + 1, rejected=None)


# -- resuming --------------------------------------------------------------------------


def paused_from(config: RunConfig, history: Sequence[Message]) -> RunState:
    """The paused state a stored history stands for: its last assistant turn's calls
    without a result wait (those of approval and external tools) or were interrupted
    (the others, e.g. a crash mid-batch). The history before that turn is repaired;
    the turn and its results are kept as they are. Feed it ``Answered`` to go on.
    A history whose end is not such a turn gives a paused state with nothing waiting:
    empty answers send it on to the next request. Total and deterministic.
    """
    history = [m for m in history if m.role is not Role.SYSTEM]
    a = frontier(history)
    if a is None:
        repaired, _ = normalize_history(history)
        return RunState(config=config, history=repaired, phase=Phase.PAUSED, pauses=1)
    turn = history[a]
    turn_ids = {c.id for c in turn.tool_calls if c.id is not None}
    seen: set[str | None] = set()
    block: list[Message] = []
    for m in history[a + 1 :]:
        if m.tool_call_id in turn_ids and m.tool_call_id not in seen:
            seen.add(m.tool_call_id)
            block.append(m)
    prefix, _ = normalize_history(history[:a])
    return RunState(
        config=config,
        history=(*prefix, turn, *block),
        turn=turn,
        phase=Phase.PAUSED,
        pauses=1,
        deferred=waiting_calls(history, {t.name: t.kind for t in config.tools}),
        awaiting=tuple(unanswered_calls(history, a)),
    )


def _on_answers(state: RunState, answered: Answered) -> RunState:
    """Apply answers to the waiting calls: approved calls run (a tool batch), denials and
    external results become results; the turn's other unanswered calls are closed as
    interrupted. Answers that do not fit leave the run paused with ``rejected`` set."""
    if answered.pause is not None and answered.pause != state.pauses:
        return attrs.evolve(
            state,
            rejected=DeferredError(
                f"these answers are for pause {answered.pause} of the run, which is now at"
                f" pause {state.pauses}: a repeated or stale answer is not applied",
                tuple(sorted(answered.answers)),
            ),
        )
    answers = answered.answers
    error = check_answers(state.deferred, answers)
    if error is not None:
        return attrs.evolve(state, rejected=error)
    waiting_ids = {d.call.id for d in state.deferred}
    pre: list[Message] = []
    to_execute: list[ToolCallPart] = []
    still: list[DeferredCall] = []
    for call in state.awaiting:
        answer = answers.get(call.id or "")
        if call.id not in waiting_ids:
            pre.append(interrupted_result(call))
        elif type(answer) is Approved:
            to_execute.append(call)
        elif type(answer) is Denied:
            denied = Message.tool_result(
                call.id, call.name, f"denied: {answer.reason}", failed=True
            )
            pre.append(_stamp(state, denied))
        elif type(answer) is ExternalResult:  # a client asserted it: sanitized before signing
            parts = safe_parts(answer.parts)
            external = Message.tool_result(call.id, call.name, parts, failed=answer.failed)
            pre.append(_stamp(state, external))
        elif answered.close_unanswered:
            pre.append(interrupted_result(call))
        else:
            still.extend(d for d in state.deferred if d.call.id == call.id)
    state = attrs.evolve(state, rejected=None)
    if to_execute:
        return attrs.evolve(
            state,
            phase=Phase.TOOLS,
            to_execute=tuple(to_execute),
            deferred=tuple(still),
            answered=tuple(pre),
        )
    state = _add(state, pre, stamp=False)
    state = attrs.evolve(
        state,
        evidence=len(state.added),
        deferred=tuple(still),
        awaiting=tuple(d.call for d in still),
    )
    if still and pre:  # some answered, some still waiting: a new pause
        return _pause(state)
    if still:  # nothing answered: the same pause goes on
        return state
    return attrs.evolve(state, phase=Phase.REQUEST)


def resume_run(
    config: RunConfig,
    history: Sequence[Message],
    answers: Mapping[str, DeferredAnswer],
    *,
    close_unanswered: bool = False,
    now: datetime | None = None,
) -> Result[RunState, DeferredError]:
    """Continue a paused run from its stored ``history`` with answers for its waiting
    calls: ``receive(paused_from(config, history), Answered(answers, close_unanswered))``.

    Answers come first: approved calls are executed by the driver, denials and external
    results become those calls' results. Waiting calls left unanswered keep the run
    paused, or, with ``close_unanswered``, get the neutral no-result result. Unanswered
    calls of ordinary tools in that turn (a crash mid-batch) get it too. Only then is the
    history before the frontier repaired. Total and deterministic.

    Returns:
        The state to drive, or ``Failure(DeferredError)`` when an answer names a call that
        is not waiting, or answers a call with the wrong kind of answer.
    """
    del now  # the frontier's results carry no timestamps; kept for symmetry with start_run
    state = receive(paused_from(config, history), Answered(answers, close_unanswered))
    if state.rejected is not None:
        return Failure(state.rejected)
    return Success(state)


def _correction(state: RunState, reason: str, *, as_user: bool) -> RunState:
    attempts = state.output_attempts + 1
    state = attrs.evolve(state, output_attempts=attempts, candidate=None)
    if as_user:
        state = _add(state, (Message(Role.USER, (TextPart(reason),)),))
    if attempts > state.config.output_retries:
        return _failed(
            state,
            Stage.OUTPUT,
            f"the output was still not valid after {state.config.output_retries} correction"
            f" rounds: {reason}",
        )
    return attrs.evolve(state, phase=Phase.REQUEST, evidence=len(state.added))


def _close_turn(state: RunState, output_call: ToolCallPart | None) -> RunState:
    """Answer every call of the final assistant turn so the conversation stays valid."""
    assistant = state.turn
    assert assistant is not None
    results = [
        _result(c, FINAL_RESULT_TEXT if c is output_call else NOT_EXECUTED_TEXT, failed=False)
        for c in _calls_of(assistant)
    ]
    return _add(state, results)


def _on_output_valid(state: RunState, value: Any) -> RunState:
    candidate = state.candidate
    if type(candidate) is ToolCallPart:
        state = _close_turn(state, candidate)
    return attrs.evolve(
        state, evidence=len(state.added), candidate=None, phase=Phase.DONE, output=value
    )


def _on_output_invalid(state: RunState, reason: str) -> RunState:
    candidate = state.candidate
    if type(candidate) is ToolCallPart:
        assistant = state.turn
        assert assistant is not None
        results = [
            _result(c, reason, failed=True)
            if c is candidate
            else _result(c, NOT_EXECUTED_TEXT, failed=False)
            for c in _calls_of(assistant)
        ]
        state = _add(state, results)
        return _correction(state, reason, as_user=False)
    return _correction(state, reason, as_user=True)


TRANSITIONS: tuple[Transition, ...] = _table()
"""Every legal step of the loop; ``receive`` dispatches on it (the docs and the
state-machine property read it too)."""
_BY_STEP: dict[tuple[Phase, type], Transition] = {(t.phase, t.outcome): t for t in TRANSITIONS}
