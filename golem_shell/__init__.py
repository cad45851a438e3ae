"""golem_shell: the effects of golem (provider HTTP, tools, clock, ids) around ``golem_core``."""

from golem_core import Approved, Denied, ExternalResult
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
from golem_shell._ids import new_id
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
    "ExternalResult",
    "FunctionModel",
    "GolemError",
    "Model",
    "ModelError",
    "OpenAIModel",
    "PartialResult",
    "RunContext",
    "RunError",
    "RunResult",
    "ScriptedModel",
    "Stage",
    "Tool",
    "ToolFailure",
    "UsageError",
    "infer_model",
    "new_id",
    "partial_from",
    "tiktoken_counter",
    "tool",
]
