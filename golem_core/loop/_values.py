"""The loop's values: a run's configuration and state, the commands a driver performs and
the outcomes it feeds back (h11's ``_events.py`` and the states of its ``_state.py``).

Owns every value that crosses the loop's boundary and the one rule every added message
passes: ``_stamp`` (the run's ids, minted call ids, a signature in its place). The
transition table that moves between these values is ``golem_core.loop._table``; the
handlers that build the next state are ``golem_core.loop._handlers``. Pure: no handler
lives here, so this module imports nothing of the loop.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import attrs
from attrs import field, frozen

from golem_core._ids import run_tag
from golem_core._messages import Message, Part, Price, Role, ToolCallPart, Usage
from golem_core._model import ModelErrorKind, ModelRequest, ModelSettings, ToolDefinition
from golem_core.history._compaction import CompactionRecord
from golem_core.history._history import interrupted_result, unfinished_result
from golem_core.history._prefix import HistoryChange
from golem_core.history._provenance import sign_message
from golem_core.loop._deferred import Answered, DeferredCall, DeferredError

__all__ = [
    "Answered",
    "CompactHistory",
    "CompactionDeclined",
    "ExecuteTools",
    "Fail",
    "HistoryCompacted",
    "Finish",
    "LoopCommand",
    "LoopOutcome",
    "STEERED_TEXT",
    "Steered",
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
    "ToolDone",
    "ToolKind",
    "ToolOutcome",
    "ToolRetry",
    "ToolReturned",
    "ToolSpec",
    "ToolsReturned",
    "ValidateOutput",
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


STEERED_TEXT = "not used: the user wrote again before this output was taken"
"""The result of a final output call the run set aside for a steering message."""
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
        max_tool_calls: the most tool calls the run may execute (``None``: no limit).
            Checked before each batch runs: a batch that would take the run past it is
            not run, and the run fails at stage ``limit`` (the turn that asked is kept).
        max_cost: the most the run may cost at ``price`` (``None``: no limit), checked
            like the token budgets as each answer arrives; it needs ``price``.
        price: what the run's model charges (``Price``), for ``max_cost``.
        compact_on_overflow: when a provider refuses a request as too long
            (``ModelErrorKind.CONTEXT_TOO_LONG``), compact the history once
            (``CompactHistory``) and send the request again (ADR 0141).
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
    max_tool_calls: int | None = field(default=None, kw_only=True)
    max_cost: float | None = field(default=None, kw_only=True)
    price: Price | None = field(default=None, kw_only=True)
    compact_on_overflow: bool = field(default=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        """Refuse a configuration the types allow but the loop cannot run soundly.

        Raises:
            ValueError: two tools share a name; ``output_tool`` names no tool of kind
                ``output``, or an ``output`` tool is not the ``output_tool``; a limit is out
                of range (``max_cost`` not a positive finite number: ``nan`` or ``inf``
                would never stop the run, ``0`` or less would stop it at once).
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
        if self.max_tool_calls is not None and self.max_tool_calls < 0:
            raise ValueError(
                f"RunConfig: max_tool_calls must be at least 0, got {self.max_tool_calls}"
            )
        cost = self.max_cost
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 < cost < math.inf
        ):  # nan or inf never stops a run, 0 or less stops it at its first answer
            raise ValueError(
                f"RunConfig: max_cost must be a positive finite number (or None), got {cost!r}"
            )
        if self.max_cost is not None and self.price is None:
            raise ValueError("RunConfig: max_cost needs a price (RunConfig.price)")
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
    COMPACT = "compact"
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
    ``compactions`` are the folds of the run (ADR 0140): those its history processor
    made, then a compaction after a request was refused as too long (ADR 0141);
    ``compacted_at`` is the number of requests answered when that compaction happened
    (one per request), ``overflow`` the provider's refusal while it is under way.
    ``supplied`` is the history as the caller supplied it, kept only when the run signs
    and its processor changed that history: what the run adds is signed in its place
    after ``supplied`` too (ADR 0091).
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
    compactions: tuple[CompactionRecord, ...] = ()
    compacted_at: int | None = None
    overflow: str | None = None
    supplied: tuple[Message, ...] | None = field(default=None, repr=False)

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
class CompactHistory:
    """Compact ``history`` once: the provider refused the request as too long
    (``reason``, its words). Fold only ``history[:keep]``: the rest (the turn of a
    call still waiting for its result) must come back unchanged at the end. Answer with
    ``HistoryCompacted`` or ``CompactionDeclined`` (ADR 0141)."""

    history: tuple[Message, ...]
    keep: int
    reason: str


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


LoopCommand: TypeAlias = (
    RequestModel | CompactHistory | ExecuteTools | ValidateOutput | Finish | Pause | Fail
)


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
class HistoryCompacted:
    """The strategy folded the history: ``history`` replaces it; ``record`` says what it
    replaced (its usage, a summarizing request's, joins the run's)."""

    history: tuple[Message, ...]
    record: CompactionRecord


@frozen
class CompactionDeclined:
    """The strategy did not fold: ``outcome`` is ``declined: ...`` or ``failed: ...``."""

    outcome: str


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
    """The tool raised an unexpected exception. ``error_type`` names the exception's
    class (``ValueError``, ``mypkg.errors.Timeout``) where the driver knows it: what
    tracing reports as ``error.type`` without the message (which may hold content)."""

    call_id: str
    reason: str
    error_type: str | None = field(default=None, kw_only=True)


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
class OutputValid:
    """The candidate output is valid; ``value`` is the run's output."""

    value: Any


@frozen
class OutputInvalid:
    """The candidate output is not valid; ``reason`` tells the model what was wrong."""

    reason: str


@frozen
class Steered:
    """User messages sent while the run was working (steering): they join the run at
    its next safe point, before its next request or in place of taking its output (never
    between a call and its result), each stamped in its place."""

    messages: tuple[Message, ...] = field(converter=tuple)

    def __attrs_post_init__(self) -> None:
        if not self.messages or any(m.role is not Role.USER for m in self.messages):
            raise ValueError("steering messages are one or more user messages")


LoopOutcome: TypeAlias = (
    ModelResponded
    | ModelFailed
    | HistoryCompacted
    | CompactionDeclined
    | ToolsReturned
    | ToolDone
    | OutputValid
    | OutputInvalid
    | Answered
    | Steered
)

# -- stamping: the one way a message joins the run ---------------------------------------


def _stamp(state: RunState, m: Message) -> Message:
    """``m`` as the run adds it after everything so far: the run's ids, an id for each call
    the model sent without one (``_with_call_ids``), and with a signing key a signature
    bound to that place (``sign_message(before=...)``, ADR 0068), and, when a processor
    cut the window the run sees, to its place after the history as supplied too
    (``RunState.supplied``, ADR 0091), so a store that appends what the run added to the
    whole conversation verifies as well as the window the run returns. Results of one batch
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
        m = _with_call_ids(m, before, config.run_id)
    if key is None:
        return m
    also = () if state.supplied is None else (state.supplied + state.added,)
    return sign_message(m, key, before=before, also_before=also)


def _with_call_ids(message: Message, conversation: Sequence[Message], run_id: str) -> Message:
    """``message`` with an id for each call the model sent without one (Gemini 2.x).

    The id is ``golem_<run tag>_<n>_<part index>``: the run tag is ``run_tag(run_id)``,
    and ``n`` is one more than the highest ``n`` of this run's ids in ``conversation``
    (the messages before it; the first minted turn of a run is ``n = 1``). So a minted
    id is unique in the whole conversation without seeing all of it: a processor may
    cut the window a run sees (issue 33.5), and another run has another tag (a repeated
    id would make a signed call unvouchable, ADR 0068 and 0091). Total and
    deterministic in the message, the conversation and the run id. Called by
    ``_stamp``, which stamps every message the run adds.
    """
    if not any(type(p) is ToolCallPart and p.id is None for p in message.parts):
        return message
    prefix = f"golem_{run_tag(run_id)}_"
    highest = 0
    for m in conversation:
        if m.role is not Role.ASSISTANT:
            continue
        for p in m.parts:
            if type(p) is ToolCallPart and p.id is not None and p.id.startswith(prefix):
                n, _, index = p.id[len(prefix) :].partition("_")
                if n.isdigit() and n.isascii() and len(n) < 19 and index.isdigit():
                    highest = max(highest, int(n))
    parts: list[Part] = []
    for i, p in enumerate(message.parts):
        if type(p) is ToolCallPart and p.id is None:
            p = attrs.evolve(p, id=f"{prefix}{highest + 1}_{i}")
        parts.append(p)
    return attrs.evolve(message, parts=tuple(parts))


def _result(call: ToolCallPart, text: str, *, failed: bool) -> Message:
    return Message.tool_result(call.id, call.name, text, failed=failed)


def _outcome_result(call: ToolCallPart, o: ToolOutcome | None) -> Message | None:
    """The result an outcome gives its call (unstamped): ``None`` for no outcome, or for a
    crash or a deliberate stop (those end the run instead)."""
    if type(o) is ToolReturned:
        return Message.tool_result(call.id, call.name, o.parts, failed=o.failed)
    if type(o) is ToolRetry:
        return _result(call, o.reason, failed=True)
    return None
