"""golem_shell: the effects of golem (provider HTTP, tools, clock, ids) around ``golem_core``."""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING

from golem_core import (
    Approved,
    CompactionFinished,
    CompactionStarted,
    Denied,
    ExternalResult,
    LifecycleEvent,
    Price,
    RequestFailed,
    RequestFinished,
    RequestStarted,
    RetryPolicy,
    RetryScheduled,
    RunFailed,
    RunFinished,
    RunPaused,
    RunStarted,
    RunSteered,
    ToolFinished,
    ToolOutcomeKind,
    ToolStarted,
)
from golem_shell._agent import Agent
from golem_shell._errors import (
    DeferredResultsError,
    GolemError,
    ModelError,
    ModelRequestsNotAllowed,
    PartialResult,
    RunError,
    Stage,
    UsageError,
)
from golem_shell._ids import new_id
from golem_shell._results import (
    DeltaEvent,
    DeltaHandler,
    RunResult,
    ToolResultEvent,
    partial_from,
)
from golem_shell.context._ahead import PreparedCompaction, prepare_ahead
from golem_shell.context._cold import compact_when_cold
from golem_shell.context._native_compaction import native_compaction
from golem_shell.context._recall import RECALL_HINT, recall_tool
from golem_shell.context._summarize import (
    AsyncHistoryProcessor,
    ModelProbe,
    compact_history,
    probe_compaction,
    run_history_processor,
    summarize_history,
)
from golem_shell.context._tokens import tiktoken_counter
from golem_shell.models import (
    FunctionModel,
    Model,
    ScriptedModel,
    TestModel,
    infer_model,
)
from golem_shell.observe._observe import EventHandler, instrument, uninstrument
from golem_shell.run._capture import capture_run_messages
from golem_shell.run._event_stream import EventStream, RunEvent
from golem_shell.run._limits import UsageLimits
from golem_shell.run._options import RunOptions, StreamOptions
from golem_shell.run._setup import RunSpec
from golem_shell.run._steering import Steering
from golem_shell.tools._tools import (
    Canceled,
    ModelRetry,
    RunContext,
    Tool,
    ToolDecorator,
    ToolFailure,
    Toolset,
    tool,
)

if _TYPE_CHECKING:  # imported on first use (start-up: issue 29), see ``__getattr__``
    from golem_shell.cli import history_schema
    from golem_shell.context._token_counters import (
        AsyncTokenCounter,
        ProviderTokenCounter,
        anthropic_token_counter,
        async_budget_history,
        gemini_token_counter,
    )
    from golem_shell.models.anthropic import AnthropicModel
    from golem_shell.models.gemini import GeminiModel
    from golem_shell.models.openai import OpenAIModel
    from golem_shell.models.openai_responses import OpenAIResponsesModel
    from golem_shell.store import (
        CorruptHistoryError,
        HistoryConflict,
        HistoryStore,
        HistoryStoreError,
        PostgresHistoryStore,
        SQLiteHistoryStore,
    )

_LAZY = {
    "AnthropicModel": "golem_shell.models.anthropic",
    "GeminiModel": "golem_shell.models.gemini",
    "OpenAIModel": "golem_shell.models.openai",
    "OpenAIResponsesModel": "golem_shell.models.openai_responses",
    **dict.fromkeys(
        (
            "AsyncTokenCounter",
            "ProviderTokenCounter",
            "anthropic_token_counter",
            "async_budget_history",
            "gemini_token_counter",
        ),
        "golem_shell.context._token_counters",
    ),
    "history_schema": "golem_shell.cli",
    **dict.fromkeys(
        (
            "CorruptHistoryError",
            "HistoryConflict",
            "HistoryStore",
            "HistoryStoreError",
            "PostgresHistoryStore",
            "SQLiteHistoryStore",
        ),
        "golem_shell.store",
    ),
}
"""Exports whose modules load on first use: the provider adapters (httpx, the wire
codecs), the history stores (sqlite3, the erasure and crypto helpers), the command line
(argparse) and the provider token counters."""


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'golem_shell' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Agent",
    "AnthropicModel",
    "Approved",
    "AsyncHistoryProcessor",
    "AsyncTokenCounter",
    "Canceled",
    "CompactionFinished",
    "CompactionStarted",
    "CorruptHistoryError",
    "DeferredResultsError",
    "DeltaEvent",
    "DeltaHandler",
    "Denied",
    "EventHandler",
    "EventStream",
    "ExternalResult",
    "FunctionModel",
    "GeminiModel",
    "GolemError",
    "HistoryConflict",
    "HistoryStore",
    "HistoryStoreError",
    "LifecycleEvent",
    "Model",
    "ModelError",
    "ModelProbe",
    "ModelRequestsNotAllowed",
    "ModelRetry",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "PartialResult",
    "PostgresHistoryStore",
    "PreparedCompaction",
    "Price",
    "ProviderTokenCounter",
    "RECALL_HINT",
    "RequestFailed",
    "RequestFinished",
    "RequestStarted",
    "RetryPolicy",
    "RetryScheduled",
    "RunContext",
    "RunError",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunOptions",
    "RunPaused",
    "RunResult",
    "RunSpec",
    "RunStarted",
    "RunSteered",
    "SQLiteHistoryStore",
    "ScriptedModel",
    "Stage",
    "Steering",
    "StreamOptions",
    "TestModel",
    "Tool",
    "ToolDecorator",
    "ToolFailure",
    "ToolFinished",
    "ToolOutcomeKind",
    "ToolResultEvent",
    "ToolStarted",
    "Toolset",
    "UsageError",
    "UsageLimits",
    "anthropic_token_counter",
    "async_budget_history",
    "capture_run_messages",
    "compact_history",
    "compact_when_cold",
    "gemini_token_counter",
    "history_schema",
    "infer_model",
    "instrument",
    "native_compaction",
    "new_id",
    "partial_from",
    "prepare_ahead",
    "probe_compaction",
    "recall_tool",
    "run_history_processor",
    "summarize_history",
    "tiktoken_counter",
    "tool",
    "uninstrument",
]

from golem_core.public import claim_public_names as _claim_public_names  # noqa: E402

_claim_public_names(globals())  # reprs and tracebacks name this module
