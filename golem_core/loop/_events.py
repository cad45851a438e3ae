"""Lifecycle events of a run: plain values that say what a run is doing.

Owns the event types a run reports besides its streamed deltas: the run started; a
model request started, finished, failed, or will be retried; a compaction started and
finished; a tool call started and
finished; the run finished, paused or failed. They are frozen values with no behaviour:
the shell's driver creates them (durations and delays are numbers it measured) and
hands them to the caller's ``on_event`` handler, to ``Agent.iter_stream`` and to the
OpenTelemetry exporter. Every event names its run and conversation.

Events carry identifiers, counts, durations and usage, never message content: a
handler that logs every event leaks no prompt, answer, argument or result.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from attrs import frozen

from golem_core._messages import Usage
from golem_core.history._compaction import CompactionRecord
from golem_core.history._port import PortReport
from golem_core.history._prefix import HistoryChange
from golem_core.loop._deferred import DeferredCall

__all__ = [
    "CompactionFinished",
    "CompactionStarted",
    "CompactionTrigger",
    "HistoryPorted",
    "HistoryProcessed",
    "LifecycleEvent",
    "RequestFailed",
    "RequestFinished",
    "RequestStarted",
    "RetryScheduled",
    "RunFailed",
    "RunFinished",
    "RunPaused",
    "RunStarted",
    "RunSteered",
    "ToolFinished",
    "ToolOutcomeKind",
    "ToolStarted",
]

ToolOutcomeKind: TypeAlias = Literal["returned", "failed", "retry", "canceled", "crashed"]
"""How a tool call ended: a result, a definitive failure (``ToolFailure``), arguments the
model must fix, a deliberate stop (``Canceled``), or an unexpected exception."""


@frozen
class RunStarted:
    """A run began: its ids, the model it talks to, and whether it resumes a paused run."""

    run_id: str
    conversation_id: str
    model: str
    resumed: bool = False


@frozen
class HistoryProcessed:
    """The run's history processor changed the history it was given (ADR 0080).

    ``change`` says what it removed, summarized or rewrote (input indices), the tokens
    before and after, the pairs and pending calls it kept, and ``first_change``: where
    the prompt cache stops serving. Emitted once per run, before the first request,
    only when the processor changed something. Counts and ids only, no content.
    """

    run_id: str
    conversation_id: str
    change: HistoryChange


CompactionTrigger: TypeAlias = Literal["processor", "context_too_long"]
"""Why a run compacted: its history processor folded the history before the first
request, or a provider refused a request as too long (compact and retry, ADR 0141)."""


@frozen
class RunSteered:
    """User messages sent while the run was working joined it (steering), before its
    request number ``request``; ``messages`` how many (content is not reported)."""

    run_id: str
    conversation_id: str
    request: int
    messages: int


@frozen
class CompactionStarted:
    """A compaction began (ADR 0140): ``processor`` names the strategy, ``trigger`` why,
    ``request`` the request it is for (0: before the first), ``messages`` how many
    messages it was given."""

    run_id: str
    conversation_id: str
    processor: str
    trigger: CompactionTrigger
    request: int = 0
    messages: int = 0


@frozen
class CompactionFinished:
    """A compaction ended: ``outcome`` is ``"compacted"``, ``"declined: nothing to fold"``,
    ``"declined: a pending call"`` or ``"failed: <reason>"``; ``record`` is the fold's
    compaction record when it compacted (references and counts, no content)."""

    run_id: str
    conversation_id: str
    processor: str
    trigger: CompactionTrigger
    outcome: str
    record: CompactionRecord | None = None
    request: int = 0


@frozen
class HistoryPorted:
    """A request's history was ported to its model (ADR 0085): ``report`` says which
    thinking became text, which artifacts were left off, which call ids were sent under
    another name and which parts the model gets as a stand-in (kinds and indices, never
    content). Emitted before the request it concerns, only when something changed."""

    run_id: str
    conversation_id: str
    request: int
    model: str
    report: PortReport


@frozen
class RequestStarted:
    """Model request number ``request`` (from 1) of the run was sent."""

    run_id: str
    conversation_id: str
    request: int
    model: str
    stream: bool = False


@frozen
class RequestFinished:
    """A model request answered.

    ``model`` is the model that answered (as the provider named it), ``usage`` and
    ``finish_reason`` what it reported; ``duration`` is in seconds, retries included.
    """

    run_id: str
    conversation_id: str
    request: int
    duration: float
    model: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None


@frozen
class RequestFailed:
    """A model request failed for good (after its retries); the run fails next.

    ``error`` is the error's text (API keys are never in it), ``kind`` the
    ``ModelErrorKind`` value when the model reported one, ``status`` the HTTP status.
    """

    run_id: str
    conversation_id: str
    request: int
    duration: float
    error: str
    kind: str | None = None
    status: int | None = None


@frozen
class RetryScheduled:
    """A failed attempt of a model request will be tried again after ``delay`` seconds.

    ``attempt`` is the retry about to be made (from 1); ``cause`` the failure's text,
    ``kind`` its ``ModelErrorKind`` value, ``status`` its HTTP status.
    """

    run_id: str
    conversation_id: str
    request: int
    attempt: int
    delay: float
    cause: str
    kind: str | None = None
    status: int | None = None


@frozen
class ToolStarted:
    """A tool call began executing."""

    run_id: str
    conversation_id: str
    call_id: str
    name: str


@frozen
class ToolFinished:
    """A tool call ended: ``outcome`` says how; ``failed`` when the model gets a failed
    result (or the run stops); ``duration`` in seconds."""

    run_id: str
    conversation_id: str
    call_id: str
    name: str
    outcome: ToolOutcomeKind
    failed: bool
    duration: float


@frozen
class RunFinished:
    """The run finished with its output."""

    run_id: str
    conversation_id: str
    usage: Usage
    requests: int
    tool_executions: int


@frozen
class RunPaused:
    """The run paused: ``deferred`` calls wait for approval or an external result."""

    run_id: str
    conversation_id: str
    usage: Usage
    requests: int
    tool_executions: int
    deferred: tuple[DeferredCall, ...]


@frozen
class RunFailed:
    """The run failed (``RunError``) or was cancelled from outside.

    ``stage`` is the ``RunError``'s stage, or ``"cancelled"`` when the run was
    cancelled from outside (``error_type`` is then ``"CancelledError"``); ``message``
    is the error's text.
    """

    run_id: str
    conversation_id: str
    stage: str
    error_type: str
    message: str
    usage: Usage
    requests: int
    tool_executions: int


LifecycleEvent: TypeAlias = (
    RunStarted
    | HistoryProcessed
    | CompactionStarted
    | CompactionFinished
    | RunSteered
    | HistoryPorted
    | RequestStarted
    | RequestFinished
    | RequestFailed
    | RetryScheduled
    | ToolStarted
    | ToolFinished
    | RunFinished
    | RunPaused
    | RunFailed
)
"""Every lifecycle event of a run (the deltas of a stream are ``DeltaEvent``)."""
