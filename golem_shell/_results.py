"""What a run gives back: ``RunResult``, streamed ``DeltaEvent`` values, and the partial
result of a run that did not finish.

A leaf module of ``golem_shell``: the agent, the driver, the observer and the event
stream all read these values, and it imports none of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeAlias

from attrs import field, frozen
from typing_extensions import TypeVar

from golem_core import Message, ModelDelta, Part, TextDelta, Usage
from golem_core.loop import DeferredCall, RunState, ToolRetry
from golem_shell._errors import PartialResult, RunError, UsageError

__all__ = [
    "DeltaEvent",
    "DeltaHandler",
    "OutputT",
    "RunResult",
    "ToolResultEvent",
    "partial_from",
    "partial_of",
]

OutputT = TypeVar("OutputT", default=str)


@frozen
class DeltaEvent:
    """A piece of a streamed model answer, stamped with the run it belongs to."""

    run_id: str
    conversation_id: str
    request: int
    delta: ModelDelta

    @property
    def text(self) -> str | None:
        """The answer text this delta adds (``None`` for thinking, a tool call's
        arguments, and the rest): ``if (t := event.text) is not None: print(t, end="")``."""
        delta = self.delta
        return delta.text if isinstance(delta, TextDelta) else None


DeltaHandler: TypeAlias = Callable[[DeltaEvent], Awaitable[None] | None]
"""What ``on_delta`` takes: a function (sync or async) of each ``DeltaEvent``."""


@frozen
class ToolResultEvent:
    """In a streamed run, the result a tool call gave: what the model will see as the
    call's result (``failed`` for a failed result, or a retry request with its reason).

    Reported right after the call's ``ToolFinished``, to streamed runs only (``iter_stream``
    and the ``on_event`` of ``run_stream*``): like ``DeltaEvent`` it carries content, which
    lifecycle events never do (ADR 0052), so a chat UI shows each result as it exists.
    """

    run_id: str
    conversation_id: str
    call_id: str
    name: str
    parts: tuple[Part, ...] = field(repr=False)
    failed: bool = False


@frozen(repr=False)
class RunResult(Generic[OutputT]):
    """What a finished (or paused) run produced.

    ``messages`` is the full canonical conversation, ready to pass back as history;
    ``new_messages`` what this run added. A paused run (a tool needs approval or an
    external result) has ``deferred`` calls and no output yet: check ``paused`` before
    reading ``output`` (on a paused run it raises ``UsageError``, never hands out a
    ``None`` the type does not admit), and answer the calls with
    ``Agent.run_with_deferred_results``.

    ``steering_left``: the steering messages a durable run accepted but did not take
    (they arrived after its last look; ``DurableAgent.steer``, ``TemporalAgent.steer``):
    start the next run with them. A plain run keeps these in its ``Steering.left``.
    """

    _output: OutputT = field(alias="output")
    messages: tuple[Message, ...] = field(repr=False)
    new_messages: tuple[Message, ...] = field(repr=False)
    usage: Usage
    run_id: str
    conversation_id: str
    requests: int
    tool_executions: int
    deferred: tuple[DeferredCall, ...] = ()
    steering_left: tuple[Message, ...] = field(default=(), repr=False)

    @property
    def paused(self) -> bool:
        """Whether the run waits for deferred tool results (and so has no output yet)."""
        return bool(self.deferred)

    @property
    def output(self) -> OutputT:
        """The run's output, of the agent's output type.

        Raises:
            UsageError: the run paused: it has no output until its ``deferred`` calls are
                answered (``Agent.run_with_deferred_results``). Check ``paused`` first.
        """
        if self.deferred:
            waiting = ", ".join(f"{d.call.id} ({d.call.name}, {d.kind})" for d in self.deferred)
            raise UsageError(
                f"this run paused and has no output yet: {len(self.deferred)} call(s) wait"
                f" ({waiting}). Check result.paused before reading result.output, and answer"
                " result.deferred with agent.run_with_deferred_results(result.messages, ...)"
            )
        return self._output

    def __repr__(self) -> str:
        shown = f"deferred={self.deferred!r}" if self.deferred else f"output={self._output!r}"
        return (
            f"RunResult({shown}, usage={self.usage!r}, run_id={self.run_id!r},"
            f" conversation_id={self.conversation_id!r}, requests={self.requests},"
            f" tool_executions={self.tool_executions})"
        )


def partial_from(error: BaseException) -> PartialResult | None:
    """The partial result of a run that ended with ``error``.

    Works for ``RunError`` and for the ``asyncio.CancelledError`` (or timeout) that
    ended a run cancelled from outside: golem keeps asyncio's semantics (the
    cancellation propagates unchanged) and attaches the evidence to the exception.
    """
    if isinstance(error, RunError):
        return error.partial
    partial = getattr(error, "golem_partial", None)
    return partial if isinstance(partial, PartialResult) else None


def partial_of(state: RunState) -> PartialResult | None:
    """What a run interrupted in ``state`` leaves (``RunState.partial_messages``: every
    completed outcome, a tool still running closed as unfinished), or ``None`` when it
    completed nothing."""
    if not state.produced_evidence:
        return None
    executions = state.tool_executions
    if state.returned:  # a batch in flight: its completed executions count
        executions += sum(1 for o in state.returned if not isinstance(o, ToolRetry))
    return PartialResult(
        messages=state.partial_messages,
        usage=state.usage,
        requests=state.requests,
        tool_executions=executions,
        run_id=state.config.run_id,
        conversation_id=state.config.conversation_id,
    )
