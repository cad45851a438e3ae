"""Tools: plain Python functions that a model can call, and the context they receive.

Owns turning a function (sync or async, typed parameters, a docstring) into a
``ToolDefinition`` with a JSON Schema, validating a call's arguments into the parameter
types, calling it, and turning what it returns (or raises) into an outcome the loop
understands. How a tool ends a call:

- return a value: the model reads it as the call's result;
- ``raise ModelRetry("...")``: the model reads the message as a failed result and may call
  again; each retry counts against the tool's ``max_retries``, and one more fails the run
  at stage ``tool``;
- return or raise ``ToolFailure("...")``: a definitive failed result the model reads; the
  run goes on and nothing is counted;
- raise or return ``Canceled``: stop the run deliberately (stage ``canceled``);
- any other exception fails the run at stage ``tool`` (``RunError.cause`` chains it).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import typing
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import (
    Any,
    Concatenate,
    Generic,
    Literal,
    Never,
    Protocol,
    TypeVar,
    get_origin,
    overload,
    runtime_checkable,
)

from attrs import field, frozen

from golem_core import (
    DataPart,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    URLPart,
    Usage,
)
from golem_core.loop import (
    ToolCanceled,
    ToolCrashed,
    ToolOutcome,
    ToolRetry,
    ToolReturned,
    ToolSpec,
)
from golem_core.wire.strict import absent_nulls_dropped
from golem_shell._errors import (
    GolemError,
    UsageError,
    error_type,
    refuse_unknown_keywords,
)
from golem_shell.tools._docstrings import parse_docstring
from golem_shell.tools._schema import (
    NO_DEFAULT,
    SchemaError,
    ValidationFailed,
    object_schema,
    to_jsonable,
    validate,
)

__all__ = [
    "Canceled",
    "ContextFunction",
    "ModelRetry",
    "RunContext",
    "Tool",
    "ToolDecorator",
    "ToolFailure",
    "Toolset",
    "register_tool",
    "tool",
]

DepsT = TypeVar("DepsT")


@frozen
class RunContext(Generic[DepsT]):
    """What a tool or an instructions function knows of its run.

    ``usage`` is the usage so far; ``messages`` the conversation so far; ``tool_call_id``
    and ``tool_name`` are set inside a tool call; ``toolset_tools`` holds the tools the
    agent's toolsets offer this run.
    """

    deps: DepsT
    run_id: str
    conversation_id: str
    usage: Usage = Usage()
    requests: int = 0
    messages: tuple[Message, ...] = field(default=(), repr=False)
    tool_call_id: str | None = None
    tool_name: str | None = None
    toolset_tools: dict[str, Tool[Any]] = field(factory=dict, repr=False, eq=False)
    """The tools the agent's toolsets added to this run, by name (filled at its start)."""


class ToolFailure(Exception):
    """Return or raise this from a tool to report a definitive failure; the run goes on.

    The model reads a failed tool result and decides what to do; nothing is retried or
    counted. ``parts``, when given, are the failure's evidence (e.g. an MCP error result
    with an image); otherwise ``message`` is. To ask the model to call again with better
    arguments, raise ``ModelRetry`` instead.
    """

    def __init__(self, message: str, *, parts: Sequence[Part] = ()) -> None:
        self.message = message
        self.parts: tuple[Part, ...] = tuple(parts)
        super().__init__(message)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolFailure):
            return NotImplemented
        return (self.message, self.parts) == (other.message, other.parts)

    def __hash__(self) -> int:
        return hash((self.message, self.parts))


class ModelRetry(Exception):
    """Raise this from a tool to ask the model to call it again: ``message`` says how.

    The model reads ``message`` as the call's failed result and may call again. Each retry
    counts against the tool's ``max_retries`` (``@tool(max_retries=...)``, default 2): one
    more fails the run at stage ``tool``, with a partial. Arguments that do not fit the
    parameter types are retried the same way without any code. Raised from an output
    validator (``@agent.output_validator``), it gives the model a correction round.
    """

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class Canceled(GolemError):  # the seed's name for a deliberate stop
    """Raise (or return) this from a tool to stop the run deliberately.

    Results recorded before the stop stay; every call left unanswered is closed with the
    neutral no-result result, and the run fails at stage ``canceled`` with a partial
    that needs no repair.
    """

    def __init__(self, reason: str = "the tool stopped the run") -> None:
        self.reason = reason
        super().__init__(reason)


def _is_context(annotation: Any) -> bool:
    return annotation is RunContext or get_origin(annotation) is RunContext


@frozen
class _Param:
    name: str
    annotation: Any
    default: Any
    kind: Any


@frozen(eq=False, repr=False)
class Tool(Generic[DepsT]):
    """A function the model may call.

    Build one with ``Tool.from_function`` or the ``tool`` decorator. ``kind`` is
    ``"function"`` (run during the run), ``"approval"`` (the run pauses until a person
    approves the call) or ``"external"`` (the result comes from outside the run).
    """

    function: Callable[..., Any]
    definition: ToolDefinition
    takes_context: bool
    params: tuple[_Param, ...]
    kind: Literal["function", "approval", "external"] = "function"
    max_retries: int = 2
    takes_json: bool = field(default=False, kw_only=True)

    @property
    def name(self) -> str:
        return self.definition.name

    def __repr__(self) -> str:
        parameters = list(self.definition.parameters.get("properties", {}))
        return (
            f"Tool({self.name!r}, description={self.definition.description!r},"
            f" parameters={parameters!r}, kind={self.kind!r}, max_retries={self.max_retries})"
        )

    @property
    def spec(self) -> ToolSpec:
        """What the loop needs to know of this tool."""
        return ToolSpec(self.definition, self.kind, self.max_retries)

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        kind: Literal["function", "approval", "external"] = "function",
        max_retries: int = 2,
    ) -> Tool[Any]:
        """Make a tool of ``function`` (sync or async).

        Its first parameter may be a ``RunContext``; every other parameter needs a type
        annotation. The docstring's summary describes the tool and its ``Args:`` section
        the parameters.

        Raises:
            UsageError: a parameter has no annotation or a type that cannot be described.
        """
        tool_name = name or getattr(function, "__name__", None)
        if not tool_name or not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", tool_name):
            raise UsageError(
                f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'"
                " (what every provider accepts)"
            )
        try:
            hints = typing.get_type_hints(function)
        except Exception as e:
            raise UsageError(f"tool {tool_name}: cannot read its type hints: {e}") from e
        signature = inspect.signature(function)
        summary, arg_docs = parse_docstring(function.__doc__)
        params: list[_Param] = []
        takes_context = False
        properties: list[tuple[str, Any, str | None, Any]] = []
        for i, p in enumerate(signature.parameters.values()):
            annotation = hints.get(p.name, inspect.Parameter.empty)
            if i == 0 and _is_context(annotation):
                takes_context = True
                continue
            if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise UsageError(f"tool {tool_name}: *args and **kwargs cannot be described")
            if annotation is inspect.Parameter.empty:
                raise UsageError(f"tool {tool_name}: parameter {p.name!r} needs a type annotation")
            if _is_context(annotation):
                raise UsageError(f"tool {tool_name}: RunContext must be the first parameter")
            default = NO_DEFAULT if p.default is inspect.Parameter.empty else p.default
            properties.append((p.name, annotation, arg_docs.get(p.name), default))
            params.append(_Param(p.name, annotation, p.default, p.kind))
        try:
            schema = object_schema(properties)
        except SchemaError as e:
            raise UsageError(f"tool {tool_name}: {e}") from e
        definition = ToolDefinition(
            tool_name, description if description is not None else summary, schema
        )
        return Tool(function, definition, takes_context, tuple(params), kind, max_retries)

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: dict[str, Any],
        function: Callable[[RunContext[Any], dict[str, object]], Awaitable[Any]],
        *,
        kind: Literal["function", "approval", "external"] = "function",
        max_retries: int = 2,
    ) -> Tool[Any]:
        """A tool described by a JSON Schema of its own (e.g. one an MCP server lists).

        ``parameters`` reaches the model unchanged; the call's arguments reach
        ``function(context, arguments)`` as the parsed JSON object, unvalidated (the
        schema's owner validates them). ``function`` returns what a tool returns.

        Raises:
            UsageError: the name is not 1-64 letters, digits, ``_`` or ``-``, or
                ``parameters`` is not a JSON Schema object.
        """
        if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name):
            raise UsageError(
                f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'"
                " (what every provider accepts)"
            )
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise UsageError(f"tool {name}: the parameters must be a JSON Schema of an object")
        definition = ToolDefinition(name, description, parameters)
        return Tool(function, definition, True, (), kind, max_retries, takes_json=True)

    def bind(self, arguments: dict[str, object]) -> tuple[list[Any], dict[str, Any]]:
        """Validate parsed arguments into the parameter types.

        Raises:
            ValidationFailed: listing every problem with its argument name.
        """
        errors: list[str] = []
        known = {p.name for p in self.params}
        for key in arguments:
            if key not in known:
                errors.append(f"unexpected argument {key!r}")
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in self.params:
            if p.name not in arguments:
                if p.default is inspect.Parameter.empty:
                    errors.append(f"missing required argument {p.name!r}")
                continue
            try:
                value = validate(arguments[p.name], p.annotation, path=p.name)
            except ValidationFailed as e:
                errors.extend(e.errors)
                continue
            if p.kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[p.name] = value
        if errors:
            raise ValidationFailed(errors)
        return args, kwargs

    async def execute(self, context: RunContext[Any], call: ToolCallPart) -> ToolOutcome:
        """Validate the call's arguments, run the function, and say what happened."""
        call_id = call.id or ""
        arguments = call.arguments_object
        if arguments is None:  # the loop never asks for this; be total anyway
            return ToolRetry(call_id, "the arguments are not a JSON object")
        # a null for an optional argument means "not given" (strict schemas, ADR 0130)
        arguments = absent_nulls_dropped(dict(arguments), self.definition.parameters)
        if self.takes_json:
            args: list[Any] = [arguments]
            kwargs: dict[str, Any] = {}
        else:
            try:
                args, kwargs = self.bind(arguments)
            except ValidationFailed as e:
                _record_crash(call_id, e)  # the cause, should the tool run out of retries
                return ToolRetry(
                    call_id,
                    f"the arguments of {self.name} are not valid: {e}. Fix them and call again.",
                )
        if self.takes_context:
            args.insert(0, context)
        try:
            if inspect.iscoroutinefunction(self.function):
                value = await self.function(*args, **kwargs)
            else:
                value = await asyncio.to_thread(self.function, *args, **kwargs)
                if inspect.isawaitable(value):
                    value = await value
        except Canceled as e:
            return ToolCanceled(call_id, e.reason)
        except ModelRetry as e:
            _record_crash(call_id, e)  # the cause, should the tool run out of retries
            return ToolRetry(call_id, e.message)
        except ToolFailure as e:
            return ToolReturned(call_id, e.parts or (TextPart(e.message),), failed=True)
        except asyncio.CancelledError as e:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the run (or this batch) is being cancelled: asyncio's semantics hold
            _record_crash(call_id, e)  # the tool raised it itself: a failure, not a cancel
            return ToolCrashed(
                call_id,
                f"tool {self.name} raised CancelledError itself (the run was not cancelled)",
                error_type=error_type(e),
            )
        except Exception as e:
            _record_crash(call_id, e)
            return ToolCrashed(
                call_id,
                f"tool {self.name} raised {type(e).__name__}: {e}",
                error_type=error_type(e),
            )
        if isinstance(value, Canceled):
            return ToolCanceled(call_id, value.reason)
        if isinstance(value, ToolFailure):
            return ToolReturned(call_id, value.parts or (TextPart(value.message),), failed=True)
        try:
            return ToolReturned(call_id, to_parts(value))
        except (TypeError, ValueError) as e:
            return ToolCrashed(call_id, f"tool {self.name} returned a value that is not JSON: {e}")


TOOL_CRASHES: ContextVar[dict[str, BaseException] | None] = ContextVar(
    "golem_tool_crashes", default=None
)
"""Where ``Tool.execute`` leaves the exception a tool raised (a crash, a ``ModelRetry``, its
arguments' ``ValidationFailed``), by call id, so the driver can chain it to the
``RunError`` (the loop's outcome carries only the reason)."""


def _record_crash(call_id: str, error: BaseException) -> None:
    crashes = TOOL_CRASHES.get()
    if crashes is not None:
        crashes[call_id] = error


@runtime_checkable
class Toolset(Protocol):
    """Tools that join an agent's tools per run (``Agent(toolsets=[...])``).

    ``tools`` is called at the start of every run with the run's context, so a toolset
    can follow a changing source (an MCP server's tool list) or scope what it offers to
    the caller (``context.deps``). A toolset that is also an async context manager (an
    MCP connection) is entered and exited with the agent: ``async with agent: ...``.
    """

    async def tools(self, context: RunContext[Any]) -> Sequence[Tool[Any]]:
        """The tools this run may call."""
        ...


def to_parts(value: object) -> tuple[Part, ...]:
    """The evidence parts of a tool's return value.

    ``str`` is text; a part (or a sequence of parts) is kept; anything else is written as
    JSON by ``to_jsonable`` (attrs classes, dataclasses, pydantic models, ``datetime``,
    ``UUID``, ``Decimal``, enums, ...).

    Raises:
        TypeError, ValueError: the value has no JSON form.
    """
    if isinstance(value, str):
        return (TextPart(value),)
    if isinstance(value, TextPart | URLPart | DataPart):
        return (value,)
    if (
        isinstance(value, Sequence)
        and value
        and all(isinstance(v, TextPart | URLPart | DataPart) for v in value)
    ):
        return tuple(typing.cast(Sequence[Part], value))
    plain = to_jsonable(value)
    return (TextPart(json.dumps(plain, ensure_ascii=False, allow_nan=False)),)


ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]

ContextFunction = Callable[Concatenate[RunContext[DepsT], ...], Any]
"""A function taking a ``RunContext[DepsT]`` first. ``Agent(tools=...)`` takes
``Tool[DepsT] | ContextFunction[DepsT] | Callable[..., Any]``: a ``Tool`` is not callable,
so a standalone ``@tool`` of another context is an error (issue 49 item 9). A bare
function of another context still passes as the plain ``Callable`` (no type says "its
first parameter is not a RunContext"); this member is there for mypy's inference: with it
``deps_type=`` decides ``DepsT`` (without it a list holding a ``Tool[Any]`` made ``DepsT``
``Any``, and a mismatching ``Tool`` passed)."""


class ToolDecorator(Protocol):
    """What ``tool(...)`` with keywords returns: a decorator typed as ``tool`` itself is
    (a function taking a ``RunContext[D]`` first makes a ``Tool[D]``)."""

    @overload
    def __call__(
        self, function: Callable[Concatenate[RunContext[DepsT], ...], Any], /
    ) -> Tool[DepsT]: ...

    @overload
    def __call__(self, function: Callable[..., Any], /) -> Tool[Any]: ...


@overload
def tool(function: Callable[Concatenate[RunContext[DepsT], ...], Any], /) -> Tool[DepsT]: ...


@overload
def tool(function: Callable[..., Any], /) -> Tool[Any]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    external: bool = False,
    max_retries: int = 2,
) -> ToolDecorator: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    external: bool = False,
    max_retries: int = 2,
    **unknown: Never,
) -> Tool[Any] | Callable[[Callable[..., Any]], Tool[Any]]:
    """Make a tool of a function: ``@tool`` or ``@tool(requires_approval=True)``.

    Typed by the context the function takes: ``@tool`` on
    ``def f(ctx: RunContext[Deps], x: int)`` is a ``Tool[Deps]`` (an agent of another
    ``deps_type`` is a type error where it is given the tool); a function without a
    ``RunContext`` first makes a ``Tool[Any]``, which any agent takes. An unknown keyword
    is a ``TypeError`` saying golem's name for it (pydantic-ai's ``retries=`` is
    ``max_retries=``).
    """
    refuse_unknown_keywords("tool()", unknown, tool)
    if requires_approval and external:
        raise UsageError("a tool is either requires_approval or external, not both")
    kind: Literal["function", "approval", "external"] = (
        "approval" if requires_approval else "external" if external else "function"
    )

    def make(fn: Callable[..., Any]) -> Tool[Any]:
        return Tool.from_function(
            fn, name=name, description=description, kind=kind, max_retries=max_retries
        )

    return make(function) if function is not None else make


def register_tool(
    add: Callable[[Tool[Any]], None],
    function: Callable[..., Any] | None,
    with_context: bool,
    name: str | None,
    description: str | None,
    requires_approval: bool,
    external: bool,
    max_retries: int,
) -> Any:
    """``@agent.tool`` (``with_context``) and ``@agent.tool_plain``: make a tool of
    ``function`` (keywords as ``tool`` takes them), check that it takes a ``RunContext``
    first exactly when ``with_context``, and ``add`` it. Returns the function unchanged,
    or the decorator when ``function`` is ``None``.

    Raises:
        UsageError: the function takes a ``RunContext`` when it should not, or the
            other way round (naming the decorator to use), or ``tool`` refuses it.
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        made = tool(
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
        add(made)
        return fn

    return register(function) if function is not None else register
