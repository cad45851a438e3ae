"""What an agent is made of besides its model, registered by decorators: tools,
output validators and instructions functions.

Owns ``Registry``, the part of ``Agent`` that collects them (``@agent.tool``,
``@agent.tool_plain``, ``@agent.output_validator``, ``@agent.instructions``) and checks
each as it is registered; a run reads what it collected through ``Agent.run_spec``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, Generic, Never, ParamSpec, overload

from typing_extensions import TypeVar

from golem_core.loop import ToolSpec
from golem_shell._errors import UsageError, refuse_unknown_keywords
from golem_shell.tools._output import OUTPUT_TOOL_NAME
from golem_shell.tools._tools import RunContext, Tool, register_tool

__all__ = ["Registry"]

DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=str)
P = ParamSpec("P")
R = TypeVar("R")


class Registry(Generic[DepsT, OutputT]):
    """The tools, output validators and instructions functions of an agent.

    ``tools`` maps each tool's name to it; the decorators return the function unchanged.
    """

    tools: dict[str, Tool[Any]]
    _specs: tuple[ToolSpec, ...]
    _validators: list[Callable[..., Any]]
    _instructions: list[Callable[..., Any]]

    def _start_registry(self) -> None:
        self.tools = {}
        self._specs = ()
        self._validators = []
        self._instructions = []

    def _add_tool(self, made: Tool[Any]) -> None:
        if made.name in self.tools or made.name == OUTPUT_TOOL_NAME:
            raise UsageError(f"two tools are named {made.name!r}")
        self.tools[made.name] = made
        self._refresh_specs()

    def _refresh_specs(self) -> None:
        self._specs = tuple(t.spec for t in self.tools.values())

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
        **unknown: Never,
    ) -> Any:
        """Register a tool whose first parameter is the run's ``RunContext``:
        ``@agent.tool`` or ``@agent.tool(requires_approval=True, ...)``. The function is
        returned unchanged. Keywords as for ``golem_shell.tool``.

        Raises:
            UsageError: the first parameter is not a ``RunContext`` (use ``tool_plain``),
                a parameter cannot be described, or the name is taken.
            TypeError: an unknown keyword (pydantic-ai's ``retries=`` is ``max_retries=``).
        """
        refuse_unknown_keywords("tool()", unknown, Registry.tool)
        return register_tool(
            self._add_tool,
            function,
            True,
            name,
            description,
            requires_approval,
            external,
            max_retries,
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
        **unknown: Never,
    ) -> Any:
        """Register a tool that takes no ``RunContext``: ``@agent.tool_plain``. The
        function is returned unchanged.

        Raises:
            UsageError: the function takes a ``RunContext`` (use ``tool``), a parameter
                cannot be described, or the name is taken.
            TypeError: an unknown keyword (pydantic-ai's ``retries=`` is ``max_retries=``).
        """
        refuse_unknown_keywords("tool_plain()", unknown, Registry.tool_plain)
        return register_tool(
            self._add_tool,
            function,
            False,
            name,
            description,
            requires_approval,
            external,
            max_retries,
        )

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

    @overload
    def instructions(
        self, function: Callable[[RunContext[DepsT]], str | None], /
    ) -> Callable[[RunContext[DepsT]], str | None]: ...

    @overload
    def instructions(
        self, function: Callable[[RunContext[DepsT]], Awaitable[str | None]], /
    ) -> Callable[[RunContext[DepsT]], Awaitable[str | None]]: ...

    @overload
    def instructions(self, function: Callable[[], str | None], /) -> Callable[[], str | None]: ...

    @overload
    def instructions(
        self, function: Callable[[], Awaitable[str | None]], /
    ) -> Callable[[], Awaitable[str | None]]: ...

    def instructions(self, function: Callable[..., Any], /) -> Callable[..., Any]:
        """Register instructions made per run: ``@agent.instructions``.

        The function (sync or async) takes the run's ``RunContext`` or nothing and
        returns text (or ``None`` for none). Every run joins, a blank line apart: the
        static ``instructions=``, then ``dynamic_instructions=``, then these in the order
        registered. Returns the function unchanged.

        Raises:
            UsageError: the function takes more than one parameter.
        """
        try:
            arity = len(inspect.signature(function).parameters)
        except (TypeError, ValueError) as e:
            raise UsageError(f"cannot read the instructions function's signature: {e}") from e
        if arity not in (0, 1):
            raise UsageError(
                "an instructions function takes (context) or nothing,"
                f" {getattr(function, '__name__', function)!r} takes {arity} parameters"
            )
        self._instructions.append(function)
        return function
