"""The one run driver: ``drive(progress, effects)``, over a typed effects protocol.

Owns the loop that turns the core's commands into effects and their outcomes back into
states, for every runtime: ``Agent`` (asyncio), the DBOS integration
(``golem_shell.durable``) and the Temporal one (``golem_shell.temporal``). Each runtime
supplies an ``Effects`` value; everything else a run does is here, once:

- ask ``golem_core.loop.next_command`` what to do, perform it through the effects, fold
  the outcome in with ``receive``; keep the latest state in ``progress`` (a cancel or
  timeout at any moment leaves a partial built from it);
- run a tool batch concurrently and land each outcome as it completes (``ToolDone``),
  so a tool that finished is never lost to a cancel; what a failing tool does to its
  siblings is the effects' one documented choice (``tool_batch``);
- wait for answers when the run pauses (``effects.wait``): ``None`` ends the run paused
  (``Agent``), answers continue it in the same run (durable engines);
- compact the history when a provider refused a request as too long
  (``CompactHistory``, ADR 0141) through the effects' ``compact``, reported as
  ``CompactionStarted`` / ``CompactionFinished``;
- report the run to its observer: lifecycle events and OpenTelemetry spans come from
  here, so every runtime has them.

The driver decides nothing: policy is the core's, effects are the runtime's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, Protocol, TypeAlias

from golem_core import Message, ToolCallPart, failed_outcome
from golem_core.loop import (
    Answered,
    CompactHistory,
    CompactionDeclined,
    ExecuteTools,
    Fail,
    Finish,
    HistoryCompacted,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Pause,
    Phase,
    RequestModel,
    RunState,
    Steered,
    ToolCrashed,
    ToolDone,
    ToolOutcome,
    ToolRetry,
    ToolsReturned,
    ValidateOutput,
    next_command,
    receive,
)
from golem_shell.observe._observe import RunObserver
from golem_shell.tools._tools import TOOL_CRASHES

__all__ = ["Effects", "End", "Progress", "ToolBatch", "drive", "run"]

ToolBatch: TypeAlias = Literal["cancel_siblings", "run_all"]
"""What a tool that crashes or stops the run does to the rest of its batch.

``"cancel_siblings"`` (``Agent``): the siblings still running are cancelled at once;
each outcome lands as it completes, so those that finished are kept. ``"run_all"``
(durable engines): every call of the batch runs to its end and the batch's outcomes are
folded in together, in call order, so a replay folds exactly what the first run folded
(an engine records each call; cancelling one mid-flight would run it again on replay).
"""

End: TypeAlias = Finish | Pause | Fail
"""How a driven run ends: the core's last command."""


class Effects(Protocol):
    """What a runtime supplies to the driver: every effect of a run.

    Implementations: ``golem_shell.run._asyncio.AgentEffects`` (asyncio), the DBOS steps in
    ``golem_shell.durable``, the Temporal activities in ``golem_shell.temporal``.
    """

    tool_batch: ToolBatch
    """What a failing tool does to its batch (see ``ToolBatch``)."""
    streaming: bool
    """Whether model answers are streamed (reported on each request's events)."""
    cause: BaseException | None
    """The exception behind the latest failed request, when the runtime has it (a
    replayed failure has none): it becomes a failed run's ``RunError.__cause__``. The
    driver takes it (sets it back to ``None``) as soon as the request has failed."""

    async def request(self, command: RequestModel, state: RunState) -> ModelResponded | ModelFailed:
        """Send ``command.request`` to the model; a failure is an outcome, not an exception."""
        ...

    def tools(
        self, calls: Sequence[ToolCallPart], state: RunState
    ) -> Sequence[Awaitable[ToolOutcome]]:
        """One awaitable per call, in call order, not yet awaited: the driver runs them
        concurrently (a durable engine reserves its step or activity ids here)."""
        ...

    async def validate(self, candidate: ToolCallPart | Message) -> OutputValid | OutputInvalid:
        """Check a candidate output against the agent's output type and validators."""
        ...

    async def wait(self, paused: RunState) -> Answered | None:
        """The answers a paused run receives, or ``None`` to end the run paused."""
        ...

    # Optional (looked up with ``getattr``): ``async def steering(self, state) ->
    # Sequence[Message]``: the user messages sent to the run since it last asked (steering,
    # issue 36), taken before each request and before an output is taken; a durable
    # runtime records what it took. Without it a run is not steerable.
    # Optional (looked up with ``getattr``): ``async def compact(self, command:
    # CompactHistory, state: RunState) -> HistoryCompacted | CompactionDeclined``, the
    # runtime's compaction strategy run once on ``command.history``
    # (``golem_shell.context._summarize.compact_history``). A runtime without it answers every
    # ``CompactHistory`` with "failed: this runtime has no compaction strategy".


class Progress:
    """The latest state of a run being driven, for a partial at any moment; the exception
    behind a failure (chained to the ``RunError``); the run's observer, if any."""

    __slots__ = ("cause", "observer", "state")

    def __init__(self, state: RunState, observer: RunObserver | None = None) -> None:
        self.state = state
        self.cause: BaseException | None = None
        self.observer = observer


async def drive(progress: Progress, effects: Effects) -> End:
    """Drive the run in ``progress.state`` to its end through ``effects``.

    Returns the core's last command: ``Finish`` (the output), ``Pause`` (waiting calls,
    when ``effects.wait`` gives no answers) or ``Fail`` (a stage and a reason; the
    exception behind it, if any, is ``progress.cause``).
    """
    observer = progress.observer
    state = progress.state
    steering = getattr(effects, "steering", None)
    while True:
        command = next_command(state)
        outcome: Any
        if steering is not None and isinstance(command, RequestModel | ValidateOutput):
            sent = await steering(state)
            if sent:  # user messages sent meanwhile join here, a safe point
                state = receive(state, Steered(tuple(sent)))
                progress.state = state
                if observer is not None:
                    await observer.steered(state.requests + 1, len(sent))
                continue
        if isinstance(command, RequestModel):
            if observer is not None:
                await observer.request_started(command.request, state, effects.streaming)
            outcome = await effects.request(command, state)
            if isinstance(outcome, ModelFailed):
                # taken, not shared: the effects holding an exception whose traceback
                # holds the effects' own frame is a reference cycle, and it would keep
                # the model (its HTTP clients' finalizer too) for the cyclic collector
                progress.cause, effects.cause = effects.cause, None
            if observer is not None:
                await observer.request_ended(outcome, progress.cause)
        elif isinstance(command, CompactHistory):
            outcome = await _compact(progress, effects, command, state)
        elif isinstance(command, ExecuteTools):
            state = await _batch(progress, effects, command.calls)
            continue
        elif isinstance(command, ValidateOutput):
            outcome = await effects.validate(command.candidate)
        elif isinstance(command, Pause):
            answered = await effects.wait(state)
            if answered is None:
                return command
            outcome = answered
        else:
            return command
        state = receive(state, outcome)
        progress.state = state


async def run(
    progress: Progress,
    effects: Effects,
    guard: Callable[[Coroutine[Any, Any, End]], Coroutine[Any, Any, End]] | None = None,
) -> End:
    """``drive`` the run, reported to its observer (start, end, failure); ``guard`` wraps
    the driving inside the observed scope (the ``Agent``'s timeout)."""

    async def body() -> End:  # made only when awaited: nothing to close if never started
        driven = drive(progress, effects)
        return await (driven if guard is None else guard(driven))

    observer = progress.observer
    if observer is None:
        return await body()
    return await observer.watch(body(), progress)


Compacted: TypeAlias = HistoryCompacted | CompactionDeclined


async def _compact(
    progress: Progress, effects: Effects, command: CompactHistory, state: RunState
) -> Compacted:
    """Perform ``CompactHistory`` through the effects' ``compact``, reported to the
    observer as a compaction triggered by a refused request (ADR 0141)."""
    observer = progress.observer
    compact: Callable[[CompactHistory, RunState], Awaitable[Compacted]] | None = getattr(
        effects, "compact", None
    )
    name = str(getattr(compact, "strategy_name", None) or "compaction")
    request = state.requests + 1
    if observer is not None:
        await observer.compaction_started(name, "context_too_long", request, len(command.history))
    if compact is None:
        outcome: Compacted = CompactionDeclined(
            failed_outcome("this runtime has no compaction strategy")
        )
    else:
        outcome = await compact(command, state)
    if observer is not None:
        if isinstance(outcome, HistoryCompacted):
            record = outcome.record
            await observer.compaction_finished(
                record.processor, "context_too_long", record.outcome, record, request
            )
        else:
            await observer.compaction_finished(
                name, "context_too_long", outcome.outcome, None, request
            )
    return outcome


async def _batch(progress: Progress, effects: Effects, calls: Sequence[ToolCallPart]) -> RunState:
    """Run one tool batch; return the state once the batch has ended."""
    observer = progress.observer
    state = progress.state
    crashes: dict[str, BaseException] = {}
    token = TOOL_CRASHES.set(crashes)  # each task copies the context: they share the dict
    try:
        works = effects.tools(calls, state)
        order = {str(c.id): i for i, c in enumerate(calls)}
        tasks: dict[asyncio.Future[ToolOutcome], ToolCallPart] = {}
        for call, work in zip(calls, works, strict=True):
            watched = work if observer is None else observer.tool(call, work)
            tasks[asyncio.ensure_future(watched)] = call
    finally:
        TOOL_CRASHES.reset(token)
    pending = set(tasks)
    together = effects.tool_batch == "run_all"
    outcomes: list[ToolOutcome] = []
    retried: BaseException | None = None  # the last ModelRetry (or refused arguments)
    try:
        while pending and state.phase is Phase.TOOLS:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: order[str(tasks[t].id)]):
                outcome = task.result()
                if isinstance(outcome, ToolCrashed):
                    progress.cause = crashes.get(outcome.call_id)  # chained to the RunError
                elif isinstance(outcome, ToolRetry):
                    retried = crashes.get(outcome.call_id) or retried
                if together:
                    outcomes.append(outcome)
                elif state.phase is Phase.TOOLS:  # lands now: a cancel keeps it
                    state = receive(state, ToolDone(outcome))
                    progress.state = state
                if observer is not None:
                    await observer.tool_finished(tasks[task], outcome, content=effects.streaming)
            if together and not pending:
                outcomes.sort(key=lambda o: order[o.call_id])
                state = receive(state, ToolsReturned(tuple(outcomes)))
                progress.state = state
    finally:
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
    if state.phase is Phase.FAILED and progress.cause is None:
        progress.cause = retried  # a tool out of retries: its last ModelRetry is the cause
    return state
