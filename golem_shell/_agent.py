"""The agent: what a run is made of, and the run methods: a facade.

Owns an agent's configuration (model, instructions, tools, output type, history
processor, limits), the registration of tools and validators, ``override`` for tests,
opening toolsets, and the public run methods with their ``_sync`` twins. A run is set up
as a value (``golem_shell.run._setup.RunSpec``, from ``run_spec``) and handed to the asyncio
runtime (``golem_shell.run._asyncio``), as the durable runtimes (``golem_shell.durable``,
``golem_shell.temporal``) take it too; every decision is the core's (``golem_core.loop``),
driven by the one driver (``golem_shell.run._driver``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Never, ParamSpec, cast, overload

import attrs
from typing_extensions import TypeForm, TypeVar, Unpack

from golem_core import (
    DeferredAnswer,
    HistoryProcessor,
    Message,
    ModelSettings,
    SigningKeys,
    signing_keys,
)
from golem_core.loop import Answered, DeferredCall, IssuedCalls, waiting_calls
from golem_shell._errors import UsageError, refuse_unknown_keywords
from golem_shell._results import DeltaEvent, DeltaHandler, RunResult
from golem_shell.context._summarize import AsyncHistoryProcessor
from golem_shell.models import Model, infer_model
from golem_shell.run._asyncio import OpenToolsets, resume, start, sync
from golem_shell.run._checks import check_history, check_settings
from golem_shell.run._limits import KEEP, Overrides, UsageLimits
from golem_shell.run._options import (
    STREAM_KEYWORDS,
    RunOptions,
    StreamOptions,
    check_options,
    overrides_of,
)
from golem_shell.run._setup import (
    InstructionsFunction,
    Prompt,
    RunSpec,
    joined_instructions,
    made_tools,
    prompt_parts,
    run_ids,
)
from golem_shell.tools._output import Output, OutputMode
from golem_shell.tools._registry import Registry
from golem_shell.tools._tools import ContextFunction, RunContext, Tool, Toolset

if TYPE_CHECKING:
    from golem_shell.observe._observe import EventHandler
    from golem_shell.run._event_stream import EventStream

__all__ = ["Agent"]

# defaults (PEP 696): ``Agent("openai:gpt-4o-mini")`` is ``Agent[None, str]`` to a type checker
DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=str)
T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
_NONE = Overrides()  # frozen: no override


class Agent(Registry[DepsT, OutputT]):
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
        tools: functions or ``Tool`` values the model may call (mypy holds a ``Tool``'s
            context to ``deps_type``; without ``deps_type`` the tools' context is taken).
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
    (``ModelRetry`` asks for a correction); ``@agent.instructions`` adds instructions made
    per run (``agent.static_instructions`` holds ``instructions=``). Every run method
    also takes the run keywords (``RunOptions``: ``deps=``, ``model=``, ``settings=``,
    ``usage_limits=``, ...) for that run; ``agent.override(model=...)`` replaces them
    within a ``with`` block (tests). ``with agent:`` opens the toolsets for the ``_sync``
    methods, as ``async with agent:`` does for the async ones.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        output_type: TypeForm[OutputT] = str,  # type: ignore[assignment]  # OutputT's default
        output_mode: OutputMode = "tool",
        instructions: str | None = None,
        dynamic_instructions: InstructionsFunction | None = None,
        tools: Sequence[Tool[DepsT] | ContextFunction[DepsT] | Callable[..., Any]] = (),
        history_processor: HistoryProcessor | AsyncHistoryProcessor | None = None,
        max_requests: int = 50,
        output_retries: int = 2,
        timeout: float | None = None,
        settings: ModelSettings | None = None,
        deps_type: type[DepsT] | None = None,
        toolsets: Sequence[Toolset] = (),
        signing_key: SigningKeys | None = None,
        name: str | None = None,
        **unknown: Never,  # pydantic-ai's keywords: a TypeError naming golem's (mypy: an error)
    ) -> None:
        refuse_unknown_keywords("Agent()", unknown, Agent.__init__)
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
        self.static_instructions = instructions
        self.dynamic_instructions = dynamic_instructions
        self.history_processor = history_processor
        self.max_requests = max_requests
        self.output_retries = output_retries
        self.timeout = timeout
        self.settings = settings or ModelSettings()
        self._output = Output(output_type, output_mode, self._model)
        # what override() (outermost, for tests) and a run's own keywords put in place
        self._overridden: ContextVar[Overrides] = ContextVar("golem_override", default=_NONE)
        self._start_registry()
        for t in tools:
            self._add_tool(t if isinstance(t, Tool) else Tool.from_function(t))
        self._refresh_specs()
        self.toolsets: tuple[Toolset, ...] = tuple(toolsets)
        self._held = OpenToolsets(self.toolsets)
        for ts in self.toolsets:
            if not isinstance(ts, Toolset):
                raise UsageError(f"{ts!r} is not a toolset: it needs an async tools(context)")
        try:
            self._signing_keys = () if signing_key is None else signing_keys(signing_key)
        except (TypeError, ValueError) as e:
            why = f": {e}" if isinstance(e, ValueError) else ""
            raise UsageError(
                "signing_key must be bytes (secrets.token_bytes(32)), or a sequence of"
                f" them newest first; got {_a(type(signing_key).__name__)}{why}"
            ) from None

    @property
    def model(self) -> Model:
        """The model runs use: ``override(model=...)``'s, else the agent's own (a run's
        ``model=`` holds for that run only: see ``run_spec``)."""
        chosen = self._overridden.get().model
        return chosen if chosen is not None else self._model

    @model.setter
    def model(self, model: Model | str) -> None:
        self._model = infer_model(model)

    # -- overrides --------------------------------------------------------------------

    @contextmanager
    def override(
        self,
        *,
        model: Model | str | None = None,
        settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        deps: DepsT = KEEP,
        tools: Sequence[Tool[DepsT] | ContextFunction[DepsT] | Callable[..., Any]] = KEEP,
        instructions: str | None = KEEP,
    ) -> Iterator[None]:
        """Run with another model (settings, limits, deps, tools, instructions) within a
        ``with`` block, for tests: ``with agent.override(model=TestModel(), deps=fake_db):
        ...``. The code under test is unchanged; the override wins over a run's own
        ``model=`` and ``deps=``. ``tools=`` replaces the agent's own tools (its toolsets
        stay); ``instructions=`` replaces all its instructions, ``@agent.instructions``
        ones too (``None``: none). It holds in this context (thread, task) and those
        started from it, and is undone on leaving the block.
        """
        if instructions is not KEEP and not isinstance(instructions, str | None):
            raise UsageError(
                f"instructions must be a string or None, got {type(instructions).__name__}"
            )
        chosen = attrs.evolve(
            overrides_of({"model": model, "settings": settings, "usage_limits": usage_limits}),
            deps=deps,
            tools=KEEP if tools is KEEP else made_tools(tools),
            instructions=instructions,
        )
        token = self._overridden.set(chosen.over(self._overridden.get()))
        try:
            yield
        finally:
            self._overridden.reset(token)

    def _deps_for(self, deps: DepsT | None) -> DepsT | None:
        """``override(deps=...)``'s deps when one is in force, else ``deps``."""
        chosen = self._overridden.get().deps
        return deps if chosen is KEEP else cast("DepsT", chosen)

    def __enter__(self) -> Agent[DepsT, OutputT]:
        """Open the toolsets (MCP connections) for the ``_sync`` methods of this thread:
        ``with agent: agent.run_sync(...)`` (held open in one task of the thread's loop)."""
        self._held.open_sync()
        return self

    def __exit__(self, *exc: object) -> None:
        """Close what ``__enter__`` opened."""
        self._held.close_sync()

    def __repr__(self) -> str:
        named = f"name={self.name!r}, " if self.name is not None else ""
        return f"Agent({named}model={self.model.name!r}, tools={sorted(self.tools)!r})"

    async def __aenter__(self) -> Agent[DepsT, OutputT]:
        """Open the toolsets that are async context managers (MCP connections)."""
        await self._held.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close what ``__aenter__`` opened, in reverse order."""
        await self._held.close()

    # -- running: every run method takes the run keywords, ``RunOptions`` -----------

    def run_spec(self, **options: Unpack[RunOptions[DepsT]]) -> RunSpec:
        """The set-up of a run with these keywords, as of now: the agent's configuration,
        then the run's own ``model=``, ``settings=`` and ``usage_limits=``, under any
        ``override(...)`` in force. Every runtime (asyncio, DBOS, Temporal) runs from it."""
        check_options("run_spec", options)
        return self._spec(options)

    def _spec(self, options: RunOptions[DepsT]) -> RunSpec:
        own = RunSpec(
            name=self.name,
            model=self._model,
            instructions=self.static_instructions,
            dynamic_instructions=joined_instructions(self.dynamic_instructions, self._instructions),
            tools=dict(self.tools),
            specs=self._specs,
            toolsets=self.toolsets,
            processor=self.history_processor,
            output=self._output,
            validators=tuple(self._validators),
            settings=self.settings,
            max_requests=self.max_requests,
            output_retries=self.output_retries,
            usage_limits=None,
            timeout=self.timeout,
            signing_keys=self._signing_keys,
        )
        return own.overridden(self._overridden.get().over(overrides_of(options)))

    @overload
    async def run(
        self, prompt: Prompt, *, output_type: None = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[OutputT]: ...

    @overload
    async def run(
        self, prompt: Prompt, *, output_type: TypeForm[T], **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[T]: ...

    async def run(
        self, prompt: Prompt, *, output_type: Any = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[Any]:
        """Run the agent on a fresh prompt, with no history. ``output_type=`` asks this
        run for another output type than the agent's (its output validators, written for
        the agent's type, do not run then)."""
        return await _start(self, "run", (), prompt, None, options, output_type)

    @overload
    async def run_with_history(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        output_type: None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]: ...

    @overload
    async def run_with_history(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        output_type: TypeForm[T],
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[T]: ...

    async def run_with_history(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        output_type: Any = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]:
        """Continue a conversation: ``history`` (a previous ``result.messages``), then ``prompt``.

        ``prompt=None`` continues the history as it is (e.g. after tool results);
        ``output_type=`` as for ``run``.

        Raises:
            RunError: the run failed; ``partial`` holds the resume-ready evidence.
        """
        return await _start(self, "run_with_history", history, prompt, None, options, output_type)

    async def run_stream(
        self,
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]:
        """Like ``run``, streaming every model answer to ``on_delta`` as it arrives."""
        return await _start(self, "run_stream", (), prompt, on_delta or _ignore, options)

    async def run_stream_with_history(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]:
        """Like ``run_with_history``, streaming every model answer to ``on_delta``.

        ``on_event`` (on every run method) receives the run's lifecycle events
        (``RunStarted``, ``RequestFinished``, ... : ``golem_shell.RunEvent``) and, in a
        stream, every ``DeltaEvent`` too, in order.
        """
        handler = on_delta or _ignore
        return await _start(self, "run_stream_with_history", history, prompt, handler, options)

    @overload
    def iter_stream(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: None = None,
        **options: Unpack[StreamOptions[DepsT]],
    ) -> EventStream[OutputT]: ...

    @overload
    def iter_stream(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: TypeForm[T],
        **options: Unpack[StreamOptions[DepsT]],
    ) -> EventStream[T]: ...

    def iter_stream(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output_type: Any = None,
        **options: Unpack[StreamOptions[DepsT]],
    ) -> EventStream[Any]:
        """Stream a run as an async iterator of its events (deltas and lifecycle events).

        ``async with agent.iter_stream(prompt) as stream: async for event in stream: ...``;
        then ``stream.result``. Leaving early cancels the run; ``stream.partial`` keeps
        what it completed. ``output_type=`` asks this run for another type, as for
        ``run`` (``stream.stream_output()`` reads that type). See ``EventStream``.
        """
        from golem_shell.run._event_stream import EventStream

        check_options("iter_stream", options, allowed=STREAM_KEYWORDS)
        spec = self._spec({**options, "on_event": None})
        if output_type is not None:
            spec = spec.with_output(output_type)  # refuses a type with no schema, here

        async def start(on_delta: DeltaHandler | None, on_event: EventHandler | None) -> Any:
            every: RunOptions[DepsT] = {**options, "on_event": on_event}
            return await _start(self, "iter_stream", history, prompt, on_delta, every, output_type)

        return EventStream(start, spec.output)

    @overload
    def run_sync(
        self, prompt: Prompt, *, output_type: None = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[OutputT]: ...

    @overload
    def run_sync(
        self, prompt: Prompt, *, output_type: TypeForm[T], **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[T]: ...

    def run_sync(
        self, prompt: Prompt, *, output_type: Any = None, **options: Unpack[RunOptions[DepsT]]
    ) -> RunResult[Any]:
        """``run`` for code without an event loop."""
        return sync(self.run(prompt, output_type=output_type, **options))

    @overload
    def run_with_history_sync(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        output_type: None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]: ...

    @overload
    def run_with_history_sync(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        output_type: TypeForm[T],
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[T]: ...

    def run_with_history_sync(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        output_type: Any = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[Any]:
        """``run_with_history`` for code without an event loop."""
        return sync(self.run_with_history(history, prompt, output_type=output_type, **options))

    def run_stream_sync(
        self,
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]:
        """``run_stream`` for code without an event loop."""
        return sync(self.run_stream(prompt, on_delta=on_delta, **options))

    def run_stream_with_history_sync(
        self,
        history: Sequence[Message],
        prompt: Prompt,
        *,
        on_delta: DeltaHandler | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]:
        """``run_stream_with_history`` for code without an event loop."""
        return sync(self.run_stream_with_history(history, prompt, on_delta=on_delta, **options))

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
        **options: Unpack[RunOptions[DepsT]],
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
        check_options("run_with_deferred_results", options)
        history = check_history(history)
        if not isinstance(results, Mapping):
            raise UsageError(
                "results must be a mapping of call id to Approved(), Denied(reason) or"
                f" ExternalResult(...), got {type(results).__name__}"
            )
        spec, context = _set_up(self, history, options)
        answered = Answered(results, close_unanswered)
        on_event = options.get("on_event")
        steer = options.get("steering")
        result = await resume(
            spec, history, answered, context, on_delta, on_event, issued=issued, steer=steer
        )
        return cast(RunResult[OutputT], result)

    def run_with_deferred_results_sync(
        self,
        history: Sequence[Message],
        results: Mapping[str, DeferredAnswer],
        *,
        issued: IssuedCalls | None = None,
        close_unanswered: bool = False,
        **options: Unpack[RunOptions[DepsT]],
    ) -> RunResult[OutputT]:
        """``run_with_deferred_results`` for code without an event loop."""
        return sync(
            self.run_with_deferred_results(
                history, results, issued=issued, close_unanswered=close_unanswered, **options
            )
        )


async def _start(
    agent: Agent[Any, OutputT],
    method: str,
    history: Sequence[Message],
    prompt: Prompt,
    on_delta: DeltaHandler | None,
    options: RunOptions[Any],
    output_type: Any = None,
) -> RunResult[OutputT]:
    check_options(method, options)
    history = check_history(history)
    parts = prompt_parts(prompt)
    spec, context = _set_up(agent, history, options)
    if output_type is not None:
        spec = spec.with_output(output_type)
    result = await start(
        spec, history, parts, context, on_delta, options.get("on_event"), options.get("steering")
    )
    return cast(RunResult[OutputT], result)


def _set_up(
    agent: Agent[Any, Any], history: Sequence[Message], options: RunOptions[Any]
) -> tuple[RunSpec, RunContext[Any]]:
    """The run's set-up and context (its ids checked, or chosen)."""
    ids = run_ids(history, options.get("run_id"), options.get("conversation_id"))
    deps = agent._deps_for(options.get("deps"))
    return agent._spec(options), RunContext(deps, *ids)


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _ignore(_: DeltaEvent) -> None:
    return None
