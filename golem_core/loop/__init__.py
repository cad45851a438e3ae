"""The sans-IO run loop, for a runtime that drives it: ``golem_shell.Agent`` does, and so
can a durable-workflow engine, a job queue or a test.

``start_run`` (or ``resume_run`` for a paused run's stored history) gives the first
``RunState``;
``next_command(state)`` says what to do (``RequestModel``, ``ExecuteTools``,
``ValidateOutput``, or the end: ``Finish``, ``Pause``, ``Fail``); the driver performs it
and folds the outcome back with ``receive(state, outcome)``. Every step the loop allows is
a row of ``TRANSITIONS``. Applications that only run agents need none of this: see
``golem_shell.Agent``.

Answers for a paused run are checked by one pure rule, ``check_resume`` (ADR 0090):
the pause they are for, the calls that wait and their kinds, and with keys or ``issued``
the calls the server can vouch for. ``receive`` applies the same rule.

The loop lives in this package's private modules: ``_values`` (``RunConfig``,
``RunState``, the commands and outcomes, ``_stamp``), ``_table`` (``TRANSITIONS``, with
the diagram; ``next_command``, ``receive``), ``_handlers`` (how each outcome builds the
next state), ``_start`` (``start_run``, ``process``, ``paused_from``, ``resume_run``),
``_deferred`` (paused calls and ``check_resume``) and ``_events`` (lifecycle events).
May import: the ground of ``golem_core``, ``codec/``, ``wire/`` and ``history/``; nothing
of ``golem_core`` imports the loop but its faces (``golem_core``, ``golem_core.testing``).

Rules the loop keeps:

- Instructions are resolved by the driver once per run, before the first request;
  they replace every system message of the history and lead the canonical conversation.
- The history is processed and repaired once, in ``start_run``; requests reuse it.
- Messages the run adds (prompt, model turns, tool results) carry the run's identity;
  the history it received keeps its own stamps; synthesized no-result results carry
  none (they equal what repair would produce, so resumes stay cache-friendly).
- A call without an id gets ``golem_<run tag>_<n>_<index>`` (the tag from the run id,
  ``n`` new within the run), unique in the conversation even when a processor cut what
  the run sees, so its result can be paired and its signature vouched for in any later
  run.
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

from golem_core.loop._deferred import (
    Answered,
    DeferredAnswer,
    DeferredCall,
    DeferredError,
    IssuedCalls,
    PausedRun,
    check_answers,
    check_resume,
    waiting_calls,
)
from golem_core.loop._start import (
    as_outcome,
    paused_from,
    process,
    resume_run,
    start_run,
)
from golem_core.loop._table import (
    TERMINAL,
    TRANSITIONS,
    Transition,
    next_command,
    receive,
)
from golem_core.loop._values import (
    CompactHistory,
    CompactionDeclined,
    ExecuteTools,
    Fail,
    Finish,
    HistoryCompacted,
    LoopCommand,
    LoopOutcome,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Pause,
    Phase,
    RequestModel,
    RunConfig,
    RunState,
    Stage,
    Steered,
    ToolCanceled,
    ToolCrashed,
    ToolDone,
    ToolKind,
    ToolOutcome,
    ToolRetry,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    ValidateOutput,
)

__all__ = [
    "Answered",
    "CompactHistory",
    "CompactionDeclined",
    "DeferredAnswer",
    "DeferredCall",
    "DeferredError",
    "ExecuteTools",
    "Fail",
    "Finish",
    "HistoryCompacted",
    "IssuedCalls",
    "LoopCommand",
    "LoopOutcome",
    "ModelFailed",
    "ModelResponded",
    "OutputInvalid",
    "OutputValid",
    "Pause",
    "PausedRun",
    "Phase",
    "RequestModel",
    "RunConfig",
    "RunState",
    "Stage",
    "Steered",
    "TERMINAL",
    "TRANSITIONS",
    "ToolCanceled",
    "ToolCrashed",
    "ToolDone",
    "ToolKind",
    "ToolOutcome",
    "ToolRetry",
    "ToolReturned",
    "ToolSpec",
    "ToolsReturned",
    "Transition",
    "ValidateOutput",
    "as_outcome",
    "check_answers",
    "check_resume",
    "next_command",
    "paused_from",
    "process",
    "receive",
    "resume_run",
    "start_run",
    "waiting_calls",
]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
