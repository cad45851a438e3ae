"""The sans-IO run loop, for a runtime that drives it: ``golem_shell.Agent`` does, and so
can a durable-workflow engine, a job queue or a test.

``start_run`` (or ``resume_run`` for a paused run's stored history) gives the first
``RunState``;
``next_command(state)`` says what to do (``RequestModel``, ``ExecuteTools``,
``ValidateOutput``, or the end: ``Finish``, ``Pause``, ``Fail``); the driver performs it
and folds the outcome back with ``receive(state, outcome)``. Every step the loop allows is
a row of ``TRANSITIONS``. Applications that only run agents need none of this: see
``golem_shell.Agent``.
"""

from golem_core._deferred import DeferredCall, waiting_calls
from golem_core._loop import (
    TRANSITIONS,
    Answered,
    ExecuteTools,
    Fail,
    Finish,
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
    "waiting_calls",
]
