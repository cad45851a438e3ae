"""Per-run usage limits and the overrides a run or a test applies to an agent.

``UsageLimits`` bounds one run: its model requests, the tokens it has used, the tool calls
it runs and what it costs. All are the loop's own limits (``RunConfig.max_requests``,
``max_*_tokens``, ``max_tool_calls``, ``max_cost``; stage ``limit``): the core checks the
run's usage as each answer arrives and before each tool batch, so a run stops, with its
partial, before it spends more once its budget is gone, in every runtime alike.
``Overrides`` are what ``Agent.override(...)`` and a run method's ``model=``, ``settings=`` and
``usage_limits=`` put in place of the agent's own configuration; ``merge_settings`` (one
rule, in ``models._settings``, re-exported here) lays a run's settings over the agent's.
"""

from __future__ import annotations

from typing import Any

import attrs
from attrs import frozen

from golem_core import ModelSettings, Price
from golem_shell._errors import UsageError
from golem_shell.models import Model
from golem_shell.models._settings import merge_settings

__all__ = ["KEEP", "Overrides", "UsageLimits", "merge_settings"]


@frozen
class UsageLimits:
    """What one run may use; ``None`` is no limit.

    Args:
        request_limit: the most model requests of the run (in place of the agent's
            ``max_requests``); one more fails it at stage ``limit``.
        input_tokens_limit: the most input tokens the run's requests may have used
            before another request is sent.
        output_tokens_limit: the same for output tokens.
        total_tokens_limit: the same for input plus output tokens.
        tool_calls_limit: the most tool calls the run may execute (``0``: none). Checked
            before each batch of calls runs: a batch that would take the run past the
            limit is not run at all, and the run fails at stage ``limit``.
        cost_limit: the most the run may cost, in ``price``'s currency; checked as each
            answer arrives, like the token limits. Needs ``price``.
        price: what the run's model charges per million tokens (``golem_core.Price``);
            golem keeps no price table, prices change.

    A token or cost limit is checked as each answer arrives, against the run's usage so
    far: once the run has reached it, no further request is sent and the run fails with
    ``RunError`` at stage ``limit``, whose ``partial`` holds everything it completed (the
    answer that reached the limit included, a final answer too).
    """

    request_limit: int | None = attrs.field(default=None, kw_only=True)
    input_tokens_limit: int | None = attrs.field(default=None, kw_only=True)
    output_tokens_limit: int | None = attrs.field(default=None, kw_only=True)
    total_tokens_limit: int | None = attrs.field(default=None, kw_only=True)
    tool_calls_limit: int | None = attrs.field(default=None, kw_only=True)
    cost_limit: float | None = attrs.field(default=None, kw_only=True)
    price: Price | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        for name in (
            "request_limit",
            "input_tokens_limit",
            "output_tokens_limit",
            "total_tokens_limit",
            "tool_calls_limit",
        ):
            value = getattr(self, name)
            least = 0 if name == "tool_calls_limit" else 1
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < least
            ):
                kind = "a non-negative" if least == 0 else "a positive"
                raise UsageError(f"UsageLimits.{name} must be {kind} int or None, got {value!r}")
        cost = self.cost_limit
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 < cost < 1e12
        ):
            raise UsageError(f"UsageLimits.cost_limit must be a positive number, got {cost!r}")
        if self.price is not None and not isinstance(self.price, Price):
            raise UsageError(
                f"UsageLimits.price must be a golem_core.Price, got {type(self.price).__name__}"
            )
        if cost is not None and self.price is None:
            raise UsageError(
                "UsageLimits.cost_limit needs a price: UsageLimits(cost_limit=...,"
                " price=Price(input=..., output=...)) (per million tokens)"
            )


KEEP: Any = type("Keep", (), {"__repr__": lambda self: "KEEP"})()
"""The ``deps`` of ``Overrides`` that replaces nothing (``None`` is a value deps may have)."""


@frozen
class Overrides:
    """What replaces an agent's own model, settings and limits (``None``: keep it), the
    run's ``deps``, and (``agent.override`` only) the agent's tools and instructions
    (``KEEP``: keep them)."""

    model: Model | None = None
    settings: ModelSettings | None = None
    usage_limits: UsageLimits | None = None
    deps: Any = KEEP
    tools: Any = KEEP
    """A ``tuple`` of ``Tool`` replacing the agent's own tools (toolsets stay)."""
    instructions: Any = KEEP
    """A ``str`` (or ``None``) replacing every instruction: static and dynamic."""

    def over(self, inner: Overrides) -> Overrides:
        """These overrides, falling back to ``inner`` where they set nothing."""
        return Overrides(
            self.model if self.model is not None else inner.model,
            self.settings if self.settings is not None else inner.settings,
            self.usage_limits if self.usage_limits is not None else inner.usage_limits,
            self.deps if self.deps is not KEEP else inner.deps,
            self.tools if self.tools is not KEEP else inner.tools,
            self.instructions if self.instructions is not KEEP else inner.instructions,
        )
