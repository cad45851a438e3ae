"""golem_shell: the effects of golem (provider HTTP, tools, clock, ids) around ``golem_core``."""

from golem_core import (
    Approved,
    Denied,
    ExternalResult,
    LifecycleEvent,
    RequestFailed,
    RequestFinished,
    RequestStarted,
    RetryScheduled,
    RunFailed,
    RunFinished,
    RunPaused,
    RunStarted,
    ToolFinished,
    ToolOutcomeKind,
    ToolStarted,
)
from golem_shell._agent import Agent, DeltaEvent, RunResult, partial_from
from golem_shell._errors import (
    DeferredResultsError,
    GolemError,
    ModelError,
    PartialResult,
    RunError,
    Stage,
    UsageError,
)
from golem_shell._event_stream import EventStream, RunEvent
from golem_shell._ids import new_id
from golem_shell._observe import EventHandler, instrument, uninstrument
from golem_shell._tokens import tiktoken_counter
from golem_shell._tools import Canceled, RunContext, Tool, ToolFailure, tool
from golem_shell.models import (
    AnthropicModel,
    FunctionModel,
    Model,
    OpenAIModel,
    ScriptedModel,
    infer_model,
)

__all__ = [
    "Agent",
    "AnthropicModel",
    "Approved",
    "Canceled",
    "DeferredResultsError",
    "DeltaEvent",
    "Denied",
    "EventHandler",
    "EventStream",
    "ExternalResult",
    "FunctionModel",
    "GolemError",
    "LifecycleEvent",
    "Model",
    "ModelError",
    "OpenAIModel",
    "PartialResult",
    "RequestFailed",
    "RequestFinished",
    "RequestStarted",
    "RetryScheduled",
    "RunContext",
    "RunError",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunPaused",
    "RunResult",
    "RunStarted",
    "ScriptedModel",
    "Stage",
    "Tool",
    "ToolFailure",
    "ToolFinished",
    "ToolOutcomeKind",
    "ToolStarted",
    "UsageError",
    "infer_model",
    "instrument",
    "new_id",
    "partial_from",
    "tiktoken_counter",
    "tool",
    "uninstrument",
]
