"""Provider-native compaction behind the summarizer's interface (ADR 0148).

Owns ``native_compaction(model, fallback=...)``: an async history processor, passed
wherever ``summarize_history`` is (an agent's ``history_processor``, compact-and-retry's
strategy, ``probe_compaction``), that folds the older turns with the provider's own
compaction where there is one. Which one is the model's profile's (its ``target``'s
``CompactionRule``, ``golem_core.providers``): its ``fold`` says how, its ``marker``
which parts hold a compaction. Today:

- **OpenAI Responses** (``fold="request"``): the older turns
  (``golem_core.plan_compaction``'s plan, the same cut, threshold and step as the
  summarizer) go to ``POST /responses/compact`` (the adapter's ``compact``); they are
  replaced by what it returns: the user messages OpenAI kept (golem's own message where
  the text is the same) and one assistant message holding the encrypted ``compaction``
  item, marked as a summary and carrying its compaction record (ADR 0140), which names
  every message the item was built from (the user messages kept beside it included: an
  erasure of any of them makes the item stale, ADR 0143);
- **Anthropic** (``fold="answer"``): the model compacts on its side
  (``AnthropicModel(context_edits=[compact()])``) and answers with a ``compaction``
  block (the adapter records on its answer what the block was built from); Anthropic
  then ignores what stands before the block, so the processor cuts it (system messages
  kept) and writes the record on the message holding the block. Nothing
  to cut: the history is returned as it is (Anthropic compacts when its trigger is
  reached); when forced (compact-and-retry) the fallback runs;
- **any other model** (Chat Completions, Gemini, offline models): the fallback, golem's
  summarizer by default (``summarize_history(model, ...)`` with the same settings).

The artifacts stay in the history under their origin: ``port_history`` sends them only to
their issuer and reports what it left off or sent as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs
from returns.result import Failure, Result, Success

from golem_core import (
    SUMMARY_KEY,
    CompactionRecord,
    HistoryError,
    HistoryProcessor,
    Message,
    ModelRequest,
    Role,
    SummaryPlan,
    TextPart,
    TokenCounter,
    approximate_tokens,
    compaction_of,
    plan_compaction,
    with_compaction,
)
from golem_core.providers import CompactionRule, Target, recorded_provider
from golem_shell._errors import GolemError
from golem_shell.context._summarize import (
    AsyncHistoryProcessor,
    run_history_processor,
    summarize_history,
)
from golem_shell.models import Model
from golem_shell.models._native_records import built_from as _built_from

__all__ = ["native_compaction"]


@runtime_checkable
class _Compacts(Protocol):
    """An adapter whose provider compacts on a request of its own (``fold="request"``)."""

    async def compact(self, request: ModelRequest) -> tuple[Message, ...]: ...


def _rule_of(model: Model) -> tuple[Target, CompactionRule] | None:
    """The model's target and its provider's compaction rule (``None``: no native
    compaction, or a model with no provider: an offline model)."""
    target = getattr(model, "target", None)
    if not isinstance(target, Target) or target.profile.compaction is None:
        return None
    return target, target.profile.compaction


def _holds_compaction(message: Message, marker: str) -> bool:
    return any(
        type(p) is TextPart and p.text and any(k == marker for k, _ in p.extra)
        for p in message.parts
    )


def _tokens(history: Sequence[Message], counter: TokenCounter) -> int:
    return sum(counter(m) for m in history if m.role is not Role.SYSTEM)


class _NativeCompaction:
    def __init__(
        self,
        model: Model,
        *,
        fallback: HistoryProcessor | AsyncHistoryProcessor,
        keep_last_turns: int,
        max_tokens: int | None,
        step_turns: int,
        counter: TokenCounter,
        instructions: str | None,
        forced: bool = False,
    ) -> None:
        self.model = model
        self.fallback = fallback
        self.keep_last_turns = keep_last_turns
        self.max_tokens = max_tokens
        self.step_turns = step_turns
        self.counter = counter
        self.instructions = instructions
        self.is_forced = forced
        plan_compaction(  # checks the arguments
            (), keep_last_turns=keep_last_turns, max_tokens=max_tokens, step_turns=step_turns
        )

    def __repr__(self) -> str:
        return f"native_compaction({self.model.name!r}, keep_last_turns={self.keep_last_turns})"

    def forced(self) -> _NativeCompaction:
        """This strategy without its threshold or step (compact-and-retry, ADR 0141)."""
        fallback = self.fallback
        forced_fallback = getattr(fallback, "forced", None)
        return _NativeCompaction(
            self.model,
            fallback=forced_fallback() if callable(forced_fallback) else fallback,
            keep_last_turns=self.keep_last_turns,
            max_tokens=None,
            step_turns=0,
            counter=self.counter,
            instructions=self.instructions,
            forced=True,
        )

    async def __call__(
        self, history: Sequence[Message]
    ) -> Result[tuple[Message, ...], HistoryError]:
        history = tuple(history)
        found = _rule_of(self.model)
        if found is not None:
            target, rule = found
            if rule.fold == "request" and isinstance(self.model, _Compacts):
                return await self._requested(self.model, history)
            if rule.fold == "answer":
                cut = self._answered_cut(target, rule, history)
                if cut is not None:
                    return Success(cut)
                if not self.is_forced:
                    return Success(history)
        return await run_history_processor(self.fallback, history)

    async def _requested(
        self, model: _Compacts, history: tuple[Message, ...]
    ) -> Result[tuple[Message, ...], HistoryError]:
        plan = plan_compaction(
            history,
            keep_last_turns=self.keep_last_turns,
            max_tokens=self.max_tokens,
            counter=self.counter,
            step_turns=self.step_turns,
        )
        if not isinstance(plan, SummaryPlan):
            return Success(history)
        request = ModelRequest(messages=plan.to_summarize, instructions=self.instructions)
        try:
            window = await model.compact(request)
        except GolemError as e:
            return Failure(HistoryError(f"{self!r}: the compaction request failed: {e}"))
        originals = {m.text: m for m in plan.to_summarize if m.role is Role.USER}
        kept = tuple(originals.get(m.text, m) if m.role is Role.USER else m for m in window[:-1])
        folded = window[-1]
        marker = attrs.evolve(folded, extra=(*folded.extra, (SUMMARY_KEY, '{"messages":0}')))
        record = CompactionRecord(
            repr(self),
            "summary",
            # the item was built from every message sent, the user messages OpenAI kept
            # beside it included: erasing any of them must make it stale (ADR 0143)
            replaced=_built_from(plan.to_summarize),
            tokens_before=_tokens((*plan.to_summarize, *plan.kept), self.counter),
            tokens_after=_tokens((*kept, marker, *plan.kept), self.counter),
            usage=folded.usage,
        )
        return Success((*plan.head, *kept, with_compaction(marker, record), *plan.kept))

    def _answered_cut(
        self, target: Target, rule: CompactionRule, history: tuple[Message, ...]
    ) -> tuple[Message, ...] | None:
        """The history from the newest compaction this model's provider issued at its
        endpoint (what the provider reads of it anyway: Anthropic ignores what stands
        before the block), system messages kept; ``None`` when there is nothing before
        it to cut."""
        at = max(
            (
                i
                for i, m in enumerate(history)
                if m.role is Role.ASSISTANT
                and recorded_provider(m.provider) is target.provider
                and (m.endpoint or "").lower() == (target.endpoint or "").lower()
                and _holds_compaction(m, rule.marker)
            ),
            default=-1,
        )
        if at <= 0:
            return None
        older = history[:at]
        head = tuple(m for m in older if m.role is Role.SYSTEM)
        replaced = tuple(m for m in older if m.role is not Role.SYSTEM)
        if not replaced:
            return None
        holder = history[at]
        after = history[at:]
        own = compaction_of(holder)  # the adapter's: what the block was built from
        record = CompactionRecord(
            repr(self),
            "summary",
            replaced=tuple(dict.fromkeys((*(own.replaced if own else ()), *_built_from(replaced)))),
            tokens_before=_tokens(history, self.counter),
            tokens_after=_tokens(after, self.counter),
            usage=None,
        )
        return (*head, with_compaction(holder, record), *after[1:])


def native_compaction(
    model: Model,
    *,
    fallback: HistoryProcessor | AsyncHistoryProcessor | None = None,
    keep_last_turns: int = 2,
    max_tokens: int | None = None,
    step_turns: int = 4,
    counter: TokenCounter = approximate_tokens,
    instructions: str | None = None,
) -> AsyncHistoryProcessor:
    """An async processor that folds older turns with the provider's own compaction.

    Args:
        model: The model whose provider compacts (its profile has a
            ``CompactionRule``): an ``OpenAIResponsesModel`` (``/responses/compact``) or
            an ``AnthropicModel`` made with
            ``context_edits=[golem_core.wire.anthropic.compact(...)]``; any other model
            uses ``fallback``.
        fallback: What compacts where the provider has no compaction (and for a forced
            Anthropic fold); default ``summarize_history(model, ...)`` with the same
            ``keep_last_turns``, ``max_tokens``, ``step_turns`` and ``counter``.
        keep_last_turns, max_tokens, step_turns, counter: When and where to cut, as
            ``summarize_history`` (OpenAI and the fallback).
        instructions: Instructions sent with the compaction request (OpenAI).

    Returns:
        The processor, with ``forced()`` for compact-and-retry (ADR 0141). It returns
        the history unchanged when there is nothing to fold, the compacted history (its
        fold carrying a compaction record, ADR 0140), or ``Failure(HistoryError)`` when
        the compaction request fails.

    Raises:
        ValueError: ``keep_last_turns``, ``max_tokens`` or ``step_turns`` out of range.
    """
    chosen = fallback or summarize_history(
        model,
        keep_last_turns=keep_last_turns,
        max_tokens=max_tokens,
        step_turns=step_turns,
        counter=counter,
    )
    return _NativeCompaction(
        model,
        fallback=chosen,
        keep_last_turns=keep_last_turns,
        max_tokens=max_tokens,
        step_turns=step_turns,
        counter=counter,
        instructions=instructions,
    )
