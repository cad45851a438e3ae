"""A run's set-up as a value: ``RunSpec``, built once per run from the agent and the run's
own keywords, and what every runtime does with it before and around the driver.

Owns what a run is set up with (model, instructions, tools, output, history processor,
limits, settings, signing keys, timeout) and the effects of setting it up that every
runtime performs the same way: resolving the instructions, listing the toolsets' tools,
running the history processor once on exactly the supplied history (its outcome is a
value: a durable engine records it as a step and replays it), validating a candidate
output, and the run's first ``RunState``. ``Agent`` (asyncio), ``golem_shell.durable``
(DBOS) and ``golem_shell.temporal`` take a ``RunSpec`` and never reach into the agent,
so the set-up and the runtimes do not import the agent (no cycle forms).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeAlias

import attrs
from returns.result import Failure, Result

from golem_core import (
    HistoryProcessor,
    Message,
    ModelSettings,
    Part,
    ToolCallPart,
    conversation_id_of,
    failed_outcome,
    join_instructions,
)
from golem_core.loop import (
    CompactHistory,
    CompactionDeclined,
    HistoryCompacted,
    OutputInvalid,
    OutputValid,
    RunConfig,
    RunState,
    ToolSpec,
    as_outcome,
    start_run,
)
from golem_shell._errors import RunError, Stage, UsageError
from golem_shell._ids import new_id
from golem_shell.context._summarize import AsyncHistoryProcessor, compact_history
from golem_shell.models import Model
from golem_shell.run._checks import check_prompt_parts
from golem_shell.run._limits import KEEP, Overrides, UsageLimits, merge_settings
from golem_shell.tools._output import OUTPUT_TOOL_NAME, Output
from golem_shell.tools._tools import ModelRetry, RunContext, Tool, Toolset

__all__ = [
    "InstructionsFunction",
    "Processed",
    "Prompt",
    "RunSpec",
    "compact_once",
    "first_state",
    "joined_instructions",
    "made_tools",
    "process_history",
    "prompt_parts",
    "resolve_instructions",
    "run_config",
    "run_ids",
    "toolset_specs",
    "validate_output",
]

InstructionsFunction: TypeAlias = Callable[[RunContext[Any]], Awaitable[str | None] | str | None]
"""Dynamic instructions: a function (sync or async) of the run's ``RunContext``."""
Prompt: TypeAlias = str | Sequence[Part] | None
"""A run's prompt: text, parts, or ``None`` to continue the history as it is."""
Processed: TypeAlias = Result[Sequence[Message], object] | None
"""The history processor's outcome on a run's supplied history (``None`` when there is
no processor, or when it returned ``None``): the value the run starts from, recorded by
a durable engine as one step."""


@attrs.frozen
class RunSpec:
    """Everything one run is set up with, fixed when it starts.

    Built by ``Agent.run_spec`` from the agent and the run's own keywords (``model=``,
    ``settings=``, ``usage_limits=``), under any ``agent.override(...)`` in force; the
    runtimes read only this. ``settings`` are the agent's merged with the run's;
    ``max_requests`` is the run's request limit when it sets one.
    """

    name: str | None
    model: Model
    instructions: str | None
    dynamic_instructions: InstructionsFunction | None
    tools: Mapping[str, Tool[Any]]
    specs: tuple[ToolSpec, ...]
    """The agent's own tools' specs (not the output tool's, nor any toolset's)."""
    toolsets: tuple[Toolset, ...]
    processor: HistoryProcessor | AsyncHistoryProcessor | None
    output: Output
    validators: tuple[Callable[..., Any], ...]
    settings: ModelSettings
    max_requests: int
    output_retries: int
    usage_limits: UsageLimits | None
    timeout: float | None
    signing_keys: tuple[bytes, ...]

    @property
    def processor_name(self) -> str:
        """The history processor as a run's ``HistoryProcessed`` report names it."""
        processor = self.processor
        return getattr(processor, "__name__", None) or repr(processor)

    def overridden(self, chosen: Overrides) -> RunSpec:
        """This set-up with ``chosen``'s model, settings (merged over these) and limits
        (a request limit replaces ``max_requests``), and its tools and instructions when
        it sets them (``agent.override``)."""
        limits = chosen.usage_limits
        output = self.output
        if chosen.model is not None and output.requested == "native":  # decided per model
            output = Output(output.type, "native", chosen.model)
        spec = self
        if chosen.tools is not KEEP:  # agent.override(tools=...)
            tools = {t.name: t for t in chosen.tools}
            spec = attrs.evolve(spec, tools=tools, specs=tuple(t.spec for t in tools.values()))
        if chosen.instructions is not KEEP:  # agent.override(instructions=...)
            spec = attrs.evolve(spec, instructions=chosen.instructions, dynamic_instructions=None)
        return attrs.evolve(
            spec,
            model=chosen.model if chosen.model is not None else self.model,
            output=output,
            settings=merge_settings(self.settings, chosen.settings),
            max_requests=(
                limits.request_limit
                if limits is not None and limits.request_limit is not None
                else self.max_requests
            ),
            usage_limits=limits,
        )

    def with_output(self, output_type: Any) -> RunSpec:
        """This set-up asking for ``output_type`` instead (in the mode the agent asked
        for, decided against this run's model); the agent's output validators, written
        for its own type, do not run.

        Raises:
            UsageError: the type cannot be described as JSON Schema.
        """
        output = Output(output_type, self.output.requested, self.model)
        return attrs.evolve(self, output=output, validators=())


def joined_instructions(
    first: InstructionsFunction | None, more: Sequence[Callable[..., Any]]
) -> InstructionsFunction | None:
    """One dynamic-instructions function from ``first`` (``dynamic_instructions=``) and
    ``more`` (``@agent.instructions``, taking a ``RunContext`` or nothing), joined a
    blank line apart in that order; ``None`` when there are none."""
    functions: list[Callable[..., Any]] = [] if first is None else [first]
    functions += more
    if not more:
        return first

    async def joined(context: RunContext[Any]) -> str | None:
        texts: list[str] = []
        for function in functions:
            takes = function is first or len(inspect.signature(function).parameters) == 1
            produced = function(context) if takes else function()
            if inspect.isawaitable(produced):
                produced = await produced
            if produced is not None and not isinstance(produced, str):
                name = getattr(function, "__name__", repr(function))
                raise TypeError(
                    f"instructions function {name} returned {type(produced).__name__},"
                    " not str or None"
                )
            if produced:
                texts.append(produced)
        return "\n\n".join(texts) or None

    return joined


def prompt_parts(prompt: Prompt) -> tuple[Part, ...] | None:
    """The prompt's parts, checked (``None``: continue the history)."""
    return check_prompt_parts(prompt)


def run_ids(
    history: Sequence[Message], run_id: str | None, conversation_id: str | None
) -> tuple[str, str]:
    """The run's ids: an explicit id wins, as given; ``""`` or a non-string is refused.
    Without one, the run id is new and the conversation id is the history's (its most
    recent message's, whatever the value) or new."""
    for name, value in (("run_id", run_id), ("conversation_id", conversation_id)):
        if value is not None and (not isinstance(value, str) or not value):
            raise UsageError(
                f"{name} must be a non-empty string or None (None: golem picks one), got {value!r}"
            )
    donated = conversation_id_of(history, conversation_id)
    return (
        run_id if run_id is not None else new_id(),
        donated if donated is not None else new_id(),
    )


def run_config(
    spec: RunSpec,
    run_id: str,
    conversation_id: str,
    instructions: str | None,
    toolset_specs: tuple[ToolSpec, ...] = (),
) -> RunConfig:
    """The run's configuration once its effects (instructions, toolsets) are resolved."""
    limits = spec.usage_limits
    return RunConfig(
        run_id=run_id,
        conversation_id=conversation_id,
        instructions=instructions,
        tools=spec.specs + _output_spec(spec) + toolset_specs,
        output_tool=OUTPUT_TOOL_NAME if spec.output.definition is not None else None,
        output_schema=spec.output.native,
        settings=spec.settings,
        max_requests=spec.max_requests,
        output_retries=spec.output_retries,
        signing_key=spec.signing_keys[0] if spec.signing_keys else None,
        max_input_tokens=None if limits is None else limits.input_tokens_limit,
        max_output_tokens=None if limits is None else limits.output_tokens_limit,
        max_total_tokens=None if limits is None else limits.total_tokens_limit,
        max_tool_calls=None if limits is None else limits.tool_calls_limit,
        max_cost=None if limits is None else limits.cost_limit,
        price=None if limits is None else limits.price,
        compact_on_overflow=spec.processor is not None,
    )


def _output_spec(spec: RunSpec) -> tuple[ToolSpec, ...]:
    definition = spec.output.definition
    return () if definition is None else (ToolSpec(definition, "output", spec.output_retries),)


async def resolve_instructions(spec: RunSpec, context: RunContext[Any]) -> str | None:
    """The run's instructions: the static ones, then the dynamic ones' result (an effect:
    the user's function may do I/O).

    Raises:
        TypeError: the dynamic instructions returned neither ``str`` nor ``None``.
    """
    dynamic: str | None = None
    if spec.dynamic_instructions is not None:
        produced = spec.dynamic_instructions(context)
        if inspect.isawaitable(produced):
            produced = await produced
        if produced is not None and not isinstance(produced, str):
            raise TypeError(
                f"dynamic_instructions returned {type(produced).__name__}, not str or None"
            )
        dynamic = produced
    return join_instructions(spec.instructions, dynamic)


async def toolset_specs(spec: RunSpec, context: RunContext[Any]) -> tuple[ToolSpec, ...]:
    """Ask every toolset for this run's tools; keep them in ``context.toolset_tools``.

    Raises:
        RunError: listing a toolset's tools failed (stage ``tool``).
        UsageError: two tools have one name.
    """
    table = context.toolset_tools
    for ts in spec.toolsets:
        try:
            offered = await ts.tools(context)
        except UsageError:
            raise
        except Exception as e:
            raise RunError(Stage.TOOL, f"listing the tools of {ts!r} failed: {e}", cause=e) from e
        for t in offered:
            if t.name in spec.tools or t.name in table or t.name == OUTPUT_TOOL_NAME:
                raise UsageError(f"two tools are named {t.name!r} (one from {ts!r})")
            table[t.name] = t
    return tuple(t.spec for t in table.values())


async def process_history(spec: RunSpec, history: Sequence[Message]) -> Processed:
    """The history processor's outcome on exactly ``history``, run once (awaited when
    the processor is async, e.g. ``summarize_history``); an exception it raises is a
    ``Failure`` (the run then fails at stage ``history``). ``None`` without a processor.
    """
    processor = spec.processor
    if processor is None:
        return None
    try:
        outcome: Any = processor(history)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except Exception as e:
        return Failure(f"{type(e).__name__}: {e}")
    return as_outcome(outcome)


def first_state(
    spec: RunSpec,
    config: RunConfig,
    history: Sequence[Message],
    prompt: Sequence[Part] | None,
    processed: Processed,
    now: datetime,
) -> RunState:
    """The run's first state, from the processor's recorded outcome (deterministic)."""
    return start_run(
        config,
        history,
        prompt,
        processed=processed,
        processor_name=spec.processor_name,
        now=now,
    )


async def compact_once(
    spec: RunSpec, command: CompactHistory
) -> HistoryCompacted | CompactionDeclined:
    """Compact and retry's one compaction (ADR 0141), with the run's history processor."""
    if spec.processor is None:
        return CompactionDeclined(failed_outcome("the agent has no history processor"))
    return await compact_history(spec.processor, command)


async def validate_output(
    spec: RunSpec, candidate: ToolCallPart | Message, context: RunContext[Any]
) -> OutputValid | OutputInvalid:
    """A candidate output checked against the output type, then by the output
    validators (sync or async; a ``ModelRetry`` is a correction round). Every runtime
    validates with this (a durable engine in its workflow body)."""
    outcome = spec.output.check(candidate)
    if not isinstance(outcome, OutputValid) or not spec.validators:
        return outcome
    value = outcome.value
    for validator in spec.validators:
        takes_context = len(inspect.signature(validator).parameters) == 2
        try:
            checked = validator(context, value) if takes_context else validator(value)
            value = await checked if inspect.isawaitable(checked) else checked
        except ModelRetry as e:
            return OutputInvalid(e.message)
    return OutputValid(value)


def made_tools(tools: Sequence[Tool[Any] | Callable[..., Any]]) -> tuple[Tool[Any], ...]:
    """``override(tools=...)``'s tools, made as ``Agent(tools=...)`` makes them."""
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise UsageError(f"tools must be a sequence of tools, got {type(tools).__name__}")
    made = tuple(t if isinstance(t, Tool) else Tool.from_function(t) for t in tools)
    names = [t.name for t in made]
    if len(set(names)) != len(names):
        raise UsageError(f"two tools are named alike in override(tools=...): {names}")
    return made
