"""Per-run usage limits and the overrides a run or a test applies to an agent.

``UsageLimits`` bounds one run: its model requests and the tokens it has used. Both are
the loop's own limits (``RunConfig.max_requests`` and ``max_*_tokens``, stage ``limit``):
the core checks the run's usage as each answer arrives, so a run stops, with its
partial, before it spends more once its budget is gone, in every runtime alike.
``Overrides`` are what ``Agent.override(...)`` and a run method's ``model=``, ``settings=`` and
``usage_limits=`` put in place of the agent's own configuration; ``merge_settings`` (one
rule, in ``models._settings``, re-exported here) lays a run's settings over the agent's.
"""

from __future__ import annotations

from typing import Any

import attrs
from attrs import frozen

from golem_core import ModelSettings
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

    A token limit is checked as each answer arrives, against the run's usage so far:
    once the run has reached it, no further request is sent and the run fails with
    ``RunError`` at stage ``limit``, whose ``partial`` holds everything it completed (the
    answer that reached the limit included, a final answer too).
    """

    request_limit: int | None = attrs.field(default=None, kw_only=True)
    input_tokens_limit: int | None = attrs.field(default=None, kw_only=True)
    output_tokens_limit: int | None = attrs.field(default=None, kw_only=True)
    total_tokens_limit: int | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(UsageLimits):
            value = getattr(self, field.name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise UsageError(f"UsageLimits.{field.name} must be a positive int or None")


KEEP: Any = type("Keep", (), {"__repr__": lambda self: "KEEP"})()
"""The ``deps`` of ``Overrides`` that replaces nothing (``None`` is a value deps may have)."""


@frozen
class Overrides:
    """What replaces an agent's own model, settings and limits (``None``: keep it), and
    the run's ``deps`` (``KEEP``: keep them)."""

    model: Model | None = None
    settings: ModelSettings | None = None
    usage_limits: UsageLimits | None = None
    deps: Any = KEEP

    def over(self, inner: Overrides) -> Overrides:
        """These overrides, falling back to ``inner`` where they set nothing."""
        return Overrides(
            self.model if self.model is not None else inner.model,
            self.settings if self.settings is not None else inner.settings,
            self.usage_limits if self.usage_limits is not None else inner.usage_limits,
            self.deps if self.deps is not KEEP else inner.deps,
        )
