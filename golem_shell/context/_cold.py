"""Compaction timed to the prompt cache (issue 48 item 5).

Owns ``compact_when_cold(strategy, min_tokens=..., ...)``: a history processor that
prefers to fold while the provider's cached prefix is cold. Compacting while the
provider still holds the conversation's prefix throws a warm cache away (the next
request writes a new prefix at the cache-write rate); compacting once it has gone cold
costs nothing extra, since the next request pays the whole prefix anyway. The prefix is
cold when:

- the newest timestamped message (``Message.created_at``: the run stamps each message it
  adds, so the newest is the last answer, the time of the last request) is older than
  the cache's lifetime (``lifetime=``, else the model's provider profile's
  ``cache_lifetime``, else 300 seconds), or
- the newest assistant message was answered by another provider, endpoint or model than
  ``model`` (a cache is per model: a switch starts cold).

Then, once the history's non-system messages count more than ``min_tokens``, the
strategy is run forced (``strategy.forced()``: past its own threshold or step); otherwise
the strategy runs as it is, so its own threshold still bounds the history while the
cache is warm. A history with no timestamp is never taken as cold (the strategy runs
untimed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime

from returns.result import Result

from golem_core import HistoryError, HistoryProcessor, Message, Role, TokenCounter
from golem_core import approximate_tokens as _approximate_tokens
from golem_core.providers import Target, asked_model_of, recorded_provider, same_model
from golem_shell._errors import UsageError
from golem_shell.context._summarize import AsyncHistoryProcessor, run_history_processor
from golem_shell.models import Model

__all__ = ["compact_when_cold", "prefix_is_cold"]


def _target_of(model: Model | None) -> Target | None:
    target = getattr(model, "target", None)
    return target if isinstance(target, Target) else None


def prefix_is_cold(
    history: Sequence[Message], *, now: float, lifetime: float, target: Target | None = None
) -> bool:
    """Whether the provider's cached prefix of ``history`` has gone cold at ``now`` (Unix
    seconds): its newest timestamp is more than ``lifetime`` seconds old, or its newest
    assistant message came from another provider, endpoint or model than ``target``.
    A history with no timestamp and no such switch is warm. Total."""
    if target is not None:
        answer = next((m for m in reversed(history) if m.role is Role.ASSISTANT), None)
        if (
            answer is not None
            and answer.provider is not None
            and (
                recorded_provider(answer.provider) is not target.provider
                or (answer.endpoint or "").lower() != (target.endpoint or "").lower()
                or not same_model(asked_model_of(answer) or answer.model, target.model)
            )
        ):
            return True
    stamped = [m.created_at for m in history if m.created_at is not None]
    if not stamped:
        return False
    newest: datetime = max(stamped)
    return now - newest.timestamp() > lifetime


class _WhenCold:
    def __init__(
        self,
        strategy: HistoryProcessor | AsyncHistoryProcessor,
        *,
        min_tokens: int,
        lifetime: float,
        target: Target | None,
        counter: TokenCounter,
        clock: Callable[[], float],
    ) -> None:
        forced = getattr(strategy, "forced", None)
        if not callable(forced):
            raise UsageError(
                f"compact_when_cold needs a strategy with forced() (summarize_history,"
                f" native_compaction, budget strategies of golem), got {strategy!r}"
            )
        if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < 0:
            raise UsageError(f"min_tokens must be an int of at least 0, got {min_tokens!r}")
        if not lifetime > 0:
            raise UsageError(f"lifetime must be positive seconds, got {lifetime!r}")
        self.strategy = strategy
        self.min_tokens = min_tokens
        self.lifetime = lifetime
        self.target = target
        self.counter = counter
        self.clock = clock

    def __repr__(self) -> str:
        return f"compact_when_cold({self.strategy!r}, min_tokens={self.min_tokens})"

    def forced(self) -> HistoryProcessor | AsyncHistoryProcessor:
        """The strategy forced (compact-and-retry, ADR 0141)."""
        forced: HistoryProcessor | AsyncHistoryProcessor = self.strategy.forced()  # type: ignore[union-attr]
        return forced

    async def __call__(
        self, history: Sequence[Message]
    ) -> Result[tuple[Message, ...], HistoryError]:
        tokens = sum(self.counter(m) for m in history if m.role is not Role.SYSTEM)
        if tokens > self.min_tokens and prefix_is_cold(
            history, now=self.clock(), lifetime=self.lifetime, target=self.target
        ):
            return await run_history_processor(self.forced(), history)
        return await run_history_processor(self.strategy, history)


def compact_when_cold(
    strategy: HistoryProcessor | AsyncHistoryProcessor,
    *,
    min_tokens: int,
    model: Model | None = None,
    lifetime: float | None = None,
    counter: TokenCounter = _approximate_tokens,
    clock: Callable[[], float] = time.time,
) -> AsyncHistoryProcessor:
    """``strategy``, folding early while the provider's cached prefix is cold.

    Args:
        strategy: A compacting processor with ``forced()`` (``summarize_history(...,
            max_tokens=...)``, ``native_compaction(...)``): its own threshold still
            binds while the cache is warm.
        min_tokens: Fold early only above this many tokens (non-system messages, by
            ``counter``): below it nothing is worth folding.
        model: The conversation's model: its provider profile's ``cache_lifetime`` is
            the default ``lifetime``, and an answer from another model, provider or
            endpoint makes the prefix cold.
        lifetime: Seconds a cached prefix lives after the last request (``1h``
            Anthropic cache: 3600; OpenAI ``prompt_cache_retention="24h"``: 86400).
        counter: Tokens per message, for ``min_tokens``.
        clock: Unix seconds now (``time.time``).

    Returns:
        The processor (async, with ``forced()`` for compact-and-retry).

    Raises:
        UsageError: a strategy without ``forced()``, or an argument out of range.
    """
    target = _target_of(model)
    seconds = (
        lifetime
        if lifetime is not None
        else (target.profile.cache_lifetime if target is not None else 300.0)
    )
    return _WhenCold(
        strategy,
        min_tokens=min_tokens,
        lifetime=seconds,
        target=target,
        counter=counter,
        clock=clock,
    )
