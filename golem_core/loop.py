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
"""

from golem_core._deferred import (
    DeferredAnswer,
    DeferredCall,
    DeferredError,
    IssuedCalls,
    PausedRun,
    check_answers,
    check_resume,
    waiting_calls,
)
from golem_core._loop import (
    TRANSITIONS,
    Answered,
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
    Transition,
    ValidateOutput,
    next_command,
    paused_from,
    receive,
    resume_run,
    start_run,
)
from golem_core._loop_table import TERMINAL

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
    "check_answers",
    "check_resume",
    "next_command",
    "paused_from",
    "receive",
    "resume_run",
    "start_run",
    "waiting_calls",
]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
