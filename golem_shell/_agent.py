"""The agent: configuration, the run methods, and the asyncio effects of a run.

Owns what a run needs from the outside world and nothing else: resolving instructions
(the user's function may do I/O), reading the clock, minting ids, sending requests,
running tools, validating output into the user's type, timeouts and cancellation
(``AgentEffects``). Every decision (what to send, what a response means, when the run
ends) is ``golem_core._loop``'s; the loop is driven by ``golem_shell._driver``, the one
driver that the durable runtimes share.

Over 600 lines because it is the public surface of a run: every run method and its
sync twin, with their documented arguments, and the checks at their entry.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import (
    Awaitable,
    Callable,
    Container,
    Coroutine,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar, copy_context
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Concatenate, Generic, Literal, ParamSpec, cast, overload

import attrs
from returns.result import Failure, Result
from typing_extensions import TypeForm, TypeVar

from golem_core import (
    HistoryProcessor,
    Message,
    ModelSettings,
    Part,
    StreamDone,
    ToolCallPart,
    conversation_id_of,
    join_instructions,
)
from golem_core._deferred import DeferredAnswer, DeferredCall, waiting_calls
from golem_core._loop import (
    Answered,
    Fail,
    Finish,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Pause,
    RequestModel,
    RunConfig,
    RunState,
    ToolOutcome,
    ToolSpec,
    paused_from,
    receive,
    start_run,
)
from golem_core._model import ModelErrorKind
from golem_core._provenance import SigningKeys, signed_calls, signing_keys
from golem_shell._checks import check_history, check_prompt_parts, check_settings
from golem_shell._driver import End, Progress, ToolBatch, run
from golem_shell._errors import (
    DeferredResultsError,
    ModelError,
    RunError,
    Stage,
    UsageError,
)
from golem_shell._ids import new_id
from golem_shell._limits import Overrides, UsageLimits, merge_settings
from golem_shell._observe import EventHandler, observe_run, relay
from golem_shell._output import OUTPUT_TOOL_NAME, Output, OutputMode
from golem_shell._results import DeltaEvent, DeltaHandler, RunResult, partial_from, partial_of
from golem_shell._summarize import AsyncHistoryProcessor
from golem_shell._tools import ModelRetry, RunContext, Tool, Toolset
from golem_shell.models import Model, infer_model

if TYPE_CHECKING:
    from golem_shell._event_stream import EventStream

__all__ = [
    "Agent",
    "DeltaEvent",
    "RunResult",
    "partial_from",
]

# defaults (PEP 696): ``Agent("openai:gpt-4o-mini")`` is ``Agent[None, str]`` to a type checker
DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=str)
T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
_NONE = Overrides()  # frozen: no override

InstructionsFunction = Callable[[RunContext[Any]], Awaitable[str | None] | str | None]
Prompt = str | Sequence[Part] | None
IssuedCalls = Container[str] | Callable[[ToolCallPart], bool]
"""What a server issued: the call ids it paused on, or a predicate over a call."""


def _prompt_parts(prompt: Prompt) -> tuple[Part, ...] | None:
    return check_prompt_parts(prompt)


class Agent(Generic[DepsT, OutputT]):
    """An LLM agent: a model, instructions, tools and an output type.

    Runs chain into conversations: pass ``result.messages`` back as ``history``. Every
    history is prepared once per run: the history processor (if any) runs on exactly
    what you supplied, system messages are replaced by the run's instructions, and
    tool-call pairing is repaired, so what reaches the provider is always valid.

    Args:
        model: a ``Model`` or a string such as ``"openai:gpt-4o-mini"``.
        instructions: static instructions.
        dynamic_instructions: a function (sync or async) of the ``RunContext`` whose
            result joins the static instructions (static first, a blank line between).
        tools: functions or ``Tool`` values the model may call.
        output_type: ``str`` (the default) or any type the model must produce: a class
            (attrs, dataclass, TypedDict, pydantic model, ...), ``Literal[...]``, a union
            such as ``int | None``; a type checker reads it as a type form (PEP 747), so
            ``result.output`` has that type.
        output_mode: how structured output is asked for: ``"tool"`` (the default, the
            ``final_result`` tool) or ``"native"`` (the provider's own structured output,
            e.g. OpenAI ``response_format``; models without it keep the tool). A text
            answer that is valid JSON of the type is accepted in both modes.
        history_processor: rewrites the supplied history once per run (e.g.
            ``trim_history(20)``); compose several with ``compose``.
        max_requests: the most model requests one run may make (stage ``limit``).
        output_retries: correction rounds a bad output may get (stage ``output``).
        timeout: seconds a run may take, resolving dynamic instructions included
            (stage ``timeout``, with a partial).
        settings: sampling settings sent with every request.
        toolsets: sources of more tools, asked at the start of every run (e.g. MCP
            servers, ``golem_shell.mcp``); ``async with agent`` opens and closes them.
        signing_key: a server key (``bytes``, or several newest first) with which every
            message a run adds and every call it issues is signed (ADR 0054); answers
            to deferred calls are then refused unless the call's signature verifies.
        name: the agent's name in traces (``invoke_agent {name}``) and its repr.

    More tools register with ``@agent.tool`` (a ``RunContext`` first) and
    ``@agent.tool_plain``; ``@agent.output_validator`` checks every valid output
    (``ModelRetry`` asks for a correction). Every run method also takes ``model=``,
    ``settings=`` and ``usage_limits=`` for that run; ``agent.override(model=...)``
    replaces them within a ``with`` block (tests). ``with agent:`` opens the toolsets for
    the ``_sync`` methods, as ``async with agent:`` does for the async ones.
    """

    @overload
    def __init__(
        self: Agent[DepsT, str],
        model: Model | str,
        *,
        instructions: str | None = None,
        dynamic_instructions: InstructionsFunction | None = None,
        tools: Sequence[Tool[Any] | Callable[..., Any]] = (),
        history_processor: HistoryProcessor | AsyncHistoryProcessor | None = None,
        max_requests: int = 50,
        output_retries: int = 2,
        timeout: float | None = None,
        settings: ModelSettings | None = None,
        deps_type: type[DepsT] | None = None,
        toolsets: Sequence[Toolset] = (),
        signing_key: SigningKeys | None = None,
        name: str | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self,
        model: Model | str,
        *,
        output_type: TypeForm[OutputT],
        output_mode: OutputMode = "tool",
        instructions: str | None = None,
        dynamic_instructions: InstructionsFunction | None = None,
        tools: Sequence[Tool[Any] | Callable[..., Any]] = (),
        history_processor: HistoryProcessor | AsyncHistoryProcessor | None = None,
        max_requests: int = 50,
        output_retries: int = 2,
        timeout: float | None = None,
        settings: ModelSettings | None = None,
        deps_type: type[DepsT] | None = None,
        toolsets: Sequence[Toolset] = (),
        signing_key: SigningKeys | None = None,
        name: str | None = None,
    ) -> None: ...

    def __init__(
        self,
        model: Model | str,
        *,
        output_type: Any = str,
        output_mode: OutputMode = "tool",
        instructions: str | None = None,
        dynamic_instructions: InstructionsFunction | None = None,
        tools: Sequence[Tool[Any] | Callable[..., Any]] = (),
        history_processor: HistoryProcessor | AsyncHistoryProcessor | None = None,
        max_requests: int = 50,
        output_retries: int = 2,
        timeout: float | None = None,
        settings: ModelSettings | None = None,
        deps_type: type[DepsT] | None = None,
        toolsets: Sequence[Toolset] = (),
        signing_key: SigningKeys | None = None,
        name: str | None = None,
    ) -> None:
        check_settings(
            max_requests=max_requests,
            output_retries=output_retries,
            timeout=timeout,
            instructions=instructions,
            dynamic_instructions=dynamic_instructions,
            history_processor=history_processor,
            tools=tools,
        )
        self._model: Model = infer_model(model)
        if name is not None and not isinstance(name, str):
            raise UsageError(f"name must be a string or None, got {type(name).__name__}")
        self.name = name
        self.instructions = instructions
        self.dynamic_instructions = dynamic_instructions
        self.history_processor = history_processor
        self.max_requests = max_requests
        self.output_retries = output_retries
        self.timeout = timeout
        self.settings = settings or ModelSettings()
        self._output = Output(output_type, output_mode, self._model)
        self._validators: list[Callable[..., Any]] = []
        # what override() (outermost, for tests) and a run's own keywords put in place
        self._overridden: ContextVar[Overrides] = ContextVar("golem_override", default=_NONE)
        self._per_run: ContextVar[Overrides] = ContextVar("golem_run_override", default=_NONE)
        self.tools: dict[str, Tool[Any]] = {}
        self._specs: tuple[ToolSpec, ...] = ()
        for t in tools:
            self._add_tool(t if isinstance(t, Tool) else Tool.from_function(t))
        self._refresh_specs()
        self.toolsets: tuple[Toolset, ...] = tuple(toolsets)
        self._open_toolsets: AsyncExitStack | None = None
        self._sync_holder: tuple[asyncio.Future[None], asyncio.Event] | None = None
        for ts in self.toolsets:
            if not isinstance(ts, Toolset):
                raise UsageError(f"{ts!r} is not a toolset: it needs an async tools(context)")
        try:
            self._signing_keys = () if signing_key is None else signing_keys(signing_key)
        except ValueError as e:
            raise UsageError(str(e)) from None

    def _add_tool(self, made: Tool[Any]) -> None:
        if made.name in self.tools or made.name == OUTPUT_TOOL_NAME:
            raise UsageError(f"two tools are named {made.name!r}")
        self.tools[made.name] = made
        self._refresh_specs()

    def _refresh_specs(self) -> None:
        specs = [t.spec for t in self.tools.values()]
        if self._output.definition is not None:
            specs.append(ToolSpec(self._output.definition, "output", self.output_retries))
        self._specs = tuple(specs)

    @property
    def model(self) -> Model:
        """The model runs use: ``override(model=...)``'s, else the run's ``model=``, else
        the agent's own."""
        chosen = self._overridden.get().over(self._per_run.get()).model
        return chosen if chosen is not None else self._model

    @model.setter
    def model(self, model: Model | str) -> None:
        self._model = infer_model(model)

    # -- registering tools and validators ------------------------------------------

    @overload
    def tool(
        self, function: Callable[Concatenate[RunContext[DepsT], P], R], /
    ) -> Callable[Concatenate[RunContext[DepsT], P], R]: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool = False,
        external: bool = False,
        max_retries: int = 2,
    ) -> Callable[
        [Callable[Concatenate[RunContext[DepsT], P], R]],
        Callable[Concatenate[RunContext[DepsT], P], R],
    ]: ...

    def tool(
        self,
        function: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool = False,
        external: bool = False,
        max_retries: int = 2,
    ) -> Any:
        """Register a tool whose first parameter is the run's ``RunContext``:
        ``@agent.tool`` or ``@agent.tool(requires_approval=True, ...)``. The function is
        returned unchanged. Keywords as for ``golem_shell.tool``.

        Raises:
            UsageError: the first parameter is not a ``RunContext`` (use ``tool_plain``),
                a parameter cannot be described, or the name is taken.
        """
        return self._register(
            function, True, name, description, requires_approval, external, max_retries
        )

    @overload
    def tool_plain(self, function: Callable[P, R], /) -> Callable[P, R]: ...

    @overload
    def tool_plain(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool = False,
        external: bool = False,
        max_retries: int = 2,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    def tool_plain(
        self,
        function: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool = False,
        external: bool = False,
        max_retries: int = 2,
    ) -> Any:
        """Register a tool that takes no ``RunContext``: ``@agent.tool_plain``. The
        function is returned unchanged.

        Raises:
            UsageError: the function takes a ``RunContext`` (use ``tool``), a parameter
                cannot be described, or the name is taken.
        """
        return self._register(
            function, False, name, description, requires_approval, external, max_retries
        )

    def _register(
        self,
        function: Callable[..., Any] | None,
        with_context: bool,
        name: str | None,
        description: str | None,
        requires_approval: bool,
        external: bool,
        max_retries: int,
    ) -> Any:
        from golem_shell._tools import tool as make_tool

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            made = make_tool(
                name=name,
                description=description,
                requires_approval=requires_approval,
                external=external,
                max_retries=max_retries,
            )(fn)
            if made.takes_context != with_context:
                use = "agent.tool_plain" if made.takes_context is False else "agent.tool"
                raise UsageError(
                    f"tool {made.name}: "
                    + (
                        "agent.tool functions take a RunContext first"
                        if with_context
                        else "agent.tool_plain functions take no RunContext"
                    )
                    + f"; use @{use}"
                )
            self._add_tool(made)
            return fn

        return register(function) if function is not None else register

    @overload
    def output_validator(
        self, function: Callable[[OutputT], OutputT], /
    ) -> Callable[[OutputT], OutputT]: ...

    @overload
    def output_validator(
        self, function: Callable[[OutputT], Awaitable[OutputT]], /
    ) -> Callable[[OutputT], Awaitable[OutputT]]: ...

    @overload
    def output_validator(
        self, function: Callable[[RunContext[DepsT], OutputT], OutputT], /
    ) -> Callable[[RunContext[DepsT], OutputT], OutputT]: ...

    @overload
    def output_validator(
        self, function: Callable[[RunContext[DepsT], OutputT], Awaitable[OutputT]], /
    ) -> Callable[[RunContext[DepsT], OutputT], Awaitable[OutputT]]: ...

    def output_validator(self, function: Callable[..., Any], /) -> Callable[..., Any]:
        """Register a check of every valid output: ``@agent.output_validator``.

        The function (sync or async) takes the output (or the ``RunContext`` and the
        output) and returns it, possibly changed; ``raise ModelRetry("...")`` rejects it,
        and the model gets the message in a correction round (counted against
        ``output_retries``; then the run fails at stage ``output``). Validators run in
        the order registered, in every runtime (a durable engine runs them in its
        workflow body: keep them deterministic there). Returns the function unchanged.

        Raises:
            UsageError: the function takes neither 1 nor 2 parameters.
        """
        try:
            arity = len(inspect.signature(function).parameters)
        except (TypeError, ValueError) as e:
            raise UsageError(f"cannot read the output validator's signature: {e}") from e
        if arity not in (1, 2):
            raise UsageError(
                "an output validator takes (output) or (context, output),"
                f" {getattr(function, '__name__', function)!r} takes {arity} parameters"
            )
        self._validators.append(function)
        return function

    async def _validate(
        self, candidate: ToolCallPart | Message, context: RunContext[Any]
    ) -> OutputValid | OutputInvalid:
        """A candidate output checked against the output type, then by the output
        validators (sync or async; a ``ModelRetry`` is a correction round). Every runtime
        validates with this (a durable engine in its workflow body)."""
        outcome = self._output.check(candidate)
        if not isinstance(outcome, OutputValid) or not self._validators:
            return outcome
        value = outcome.value
        for validator in self._validators:
            takes_context = len(inspect.signature(validator).parameters) == 2
            try:
                checked = validator(context, value) if takes_context else validator(value)
                value = await checked if inspect.isawaitable(checked) else checked
            except ModelRetry as e:
                return OutputInvalid(e.message)
        return OutputValid(value)

    # -- overrides --------------------------------------------------------------------

    @contextmanager
    def override(
        self,
        *,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> Iterator[None]:
        """Run with another model (settings, limits) within a ``with`` block, for tests:
        ``with agent.override(model=TestModel()): ...``. The code under test is unchanged;
        the override wins over a run's own ``model=``. It holds in this context (thread,
        task) and those started from it, and is undone on leaving the block.
        """
        chosen = Overrides(
            infer_model(model) if model is not None else None, settings, usage_limits
        )
        token = self._overridden.set(chosen.over(self._overridden.get()))
        try:
            yield
        finally:
            self._overridden.reset(token)

    @contextmanager
    def _run_overrides(
        self,
        model: Model | str | None,
        settings: ModelSettings | None,
        usage_limits: UsageLimits | None,
    ) -> Iterator[None]:
        if model is None and settings is None and usage_limits is None:
            yield
            return
        chosen = Overrides(
            infer_model(model) if model is not None else None, settings, usage_limits
        )
        token = self._per_run.set(chosen)
        try:
            yield
        finally:
            self._per_run.reset(token)

    def _effective(self) -> Overrides:
        return self._overridden.get().over(self._per_run.get())

    def __enter__(self) -> Agent[DepsT, OutputT]:
        """Open the toolsets (MCP connections) for the ``_sync`` methods of this thread:
        ``with agent: agent.run_sync(...)``.

        The toolsets are entered and exited in one task of the thread's event loop (the
        loop every ``_sync`` call of the thread runs on), which holds them open between
        runs: MCP clients must leave their scopes in the task that entered them.
        """
        if self._sync_holder is not None:
            raise UsageError("this agent's toolsets are already open (with agent: ...)")

        async def open_toolsets() -> None:
            ready, close = asyncio.Event(), asyncio.Event()

            async def hold() -> None:
                async with self:
                    ready.set()
                    await close.wait()

            holder = asyncio.ensure_future(hold())
            opened = asyncio.ensure_future(ready.wait())
            await asyncio.wait({holder, opened}, return_when=asyncio.FIRST_COMPLETED)
            if holder.done():
                opened.cancel()
                holder.result()  # entering failed: raise why
            self._sync_holder = (holder, close)

        _sync(open_toolsets())
        return self

    def __exit__(self, *exc: object) -> None:
        """Close what ``__enter__`` opened."""
        held, self._sync_holder = self._sync_holder, None
        if held is None:
            return
        holder, close = held

        async def close_toolsets() -> None:
            close.set()
            await holder

        _sync(close_toolsets())

    def __repr__(self) -> str:
        named = f"name={self.name!r}, " if self.name is not None else ""
        return f"Agent({named}model={self.model.name!r}, tools={sorted(self.tools)!r})"

    async def __aenter__(self) -> Agent[DepsT, OutputT]:
        """Open the toolsets that are async context managers (MCP connections)."""
        async with AsyncExitStack() as stack:
            for ts in self.toolsets:
                if hasattr(ts, "__aenter__"):
                    await stack.enter_async_context(cast(Any, ts))
            self._open_toolsets = stack.pop_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close what ``__aenter__`` opened, in reverse order."""
        stack, self._open_toolsets = self._open_toolsets, None
        if stack is not None:
            await stack.aclose()

    # -- running ------------------------------------------------------------------

    async def run(
        self,
        prompt: Prompt,
        *,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """Run the agent on a fresh prompt, with no history."""
        return await self.run_with_history(
            (),
            prompt,
            deps=deps,
            run_id=run_id,
            conversation_id=conversation_id,
            on_event=on_event,
            model=model,
            settings=settings,
            usage_limits=usage_limits,
        )

    async def run_with_history(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """Continue a conversation: ``history`` (a previous ``result.messages``), then ``prompt``.

        ``prompt=None`` continues the history as it is (e.g. after tool results).

        Raises:
            RunError: the run failed; ``partial`` holds the resume-ready evidence.
        """
        with self._run_overrides(model, settings, usage_limits):
            return await self._run(history, prompt, deps, run_id, conversation_id, None, on_event)

    async def run_stream(
        self,
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """Like ``run``, streaming every model answer to ``on_delta`` as it arrives."""
        return await self.run_stream_with_history(
            (),
            prompt,
            on_delta=on_delta,
            deps=deps,
            run_id=run_id,
            conversation_id=conversation_id,
            on_event=on_event,
            model=model,
            settings=settings,
            usage_limits=usage_limits,
        )

    async def run_stream_with_history(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """Like ``run_with_history``, streaming every model answer to ``on_delta``.

        ``on_event`` (on every run method) receives the run's lifecycle events
        (``golem_core._events``) and, in a stream, every ``DeltaEvent`` too, in order.
        """
        handler: DeltaHandler = on_delta if on_delta is not None else _ignore
        with self._run_overrides(model, settings, usage_limits):
            return await self._run(
                history, prompt, deps, run_id, conversation_id, handler, on_event
            )

    def iter_stream(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> EventStream[OutputT]:
        """Stream a run as an async iterator of its events (deltas and lifecycle events).

        ``async with agent.iter_stream(prompt) as stream: async for event in stream: ...``;
        then ``stream.result``. Leaving early cancels the run; ``stream.partial`` keeps
        what it completed. See ``EventStream``.
        """
        from golem_shell._event_stream import EventStream

        async def start(
            on_delta: DeltaHandler | None, on_event: EventHandler | None
        ) -> RunResult[OutputT]:
            with self._run_overrides(model, settings, usage_limits):
                return await self._run(
                    history, prompt, deps, run_id, conversation_id, on_delta, on_event
                )

        return EventStream(start)

    def run_sync(
        self,
        prompt: Prompt,
        *,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """``run`` for code without an event loop."""
        return _sync(
            self.run(
                prompt,
                deps=deps,
                run_id=run_id,
                conversation_id=conversation_id,
                on_event=on_event,
                model=model,
                settings=settings,
                usage_limits=usage_limits,
            )
        )

    def run_with_history_sync(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """``run_with_history`` for code without an event loop."""
        return _sync(
            self.run_with_history(
                history,
                prompt,
                deps=deps,
                run_id=run_id,
                conversation_id=conversation_id,
                on_event=on_event,
                model=model,
                settings=settings,
                usage_limits=usage_limits,
            )
        )

    def run_stream_sync(
        self,
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """``run_stream`` for code without an event loop."""
        return _sync(
            self.run_stream(
                prompt,
                on_delta=on_delta,
                deps=deps,
                run_id=run_id,
                conversation_id=conversation_id,
                on_event=on_event,
                model=model,
                settings=settings,
                usage_limits=usage_limits,
            )
        )

    def run_stream_with_history_sync(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """``run_stream_with_history`` for code without an event loop."""
        return _sync(
            self.run_stream_with_history(
                history,
                prompt,
                on_delta=on_delta,
                deps=deps,
                run_id=run_id,
                conversation_id=conversation_id,
                on_event=on_event,
                model=model,
                settings=settings,
                usage_limits=usage_limits,
            )
        )

    # -- deferred tools -------------------------------------------------------------

    def waiting_calls(self, history: Sequence[Message]) -> tuple[DeferredCall, ...]:
        """The calls of a paused run's ``history`` that wait for approval or a result."""
        history = check_history(history)
        return waiting_calls(history, {t.name: t.kind for t in self._specs})

    async def run_with_deferred_results(
        self,
        history: Sequence[Message],
        results: Mapping[str, DeferredAnswer],
        *,
        issued: IssuedCalls | None = None,
        close_unanswered: bool = False,
        on_delta: DeltaHandler | None = None,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """Continue a paused run: answer its waiting calls by call id, then go on.

        ``Approved()`` runs the tool, ``Denied(reason)`` gives the model a failed result
        saying so, ``ExternalResult`` is the result of a call executed elsewhere. Calls
        left unanswered keep the run paused, or get the neutral no-result result with
        ``close_unanswered=True``. The history processor does not run here: it could cut
        the very calls being answered.

        Args:
            history: the paused run's ``messages`` (e.g. loaded from JSON).
            results: answers keyed by call id.
            issued: what this server issued (call ids, or a predicate over a call).
                History from a client attests nothing: pass this so a fabricated call
                "awaiting approval" is refused. Run ``sanitize_history`` on such history
                first, too.
            close_unanswered: close waiting calls that get no answer.

        Raises:
            DeferredResultsError: an answer names a call that is not waiting, answers it
                with the wrong kind of answer, or names a call ``issued`` does not
                vouch for. Nothing is executed then.
            RunError: the continued run failed.
        """
        if isinstance(issued, str | bytes):
            raise UsageError(
                "issued must be a collection of call ids or a predicate, not a single"
                f" string ({issued!r} would vouch for every id it contains);"
                " pass a set or tuple: issued={...}"
            )
        history = check_history(history)
        if not isinstance(results, Mapping):
            raise UsageError(
                "results must be a mapping of call id to Approved(), Denied(reason) or"
                f" ExternalResult(...), got {type(results).__name__}"
            )
        waiting = self.waiting_calls(history)
        if self._signing_keys:  # only calls this server signed, intact, may be answered
            vouched = signed_calls(history, self._signing_keys)
            unsigned = sorted(
                str(d.call.id) for d in waiting if d.call.id in results and d.call.id not in vouched
            )
            if unsigned:
                raise DeferredResultsError(
                    "refusing answers for calls without a valid signature of this server"
                    " (forged or edited?): " + ", ".join(unsigned),
                    tuple(unsigned),
                )
        if issued is not None:
            ids = issued

            def vouch(call: ToolCallPart) -> bool:
                if callable(ids):
                    return bool(ids(call))
                return call.id in ids

            forged = sorted(
                str(d.call.id) for d in waiting if d.call.id in results and not vouch(d.call)
            )
            if forged:
                raise DeferredResultsError(
                    "refusing answers for calls this server never issued (forged?): "
                    + ", ".join(forged),
                    tuple(forged),
                )
        run_id, conversation_id = _run_ids(history, run_id, conversation_id)
        context: RunContext[Any] = RunContext(deps, run_id, conversation_id)
        with self._run_overrides(model, settings, usage_limits):
            deadline = self._deadline()
            config = await self._config(context, run_id, conversation_id, deadline)
            state = receive(paused_from(config, history), Answered(results, close_unanswered))
            if state.rejected is not None:
                raise DeferredResultsError(str(state.rejected), state.rejected.call_ids)
            return await self._drive(state, context, on_delta, on_event, deadline, resumed=True)

    def run_with_deferred_results_sync(
        self,
        history: Sequence[Message],
        results: Mapping[str, DeferredAnswer],
        *,
        issued: IssuedCalls | None = None,
        close_unanswered: bool = False,
        deps: DepsT | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        on_event: EventHandler | None = None,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
    ) -> RunResult[OutputT]:
        """``run_with_deferred_results`` for code without an event loop."""
        return _sync(
            self.run_with_deferred_results(
                history,
                results,
                issued=issued,
                close_unanswered=close_unanswered,
                deps=deps,
                run_id=run_id,
                conversation_id=conversation_id,
                on_event=on_event,
                model=model,
                settings=settings,
                usage_limits=usage_limits,
            )
        )

    # -- the driver -----------------------------------------------------------------

    def _deadline(self) -> float | None:
        """When the run must end (event-loop time), from its start: ``None`` for no timeout."""
        if self.timeout is None:
            return None
        return asyncio.get_running_loop().time() + self.timeout

    async def _within(self, work: Awaitable[T], deadline: float | None, doing: str) -> T:
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
                f"the run took longer than its timeout of {self.timeout} s while {doing}",
                cause=e,
            ) from e

    async def _config(
        self,
        context: RunContext[Any],
        run_id: str,
        conversation_id: str,
        deadline: float | None = None,
    ) -> RunConfig:
        try:
            instructions = await self._within(
                self._resolve_instructions(context), deadline, "resolving its instructions"
            )
        except RunError:
            raise
        except Exception as e:
            raise RunError(
                Stage.INSTRUCTIONS,
                f"resolving the instructions failed: {str(e) or type(e).__name__}",
                cause=e,
            ) from e
        return self._run_config(
            run_id, conversation_id, instructions, await self._toolset_specs(context)
        )

    def _run_config(
        self,
        run_id: str,
        conversation_id: str,
        instructions: str | None,
        toolset_specs: tuple[ToolSpec, ...] = (),
    ) -> RunConfig:
        """The run's configuration once its effects (instructions, toolsets) are resolved."""
        limits = self._effective().usage_limits
        return RunConfig(
            run_id=run_id,
            conversation_id=conversation_id,
            instructions=instructions,
            tools=self._specs + toolset_specs,
            output_tool=OUTPUT_TOOL_NAME if self._output.definition is not None else None,
            output_schema=self._output.native,
            settings=merge_settings(self.settings, self._effective().settings),
            max_requests=(
                limits.request_limit
                if limits is not None and limits.request_limit is not None
                else self.max_requests
            ),
            output_retries=self.output_retries,
            signing_key=self._signing_keys[0] if self._signing_keys else None,
            max_input_tokens=None if limits is None else limits.input_tokens_limit,
            max_output_tokens=None if limits is None else limits.output_tokens_limit,
            max_total_tokens=None if limits is None else limits.total_tokens_limit,
        )

    async def _toolset_specs(self, context: RunContext[Any]) -> tuple[ToolSpec, ...]:
        """Ask every toolset for this run's tools; keep them in ``context.toolset_tools``."""
        table = context.toolset_tools
        for ts in self.toolsets:
            try:
                offered = await ts.tools(context)
            except UsageError:
                raise
            except Exception as e:
                raise RunError(
                    Stage.TOOL, f"listing the tools of {ts!r} failed: {e}", cause=e
                ) from e
            for t in offered:
                if t.name in self.tools or t.name in table or t.name == OUTPUT_TOOL_NAME:
                    raise UsageError(f"two tools are named {t.name!r} (one from {ts!r})")
                table[t.name] = t
        return tuple(t.spec for t in table.values())

    async def _resolve_instructions(self, context: RunContext[Any]) -> str | None:
        dynamic: str | None = None
        if self.dynamic_instructions is not None:
            produced = self.dynamic_instructions(context)
            if inspect.isawaitable(produced):
                produced = await produced
            if produced is not None and not isinstance(produced, str):
                raise TypeError(
                    f"dynamic_instructions returned {type(produced).__name__}, not str or None"
                )
            dynamic = produced
        return join_instructions(self.instructions, dynamic)

    def _processor_name(self) -> str:
        """The history processor as a run's ``HistoryProcessed`` report names it."""
        processor = self.history_processor
        return getattr(processor, "__name__", None) or repr(processor)

    def _processor(self) -> HistoryProcessor | None:
        """The processor as a total function, for a runtime that runs it inside the loop's
        own deterministic code (``golem_shell.durable``); ``_run`` uses ``_processed``."""
        processor = self.history_processor
        if processor is None:
            return None

        def guarded(history: Sequence[Message]) -> Result[tuple[Message, ...], Any]:
            try:
                outcome: Any = processor(history)
            except Exception as e:
                return Failure(f"{type(e).__name__}: {e}")
            if inspect.isawaitable(outcome):  # an async processor needs ``_processed``
                if inspect.iscoroutine(outcome):
                    outcome.close()
                return Failure(
                    "an async history processor (such as summarize_history) cannot run"
                    " inside a durable workflow's body: it calls a model; use a sync one"
                )
            result: Result[tuple[Message, ...], Any] = outcome
            return result

        return guarded

    async def _processed(
        self, history: Sequence[Message], deadline: float | None
    ) -> HistoryProcessor | None:
        """What ``start_run`` gets: the processor's outcome on exactly ``history``, run
        here once, awaited when the processor is async (``summarize_history``), within
        the run's timeout."""
        processor = self.history_processor
        if processor is None:
            return None

        async def process() -> Any:
            outcome = processor(history)
            return await outcome if inspect.isawaitable(outcome) else outcome

        try:
            outcome = await self._within(process(), deadline, "its history processor ran")
        except RunError:
            raise
        except Exception as e:
            outcome = Failure(f"{type(e).__name__}: {e}")
        return lambda _supplied: outcome

    async def _run(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        deps: DepsT | None,
        run_id: str | None,
        conversation_id: str | None,
        on_delta: DeltaHandler | None,
        on_event: EventHandler | None = None,
    ) -> RunResult[OutputT]:
        history = check_history(history)
        parts = _prompt_parts(prompt)
        run_id, conversation_id = _run_ids(history, run_id, conversation_id)
        context: RunContext[Any] = RunContext(deps, run_id, conversation_id)
        deadline = self._deadline()
        config = await self._config(context, run_id, conversation_id, deadline)
        state = start_run(
            config,
            history,
            parts,
            processor=await self._processed(history, deadline),
            processor_name=self._processor_name(),
            now=datetime.now(UTC),
        )
        return await self._drive(state, context, on_delta, on_event, deadline)

    async def _drive(
        self,
        state: RunState,
        context: RunContext[Any],
        on_delta: DeltaHandler | None,
        on_event: EventHandler | None,
        deadline: float | None,
        *,
        resumed: bool = False,
    ) -> RunResult[OutputT]:
        """Drive the run with this agent's asyncio effects, under the run's timeout (until
        ``deadline``); a cancel or timeout at any moment leaves the partial."""
        progress = Progress(state, observe_run(self, state, on_event, resumed=resumed))
        effects = AgentEffects(self, context, relay(progress.observer, on_delta))

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
                    f"the run took longer than its timeout of {self.timeout} s",
                    partial=partial_of(progress.state),
                    cause=e,
                ) from e
            except asyncio.CancelledError as e:
                e.golem_partial = partial_of(progress.state)  # type: ignore[attr-defined]
                raise

        end = await run(progress, effects, guarded)
        if isinstance(end, Fail):
            raise RunError(
                Stage(end.stage),
                end.reason,
                partial=partial_of(end.state),
                cause=progress.cause,
            ) from progress.cause
        return _result(end)


class AgentEffects:
    """The effects of an ``Agent`` run, on asyncio: requests through the agent's model
    (streamed to ``on_delta`` when given), each tool call in a task of its own, the
    wall clock. A failing tool cancels its siblings (``tool_batch``); a paused run ends
    (``wait`` gives no answers: they come back in a new run)."""

    tool_batch: ToolBatch = "cancel_siblings"

    def __init__(
        self,
        agent: Agent[Any, Any],
        context: RunContext[Any],
        on_delta: DeltaHandler | None,
    ) -> None:
        self.agent = agent
        self.context = context
        self.on_delta = on_delta
        self.streaming = on_delta is not None
        self.cause: BaseException | None = None

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def request(self, command: RequestModel, state: RunState) -> ModelResponded | ModelFailed:
        request = command.request
        try:
            if self.on_delta is None:
                message = await self.agent.model.request(request)
            else:
                message = await self._stream(request, state, self.on_delta)
        except _HandlerFailed as e:  # the caller's code, not the model: say so
            error = e.error
            self.cause = error
            return ModelFailed(
                f"the on_delta handler raised {type(error).__name__}: {error}"
                " (the model's stream was fine; the run stopped because the handler failed)"
            )
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
        stream = self.agent.model.request_stream(request)
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
                provider=self.agent.model.name,
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
            tool = self.agent.tools.get(call.name) or base.toolset_tools[call.name]
            works.append(tool.execute(context, call))
        return works

    async def validate(self, candidate: ToolCallPart | Message) -> OutputValid | OutputInvalid:
        return await self.agent._validate(candidate, self.context)

    async def wait(self, paused: RunState) -> Literal[None]:
        return None


class _HandlerFailed(Exception):
    """The user's ``on_delta`` handler raised ``error`` (carried out of the stream so the
    failure is reported as the handler's, not the model's)."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        super().__init__(str(error))


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


def _run_ids(
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


def _ignore(_: DeltaEvent) -> None:
    return None


_runners = threading.local()


def _sync(coroutine: Awaitable[T]) -> T:
    """Run ``coroutine`` to completion for code without an event loop.

    Each thread keeps one event loop for its ``_sync`` calls, so a model's connection
    pool lives on across calls (and a model also works when the caller mixes these
    with ``asyncio.run``: HTTP models keep a client per event loop).
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
