"""The asyncio runtime: a run's effects on plain asyncio, its timeout, and its set-up.

Owns what ``Agent``'s runs do beyond the one driver (``golem_shell.run._driver``), as
``golem_shell.durable`` does for DBOS and ``golem_shell.temporal`` for Temporal: the
effects (``AgentEffects``: requests through the run's model, streamed to ``on_delta``
when given; each tool call in a task of its own, a failing one cancelling its siblings;
the wall clock; a paused run ends), the run's timeout over its set-up and its driving,
and the ``RunResult`` or ``RunError`` it ends with. Everything reads a ``RunSpec``.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Coroutine, Sequence
from contextlib import AsyncExitStack
from contextvars import copy_context
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar, cast

import attrs

from golem_core import Message, ModelErrorKind, Part, StreamDone, ToolCallPart
from golem_core.loop import (
    Answered,
    CompactHistory,
    CompactionDeclined,
    Fail,
    Finish,
    HistoryCompacted,
    IssuedCalls,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Pause,
    RequestModel,
    RunConfig,
    RunState,
    ToolOutcome,
    check_resume,
    paused_from,
    receive,
)
from golem_shell._errors import (
    DeferredResultsError,
    ModelError,
    ModelRequestsNotAllowed,
    RunError,
    Stage,
    UsageError,
)
from golem_shell._results import DeltaEvent, DeltaHandler, RunResult, partial_of
from golem_shell.observe._observe import EventHandler, observe_run, relay
from golem_shell.run._capture import record_run_messages
from golem_shell.run._driver import End, Progress, ToolBatch, run
from golem_shell.run._setup import (
    RunSpec,
    compact_once,
    first_state,
    process_history,
    resolve_instructions,
    run_config,
    toolset_specs,
    validate_output,
)
from golem_shell.run._steering import Steering
from golem_shell.tools._tools import RunContext, Toolset

__all__ = ["AgentEffects", "OpenToolsets", "resume", "start", "sync"]

T = TypeVar("T")


class AgentEffects:
    """The effects of a run on asyncio: requests through the run's model (streamed to
    ``on_delta`` when given), each tool call in a task of its own, the wall clock. A
    failing tool cancels its siblings (``tool_batch``); a paused run ends (``wait``
    gives no answers: they come back in a new run). The durable engines perform one
    request or one tool call with it inside a recorded step."""

    tool_batch: ToolBatch = "cancel_siblings"

    def __init__(
        self,
        spec: RunSpec,
        context: RunContext[Any],
        on_delta: DeltaHandler | None,
        steer: Steering | None = None,
    ) -> None:
        self.spec = spec
        self.context = context
        self.on_delta = on_delta
        self.steer = steer
        self.streaming = on_delta is not None
        self.cause: BaseException | None = None

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def request(self, command: RequestModel, state: RunState) -> ModelResponded | ModelFailed:
        request = command.request
        try:
            if self.on_delta is None:
                message = await self.spec.model.request(request)
            else:
                message = await self._stream(request, state, self.on_delta)
        except _HandlerFailed as e:  # the caller's code, not the model: say so
            error = e.error
            self.cause = error
            return ModelFailed(
                f"the on_delta handler raised {type(error).__name__}: {error}"
                " (the model's stream was fine; the run stopped because the handler failed)"
            )
        except ModelRequestsNotAllowed:
            raise  # a test that forgot its override: loudly, not as a failed run
        except (ModelError, UsageError) as e:
            self.cause = e
            return ModelFailed(str(e), e.kind if isinstance(e, ModelError) else None)
        except Exception as e:  # a model function or an adapter bug
            self.cause = e
            return ModelFailed(f"the model request raised {type(e).__name__}: {e}")
        if message.created_at is None:
            message = attrs.evolve(message, created_at=self.now())
        return ModelResponded(message)

    async def _stream(self, request: Any, state: RunState, on_delta: DeltaHandler) -> Message:
        final: Message | None = None
        number = state.requests + 1
        stream = self.spec.model.request_stream(request)
        try:
            async for event in stream:
                if isinstance(event, StreamDone):
                    final = event.message
                    continue
                try:
                    delivered = on_delta(
                        DeltaEvent(state.config.run_id, state.config.conversation_id, number, event)
                    )
                    if inspect.isawaitable(delivered):
                        await delivered
                except Exception as e:
                    raise _HandlerFailed(e) from e
        finally:  # close the response now, not when the generator is collected
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if final is None:
            raise ModelError(
                ModelErrorKind.STREAM_INTERRUPTED,
                "the stream ended without a complete message",
                provider=self.spec.model.name,
            )
        return final

    def tools(
        self, calls: Sequence[ToolCallPart], state: RunState
    ) -> list[Coroutine[Any, Any, ToolOutcome]]:
        base = self.context
        works = []
        for call in calls:
            context = attrs.evolve(
                base,
                usage=state.usage,
                requests=state.requests,
                messages=state.messages,
                tool_call_id=call.id,
                tool_name=call.name,
            )
            tool = self.spec.tools.get(call.name) or base.toolset_tools[call.name]
            works.append(tool.execute(context, call))
        return works

    async def validate(self, candidate: ToolCallPart | Message) -> OutputValid | OutputInvalid:
        return await validate_output(self.spec, candidate, self.context)

    async def steering(self, state: RunState) -> tuple[Message, ...]:
        """What was sent to the run (``Steering.send``) since it last looked."""
        return () if self.steer is None else self.steer._take()

    async def compact(
        self, command: CompactHistory, state: RunState
    ) -> HistoryCompacted | CompactionDeclined:
        """Compact once with the run's history processor (compact and retry, ADR 0141)."""
        return await compact_once(self.spec, command)

    async def wait(self, paused: RunState) -> Literal[None]:
        return None


class _HandlerFailed(Exception):
    """The user's ``on_delta`` handler raised ``error`` (carried out of the stream so the
    failure is reported as the handler's, not the model's)."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        super().__init__(str(error))


async def start(
    spec: RunSpec,
    history: Sequence[Message],
    prompt: Sequence[Part] | None,
    context: RunContext[Any],
    on_delta: DeltaHandler | None,
    on_event: EventHandler | None,
    steer: Steering | None = None,
) -> RunResult[Any]:
    """A run from ``history`` and ``prompt``, set up and driven to its end: instructions
    resolved, toolsets listed and the history processor run once, within the timeout."""
    deadline = _deadline(spec)
    config = await _config(spec, context, deadline)
    processed = await _within(
        spec, process_history(spec, history), deadline, "its history processor ran"
    )
    state = first_state(spec, config, history, prompt, processed, datetime.now(UTC))
    return await _drive(spec, state, context, on_delta, on_event, deadline, steer=steer)


async def resume(
    spec: RunSpec,
    history: Sequence[Message],
    answered: Answered,
    context: RunContext[Any],
    on_delta: DeltaHandler | None,
    on_event: EventHandler | None,
    *,
    issued: IssuedCalls | None = None,
    steer: Steering | None = None,
) -> RunResult[Any]:
    """A paused run (its ``history``) continued with ``answered``, driven to its end.

    The answers are checked first (the core's ``check_resume``: the pause, this server's
    signatures, ``issued``, the waiting calls and their kinds), before anything runs.

    Raises:
        DeferredResultsError: the answers do not fit the waiting calls (nothing ran).
        UsageError: ``issued`` is a single string.
    """
    before = paused_from(run_config(spec, context.run_id, context.conversation_id, None), history)
    try:
        refused = check_resume(
            before, answered, issued=issued, signing_keys=spec.signing_keys, history=history
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    if refused is not None:
        raise DeferredResultsError(str(refused), refused.call_ids)
    deadline = _deadline(spec)
    config = await _config(spec, context, deadline)
    state = receive(paused_from(config, history), answered)
    if state.rejected is not None:  # a toolset's tool changed what waits
        raise DeferredResultsError(str(state.rejected), state.rejected.call_ids)
    return await _drive(
        spec, state, context, on_delta, on_event, deadline, resumed=True, steer=steer
    )


def _deadline(spec: RunSpec) -> float | None:
    """When the run must end (event-loop time), from its start: ``None`` for no timeout."""
    if spec.timeout is None:
        return None
    return asyncio.get_running_loop().time() + spec.timeout


async def _within(spec: RunSpec, work: Awaitable[T], deadline: float | None, doing: str) -> T:
    """``await work`` before the run's requests, by the run's ``deadline``: past it, a
    ``RunError`` at stage ``timeout``; any other exception (a ``TimeoutError`` of the
    work's own included) propagates to the caller."""
    try:
        async with asyncio.timeout_at(deadline) as limit:
            return await work
    except TimeoutError as e:
        if not limit.expired():
            raise
        raise RunError(
            Stage.TIMEOUT,
            f"the run took longer than its timeout of {spec.timeout} s while {doing}",
            cause=e,
        ) from e


async def _config(spec: RunSpec, context: RunContext[Any], deadline: float | None) -> RunConfig:
    try:
        instructions = await _within(
            spec, resolve_instructions(spec, context), deadline, "resolving its instructions"
        )
    except RunError:
        raise
    except Exception as e:
        raise RunError(
            Stage.INSTRUCTIONS,
            f"resolving the instructions failed: {str(e) or type(e).__name__}",
            cause=e,
        ) from e
    return run_config(
        spec,
        context.run_id,
        context.conversation_id,
        instructions,
        await toolset_specs(spec, context),
    )


async def _drive(
    spec: RunSpec,
    state: RunState,
    context: RunContext[Any],
    on_delta: DeltaHandler | None,
    on_event: EventHandler | None,
    deadline: float | None,
    *,
    resumed: bool = False,
    steer: Steering | None = None,
) -> RunResult[Any]:
    """Drive the run with asyncio effects, under the run's timeout (until ``deadline``);
    a cancel or timeout at any moment leaves the partial."""
    progress = Progress(state, observe_run(spec, state, on_event, resumed=resumed))
    effects = AgentEffects(spec, context, relay(progress.observer, on_delta), steer)
    if steer is not None:
        steer._bind()

    async def guarded(body: Coroutine[Any, Any, End]) -> End:
        try:
            if deadline is None:
                return await body
            async with asyncio.timeout_at(deadline) as limit:
                return await body
        except TimeoutError as e:
            if deadline is None or not limit.expired():
                raise
            raise RunError(
                Stage.TIMEOUT,
                f"the run took longer than its timeout of {spec.timeout} s",
                partial=partial_of(progress.state),
                cause=e,
            ) from e
        except asyncio.CancelledError as e:
            e.golem_partial = partial_of(progress.state)  # type: ignore[attr-defined]
            raise

    try:
        end = await run(progress, effects, guarded)
    finally:
        record_run_messages(progress.state.messages)
        if steer is not None:
            steer._end()
    if isinstance(end, Fail):
        raise RunError(
            Stage(end.stage),
            end.reason,
            partial=partial_of(end.state),
            cause=progress.cause,
        ) from progress.cause
    return _result(end)


def _result(end: Finish | Pause) -> RunResult[Any]:
    state = end.state
    return RunResult(
        output=end.output if isinstance(end, Finish) else None,
        messages=state.messages,
        new_messages=state.added,
        usage=state.usage,
        run_id=state.config.run_id,
        conversation_id=state.config.conversation_id,
        requests=state.requests,
        tool_executions=state.tool_executions,
        deferred=end.deferred if isinstance(end, Pause) else (),
    )


class OpenToolsets:
    """An agent's toolsets held open (those that are async context managers, e.g. MCP
    connections): for async code (``async with agent``), and for the ``_sync`` methods
    of one thread (``with agent``), entered and exited in one task of the thread's event
    loop, which holds them open between runs (MCP clients must leave their scopes in
    the task that entered them)."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self.toolsets = tuple(toolsets)
        self._stack: AsyncExitStack | None = None
        self._holder: tuple[asyncio.Future[None], asyncio.Event] | None = None

    async def open(self) -> None:
        async with AsyncExitStack() as stack:
            for ts in self.toolsets:
                if hasattr(ts, "__aenter__"):
                    await stack.enter_async_context(cast(Any, ts))
            self._stack = stack.pop_all()

    async def close(self) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def open_sync(self) -> None:
        """Open them in a task of this thread's ``sync`` loop that holds them open.

        Raises:
            UsageError: they are open already.
        """
        if self._holder is not None:
            raise UsageError("this agent's toolsets are already open (with agent: ...)")

        async def open_toolsets() -> None:
            ready, close = asyncio.Event(), asyncio.Event()

            async def hold() -> None:
                await self.open()
                try:
                    ready.set()
                    await close.wait()
                finally:
                    await self.close()

            holder = asyncio.ensure_future(hold())
            opened = asyncio.ensure_future(ready.wait())
            await asyncio.wait({holder, opened}, return_when=asyncio.FIRST_COMPLETED)
            if holder.done():
                opened.cancel()
                holder.result()  # entering failed: raise why
            self._holder = (holder, close)

        sync(open_toolsets())

    def close_sync(self) -> None:
        """Close what ``open_sync`` opened (nothing when nothing is open)."""
        held, self._holder = self._holder, None
        if held is None:
            return
        holder, close = held

        async def close_toolsets() -> None:
            close.set()
            await holder

        sync(close_toolsets())


_runners = threading.local()


def sync(coroutine: Awaitable[T]) -> T:
    """Run ``coroutine`` to completion for code without an event loop.

    Each thread keeps one event loop for its ``_sync`` calls, so a model's connection
    pool lives on across calls (and a model also works when the caller mixes these
    with ``asyncio.run``: HTTP models keep a client per event loop).

    Raises:
        UsageError: called inside a running event loop.
    """
    try:
        asyncio.get_running_loop()
        inside = True
    except RuntimeError:
        inside = False
    if inside:
        if inspect.iscoroutine(coroutine):
            coroutine.close()
        raise UsageError(
            "the _sync methods cannot run inside an event loop; await the async method instead"
        )
    runner: asyncio.Runner | None = getattr(_runners, "runner", None)
    if runner is None:
        runner = _runners.runner = asyncio.Runner()
    # the caller's context (an agent.override(...) set after the runner was made)
    result: T = runner.run(cast(Any, coroutine), context=copy_context())
    return result
