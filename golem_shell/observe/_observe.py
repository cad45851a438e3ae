"""Observing a run: lifecycle events for the caller, spans and metrics for OpenTelemetry.

Owns the one object per run that the driver (``golem_shell.run._driver``) calls at a few
points: the run's start and end (``watch``), each model request (``request_started``,
``request_ended``), each tool call (``tool``, ``tool_finished``), each retry of a request
(``golem_shell._hooks.report_retry``, called by the HTTP layer), and each streamed delta
(``relay``). The observer turns them
into ``golem_core.loop._events`` values for the caller's ``on_event`` handler and, once
``instrument()`` has been called, into OpenTelemetry spans and metrics
(``golem_shell.observe._otel``, imported only then).

When nobody listens (no handler, tracing not enabled) ``observe_run`` returns ``None``
and every hook is one ``is None`` check: observing costs nothing.

An ``on_event`` handler observes; it never steers the run. If it raises, golem stops
calling it and the exception ends the run: it propagates out of the run method
unchanged, with the run's partial result attached (``partial_from(error)``), as a
cancellation does.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias

from golem_core import (
    CompactionFinished,
    CompactionRecord,
    CompactionStarted,
    CompactionTrigger,
    HistoryPorted,
    HistoryProcessed,
    LifecycleEvent,
    Message,
    ModelRequest,
    RequestFailed,
    RequestFinished,
    RequestStarted,
    RetryScheduled,
    RunFailed,
    RunFinished,
    RunPaused,
    RunStarted,
    RunSteered,
    TextPart,
    ToolCallPart,
    ToolFinished,
    ToolOutcomeKind,
    ToolStarted,
)
from golem_core.loop import (
    Fail,
    Finish,
    ModelResponded,
    Pause,
    RunState,
    ToolCanceled,
    ToolCrashed,
    ToolOutcome,
    ToolRetry,
    ToolReturned,
)
from golem_shell._errors import ModelError, RunError, Stage, UsageError
from golem_shell._hooks import retry_hook
from golem_shell._results import DeltaEvent, ToolResultEvent, partial_from, partial_of

if TYPE_CHECKING:
    from golem_shell.observe._otel import Instrumentation, RunTrace

__all__ = [
    "EventHandler",
    "RunObserver",
    "instrument",
    "observe_run",
    "relay",
    "uninstrument",
]

End: TypeAlias = Finish | Pause | Fail

EventHandler: TypeAlias = Callable[
    [DeltaEvent | ToolResultEvent | LifecycleEvent], Awaitable[None] | None
]
"""A run's ``on_event``: every lifecycle event, and in a stream every ``DeltaEvent`` and
``ToolResultEvent``."""

_tracing: Instrumentation | None = None


# -- enabling tracing ---------------------------------------------------------------------


def instrument(
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    capture_content: bool | None = None,
) -> None:
    """Trace every run with OpenTelemetry, per the GenAI semantic conventions.

    Spans: ``invoke_agent {agent}`` per run, ``chat {model}`` per model request (retries
    are its ``golem.retry`` events), ``execute_tool {tool}`` per tool call. Metrics:
    ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``. Calling it
    again replaces the previous configuration; ``uninstrument()`` turns tracing off.

    Args:
        tracer_provider: where spans go; default the global tracer provider.
        meter_provider: where metrics go; default the global meter provider.
        capture_content: record instructions, messages, tool arguments and results on
            the spans. Default: the environment variable
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true`` turns it
            on); off otherwise. Content may hold personal data.

    Raises:
        UsageError: ``opentelemetry-api`` is not installed (``pip install golem-agents[otel]``).
    """
    global _tracing
    try:
        _otel = importlib.import_module("golem_shell.observe._otel")
    except ImportError as e:
        raise UsageError(
            "tracing needs opentelemetry-api: pip install 'golem-agents[otel]'"
            f" (importing it failed: {e})"
        ) from e
    capture = _otel.capture_from_env() if capture_content is None else bool(capture_content)
    _tracing = _otel.Instrumentation(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture,
    )


def uninstrument() -> None:
    """Stop tracing runs (runs in flight keep their spans to the end)."""
    global _tracing
    _tracing = None


# -- the observer ---------------------------------------------------------------------------


def _tool_outcome(outcome: ToolOutcome) -> tuple[ToolOutcomeKind, bool]:
    if isinstance(outcome, ToolReturned):
        return ("failed", True) if outcome.failed else ("returned", False)
    if isinstance(outcome, ToolRetry):
        return "retry", True
    if isinstance(outcome, ToolCanceled):
        return "canceled", True
    assert isinstance(outcome, ToolCrashed)
    return "crashed", True


class RunObserver:
    """Reports one run: events to the caller's handler, signals to OpenTelemetry.

    Created by ``observe_run`` only when someone listens. ``handler_error`` is the
    exception the handler raised, if it did (the handler is not called again).
    """

    __slots__ = (
        "_handler",
        "_port_report",
        "_request",
        "_started",
        "_task",
        "_tools",
        "_trace",
        "conversation_id",
        "handler_error",
        "model",
        "resumed",
        "run_id",
    )

    def __init__(
        self,
        agent: Any,
        state: RunState,
        handler: EventHandler | None,
        tracing: Instrumentation | None,
        *,
        resumed: bool,
    ) -> None:
        self.run_id = state.config.run_id
        self.conversation_id = state.config.conversation_id
        self.model = str(agent.model.name)
        # what the model's adapter changes to send a request (ADR 0085): the adapter keeps
        # the port it makes here for that very request, so a request is ported once
        self._port_report = getattr(agent.model, "port_report", None)
        self.resumed = resumed
        self._handler = handler
        self.handler_error: BaseException | None = None
        self._trace: RunTrace | None = None
        if tracing is not None:
            from golem_shell.observe._otel import RunTrace

            self._trace = RunTrace(tracing, agent, state, resumed=resumed)
        self._request = 0
        self._started = 0.0
        self._task: asyncio.Task[Any] | None = None
        self._tools: dict[str, tuple[Any, float]] = {}  # call id: (span, duration)

    @property
    def listens(self) -> bool:
        """Whether a handler still receives events."""
        return self._handler is not None

    async def emit(self, event: DeltaEvent | ToolResultEvent | LifecycleEvent) -> None:
        """Hand ``event`` to the handler; remember and re-raise what it raises."""
        handler = self._handler
        if handler is None:
            return
        try:
            delivered = handler(event)
            if inspect.isawaitable(delivered):
                await delivered
        except Exception as e:
            self._handler = None
            if self.handler_error is None:
                self.handler_error = e
            raise

    # -- the run ----------------------------------------------------------------------

    async def watch(self, run: Coroutine[Any, Any, End], progress: Any) -> End:
        """Await the driven ``run``, reporting its start and how it ended."""
        self._task = asyncio.current_task()
        trace = self._trace
        token = retry_hook.set(self._on_retry)
        try:
            if trace is not None:
                trace.attach()
            try:
                await self.emit(
                    RunStarted(self.run_id, self.conversation_id, self.model, self.resumed)
                )
                change = progress.state.processed
                if change is not None:  # what the history processor did (ADR 0080)
                    if trace is not None:
                        trace.history_processed(change)
                    await self.emit(HistoryProcessed(self.run_id, self.conversation_id, change))
                    for record in progress.state.compactions:  # its folds (ADR 0140)
                        await self.compaction_started(
                            record.processor, "processor", 0, change.messages_before
                        )
                        await self.compaction_finished(
                            record.processor, "processor", record.outcome, record, 0
                        )
            except BaseException as e:
                run.close()
                if trace is not None:
                    trace.failed(progress.state, e)
                raise
            try:
                end = await run
            except BaseException as e:
                await self._failed(e, progress)
                raise
            state = end.state
            if isinstance(end, Fail):
                await self._failed(RunError(Stage(end.stage), end.reason), progress)
            elif isinstance(end, Pause):
                if trace is not None:
                    trace.paused(state, end.deferred)
                await self._end(
                    RunPaused(
                        self.run_id,
                        self.conversation_id,
                        state.usage,
                        state.requests,
                        state.tool_executions,
                        end.deferred,
                    ),
                    progress,
                )
            else:
                if trace is not None:
                    trace.finished(state)
                await self._end(
                    RunFinished(
                        self.run_id,
                        self.conversation_id,
                        state.usage,
                        state.requests,
                        state.tool_executions,
                    ),
                    progress,
                )
            return end
        finally:
            retry_hook.reset(token)
            if trace is not None:
                trace.close()

    async def _end(self, event: LifecycleEvent, progress: Any) -> None:
        try:
            await self.emit(event)
        except Exception as e:
            _attach_partial(e, progress)
            raise

    async def _failed(self, error: BaseException, progress: Any) -> None:
        """Report the run's failure; raise the handler's error in its place if it failed."""
        state: RunState = progress.state
        handler_error = self.handler_error
        if handler_error is not None and error is not handler_error:
            _attach_partial(handler_error, progress, error)
            if self._trace is not None:
                self._trace.failed(state, handler_error)
            raise handler_error from error
        if self._trace is not None:
            self._trace.failed(state, error)
        if handler_error is not None:  # the handler itself ended the run
            _attach_partial(error, progress)
            return
        if isinstance(error, RunError):
            stage, message = error.stage.value, error.message
        elif isinstance(error, asyncio.CancelledError):
            stage, message = "cancelled", "the run was cancelled from outside"
        else:
            stage, message = "unexpected", str(error)
        try:
            await self.emit(
                RunFailed(
                    self.run_id,
                    self.conversation_id,
                    stage,
                    type(error).__name__,
                    message,
                    state.usage,
                    state.requests,
                    state.tool_executions,
                )
            )
        except Exception as e:
            _attach_partial(e, progress, error)
            raise e from error

    # -- steering ---------------------------------------------------------------------

    async def steered(self, request: int, messages: int) -> None:
        """User messages sent while the run worked joined it before request ``request``."""
        if self._trace is not None:
            self._trace.steered(request, messages)
        await self.emit(RunSteered(self.run_id, self.conversation_id, request, messages))

    # -- compaction -------------------------------------------------------------------

    async def compaction_started(
        self, processor: str, trigger: CompactionTrigger, request: int, messages: int
    ) -> None:
        """A compaction began: the history processor's fold (reported at the run's start)
        or compact-and-retry's (before the retried request, ADR 0141)."""
        if self._trace is not None:
            self._trace.compaction_started(processor, trigger, request, messages)
        await self.emit(
            CompactionStarted(
                self.run_id, self.conversation_id, processor, trigger, request, messages
            )
        )

    async def compaction_finished(
        self,
        processor: str,
        trigger: CompactionTrigger,
        outcome: str,
        record: CompactionRecord | None,
        request: int,
    ) -> None:
        """A compaction ended with ``outcome`` (its ``record`` when it compacted)."""
        if self._trace is not None:
            self._trace.compaction_finished(processor, trigger, outcome, record, request)
        await self.emit(
            CompactionFinished(
                self.run_id, self.conversation_id, processor, trigger, outcome, record, request
            )
        )

    # -- requests ---------------------------------------------------------------------

    async def request_started(self, request: ModelRequest, state: RunState, stream: bool) -> None:
        """A model request is about to be sent (hook before ``RequestModel``)."""
        self._request = state.requests + 1
        if self._port_report is not None and self._handler is not None:
            report = self._port_report(request)
            if report.changed:
                await self.emit(
                    HistoryPorted(
                        self.run_id, self.conversation_id, self._request, self.model, report
                    )
                )
        self._started = time.perf_counter()
        if self._trace is not None:
            self._trace.request_started(request, stream)
        await self.emit(
            RequestStarted(self.run_id, self.conversation_id, self._request, self.model, stream)
        )

    async def request_ended(self, outcome: object, cause: BaseException | None) -> None:
        """The request's outcome (``ModelResponded`` or ``ModelFailed``) is known."""
        duration = time.perf_counter() - self._started
        if isinstance(outcome, ModelResponded):
            message: Message = outcome.message
            if self._trace is not None:
                self._trace.request_finished(message, duration)
            await self.emit(
                RequestFinished(
                    self.run_id,
                    self.conversation_id,
                    self._request,
                    duration,
                    message.model,
                    message.usage,
                    message.finish_reason,
                )
            )
            return
        if self._trace is not None:
            self._trace.request_failed(cause, duration)
        error = cause if cause is not None else getattr(outcome, "reason", "")
        kind = cause.kind.value if isinstance(cause, ModelError) else None
        status = cause.status if isinstance(cause, ModelError) else None
        await self.emit(
            RequestFailed(
                self.run_id,
                self.conversation_id,
                self._request,
                duration,
                str(error),
                kind,
                status,
            )
        )

    async def _on_retry(self, attempt: int, delay: float, error: BaseException) -> None:
        if asyncio.current_task() is not self._task:
            return  # a request of someone else's code (a tool's) in this context
        if self._trace is not None:
            self._trace.retry(attempt, delay, error)
        await self.emit(
            RetryScheduled(
                self.run_id,
                self.conversation_id,
                self._request,
                attempt,
                delay,
                str(error),
                error.kind.value if isinstance(error, ModelError) else None,
                error.status if isinstance(error, ModelError) else None,
            )
        )

    # -- tools ------------------------------------------------------------------------

    async def tool(self, call: ToolCallPart, execution: Awaitable[ToolOutcome]) -> ToolOutcome:
        """Run one tool call's ``execution`` (in its own task), reporting its start; the
        driver reports its end (``tool_finished``) once the outcome has landed."""
        call_id = str(call.id)
        span = self._trace.tool_started(call) if self._trace is not None else None
        token = None
        if span is not None:
            from opentelemetry import context as otel_context
            from opentelemetry import trace

            token = otel_context.attach(trace.set_span_in_context(span))
        try:
            try:
                await self.emit(ToolStarted(self.run_id, self.conversation_id, call_id, call.name))
            except BaseException:
                if inspect.iscoroutine(execution):
                    execution.close()
                raise
            started = time.perf_counter()
            outcome = await execution
            self._tools[call_id] = (span, time.perf_counter() - started)
        except BaseException:
            if span is not None and self._trace is not None:
                self._trace.tool_interrupted(span)
            raise
        finally:
            if token is not None:
                from opentelemetry import context as otel_context

                otel_context.detach(token)
        return outcome

    async def tool_finished(
        self, call: ToolCallPart, outcome: ToolOutcome, *, content: bool = False
    ) -> None:
        """The outcome of ``call`` has landed in the run's state: end its span, report it
        (with ``content``, a streamed run's ``ToolResultEvent`` too)."""
        call_id = str(call.id)
        span, duration = self._tools.pop(call_id, (None, 0.0))
        kind, failed = _tool_outcome(outcome)
        if span is not None and self._trace is not None:
            self._trace.tool_finished(span, outcome, kind)
        await self.emit(
            ToolFinished(
                self.run_id, self.conversation_id, call_id, call.name, kind, failed, duration
            )
        )
        if content and isinstance(outcome, ToolReturned | ToolRetry):
            parts = (
                outcome.parts if isinstance(outcome, ToolReturned) else (TextPart(outcome.reason),)
            )
            await self.emit(
                ToolResultEvent(
                    self.run_id, self.conversation_id, call_id, call.name, parts, failed
                )
            )


def _attach_partial(
    error: BaseException, progress: Any, source: BaseException | None = None
) -> None:
    partial = partial_from(source) if source is not None else None
    error.golem_partial = (  # type: ignore[attr-defined]
        partial if partial is not None else partial_of(progress.state)
    )


# -- the driver's hooks ---------------------------------------------------------------------


def observe_run(
    agent: Any, state: RunState, on_event: EventHandler | None, *, resumed: bool = False
) -> RunObserver | None:
    """The run's observer, or ``None`` when no handler listens and tracing is off."""
    tracing = _tracing
    if on_event is None and tracing is None:
        return None
    return RunObserver(agent, state, on_event, tracing, resumed=resumed)


def relay(observer: RunObserver | None, on_delta: Any) -> Any:
    """``on_delta``, or a handler that also gives each delta to the observer's handler."""
    if observer is None or on_delta is None or not observer.listens:
        return on_delta

    async def both(event: DeltaEvent) -> None:
        delivered = on_delta(event)
        if inspect.isawaitable(delivered):
            await delivered
        await observer.emit(event)

    return both
