"""Summarizing old turns with a model, and running processors that need an effect.

Owns ``summarize_history`` (the effectful half of summarization: ``golem_core``'s pure
``plan_summary`` chooses the cut and what to summarize; this asks a model for the text
and puts it in place as one message marked as a summary), the ``AsyncHistoryProcessor``
shape such processors have, and ``run_history_processor``, which runs any processor,
sync or async, once on exactly the history given and never raises.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeAlias

import attrs
from returns.result import Failure, Result, Success

from golem_core import (
    COMPACTED,
    DECLINED_NOTHING_TO_FOLD,
    DECLINED_PENDING_CALL,
    CompactionProbe,
    CompactionRecord,
    HistoryError,
    HistoryProcessor,
    Message,
    ModelRequest,
    ModelSettings,
    SummaryPlan,
    TokenCounter,
    approximate_tokens,
    conversation_id_of,
    failed_outcome,
    message_ref,
    new_compactions,
    plan_compaction,
    plan_summary,
    probe_history,
    repair_history,
    summary_message,
)
from golem_core.loop import CompactHistory, CompactionDeclined, HistoryCompacted
from golem_shell._errors import GolemError, UsageError
from golem_shell.models import Model, infer_model

__all__ = [
    "AsyncHistoryProcessor",
    "ModelProbe",
    "compact_history",
    "probe_compaction",
    "DEFAULT_SUMMARY_INSTRUCTIONS",
    "DEFAULT_SUMMARY_PREFIX",
    "SUMMARY_SETTINGS",
    "run_history_processor",
    "summarize_history",
]

AsyncHistoryProcessor: TypeAlias = Callable[
    [Sequence[Message]], Awaitable[Result[tuple[Message, ...], HistoryError]]
]
"""A history processor that needs an effect (a model, a token-counting endpoint)."""

DEFAULT_SUMMARY_INSTRUCTIONS: Final = (
    "You compress conversations. Write a summary of the conversation so far that lets an "
    "assistant continue it without the original messages: the user's goals and "
    "constraints, decisions made, facts learned (tool results included), open questions "
    "and commitments. Be specific (names, numbers, paths). Write only the summary."
)
"""The instructions of the summarizing request."""

DEFAULT_SUMMARY_PREFIX: Final = (
    "[Older turns of this conversation were summarized to save context. Summary:]\n\n"
)
"""What the summary message says before the model's text: the note that tells the model
older turns were folded (ADR 0140). ``summarize_history(recall_hint=...)`` adds how to get
them back."""

_ASK: Final = "Summarize the conversation above, as instructed."


async def run_history_processor(
    processor: HistoryProcessor | AsyncHistoryProcessor, history: Sequence[Message]
) -> Result[tuple[Message, ...], HistoryError]:
    """Run ``processor`` once on exactly ``history``, awaiting it when it is async.

    Args:
        processor: A ``HistoryProcessor`` or an ``AsyncHistoryProcessor``.
        history: The history as the caller supplied it.

    Returns:
        What the processor returned; an exception it raised, or a value that is not a
        ``Result``, becomes ``Failure(HistoryError)`` naming the processor.
    """
    try:
        outcome: object = processor(history)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except Exception as e:
        return Failure(HistoryError(f"{_name(processor)} raised {type(e).__name__}: {e}"))
    if isinstance(outcome, Success | Failure):
        return outcome
    return Failure(
        HistoryError(
            f"{_name(processor)} returned {type(outcome).__name__}; a history processor "
            "returns Success(history) or Failure(HistoryError)"
        )
    )


async def compact_history(
    strategy: HistoryProcessor | AsyncHistoryProcessor, command: CompactHistory
) -> HistoryCompacted | CompactionDeclined:
    """Compact once for compact-and-retry (ADR 0141): what a runtime's ``compact`` does.

    Runs ``strategy`` once on the part of ``command.history`` it may fold (the turn of a
    pending call is set aside and put back unchanged); a strategy with a ``forced()``
    method (``summarize_history``) runs without its threshold or step, so it folds what
    stands before the turns it keeps.

    Returns:
        ``HistoryCompacted`` with the strategy's compaction record (or, for a strategy
        that writes none, a ``"cut"`` record naming the messages it removed), or
        ``CompactionDeclined``: ``declined: a pending call`` when only the pending turn
        stands, ``declined: nothing to fold`` when the strategy changed nothing,
        ``failed: <reason>`` when it failed. Never raises.
    """
    history = command.history
    fold, tail = history[: command.keep], history[command.keep :]
    forced = getattr(strategy, "forced", None)
    runner = forced() if callable(forced) else strategy
    if not fold:
        return CompactionDeclined(DECLINED_PENDING_CALL if tail else DECLINED_NOTHING_TO_FOLD)
    match await run_history_processor(runner, fold):
        case Success(folded):
            pass
        case Failure(error):
            return CompactionDeclined(failed_outcome(str(error)))
    if tuple(folded) == tuple(fold):
        return CompactionDeclined(DECLINED_PENDING_CALL if tail else DECLINED_NOTHING_TO_FOLD)
    records = new_compactions(fold, folded)
    if records:
        record = records[-1]
    else:
        kept = set(map(message_ref, folded))
        record = CompactionRecord(
            _name(runner),
            "cut",
            replaced=tuple(r for r in map(message_ref, fold) if r not in kept),
            tokens_before=sum(approximate_tokens(m) for m in fold),
            tokens_after=sum(approximate_tokens(m) for m in folded),
        )
    return HistoryCompacted((*folded, *tail), record)


@attrs.frozen
class ModelProbe:
    """``probe_compaction``'s report: the fact probe of the compacted history and, per
    question, whether the model's answer from the compacted history holds the expected
    text (``answers``: question, expected, the model's answer, answered)."""

    probe: CompactionProbe
    answers: tuple[tuple[str, str, str, bool], ...] = ()

    @property
    def unanswered(self) -> tuple[str, ...]:
        """The questions whose expected answer the model no longer gave."""
        return tuple(q for q, _, _, ok in self.answers if not ok)


async def probe_compaction(
    history: Sequence[Message],
    strategy: HistoryProcessor | AsyncHistoryProcessor,
    facts: Sequence[str] = (),
    *,
    questions: Sequence[tuple[str, str]] = (),
    model: Model | None = None,
) -> ModelProbe:
    """Run ``strategy`` (sync or async: ``summarize_history``) once on ``history``; report
    which ``facts`` survive (``golem_core.testing.compaction_probe``'s rule) and, with
    ``model``, which ``questions`` it can still answer from the compacted history: each
    ``(question, expected)`` is asked once after the compacted history, and counts as
    answered when the answer holds ``expected`` (case and spacing ignored). In CI, pass
    a test model (``FunctionModel``) that answers from what the request holds (ADR 0142).

    Raises:
        UsageError: ``questions`` without a ``model``.
    """
    if questions and model is None:
        raise UsageError("probe_compaction(questions=...) needs a model to ask them")
    before = tuple(history)
    match await run_history_processor(strategy, before):
        case Success(after):
            outcome = COMPACTED if tuple(after) != before else DECLINED_NOTHING_TO_FOLD
            probe = probe_history(before, after, facts, outcome=outcome)
        case Failure(error):
            probe = probe_history(before, before, facts, outcome=failed_outcome(str(error)))
    answers: list[tuple[str, str, str, bool]] = []
    for question, expected in questions:
        assert model is not None
        reply = await model.request(
            ModelRequest(messages=(*probe.compacted, Message.user(question)))
        )
        text = reply.text
        ok = " ".join(expected.casefold().split()) in " ".join(text.casefold().split())
        answers.append((question, expected, text, ok))
    return ModelProbe(probe, tuple(answers))


def _name(processor: object) -> str:
    return str(getattr(processor, "__qualname__", None) or repr(processor))


class _SummarizeHistory:
    def __init__(
        self,
        model: Model,
        *,
        keep_last_turns: int,
        max_tokens: int | None,
        counter: TokenCounter,
        instructions: str,
        prefix: str,
        settings: ModelSettings,
        step_turns: int = 0,
        recall_hint: str | None = None,
    ) -> None:
        self.model = model
        self.keep_last_turns = keep_last_turns
        self.step_turns = step_turns
        self.max_tokens = max_tokens
        self.counter = counter
        self.instructions = instructions
        self.prefix = prefix
        self.settings = settings
        self.recall_hint = recall_hint
        plan_summary(  # checks the arguments
            (), keep_last_turns=keep_last_turns, max_tokens=max_tokens, step_turns=step_turns
        )

    def __repr__(self) -> str:
        bound = (
            f", step_turns={self.step_turns}"
            if self.max_tokens is None
            else f", max_tokens={self.max_tokens}"
        )
        return (
            f"summarize_history({self.model.name!r}, keep_last_turns={self.keep_last_turns}{bound})"
        )

    async def __call__(
        self, history: Sequence[Message]
    ) -> Result[tuple[Message, ...], HistoryError]:
        plan = plan_compaction(
            history,
            keep_last_turns=self.keep_last_turns,
            max_tokens=self.max_tokens,
            counter=self.counter,
            step_turns=self.step_turns,
        )
        if not isinstance(plan, SummaryPlan):
            return Success(history if type(history) is tuple else tuple(history))
        return await self.fold(plan)

    def forced(self) -> _SummarizeHistory:
        """This summarizer without its threshold or step: it folds whatever stands before
        the kept turns (what compact-and-retry runs when a provider refuses a request as
        too long, ADR 0141)."""
        return _SummarizeHistory(
            self.model,
            keep_last_turns=self.keep_last_turns,
            max_tokens=None,
            counter=self.counter,
            instructions=self.instructions,
            prefix=self.prefix,
            settings=self.settings,
            step_turns=0,
            recall_hint=self.recall_hint,
        )

    async def fold(self, plan: SummaryPlan) -> Result[tuple[Message, ...], HistoryError]:
        """Ask the model for the summary of ``plan`` and put it in place, with its
        compaction record."""
        request = ModelRequest(
            messages=(*repair_history(plan.to_summarize), Message.user(_ASK)),
            instructions=self.instructions,
            settings=_summary_settings(self.settings, plan.to_summarize),
        )
        try:
            answer = await self.model.request(request)
        except GolemError as e:
            return Failure(HistoryError(f"{self!r}: the summarizing request failed: {e}"))
        text = answer.text.strip()
        if not text:
            return Failure(
                HistoryError(
                    f"{self!r}: the model answered without text "
                    f"(finish reason {answer.finish_reason!r}); nothing to summarize with"
                )
            )
        note = self.prefix if self.recall_hint is None else f"{self.prefix}{self.recall_hint}\n\n"
        summary = summary_message(note + text, summarized=len(plan.to_summarize))
        record: CompactionRecord = plan.record(
            summary, processor=repr(self), counter=self.counter, usage=answer.usage
        )
        summary = summary_message(note + text, summarized=len(plan.to_summarize), record=record)
        return Success(plan.apply(summary))


SUMMARY_SETTINGS: Final = ModelSettings(cache=None)
"""The settings of a summarizing request unless told otherwise: no prompt cache. Its
prefix (other instructions, the older turns, a question) is not the conversation's, so
a cache marker would pay for a write no request reads back (issue 48)."""


def _summary_settings(settings: ModelSettings, messages: Sequence[Message]) -> ModelSettings:
    """``settings`` of a summarizing request: asked to cache without a key of its own, it
    is keyed by the conversation's id followed by ``/summary``, never the conversation's
    key (which would route the summarizer onto the conversation's cache); the explicit
    key also wins over one the model's own settings name."""
    cache = settings.cache
    if cache is None or cache.key is not None:
        return settings
    own = conversation_id_of(messages)
    if own is None:
        return settings
    return attrs.evolve(settings, cache=attrs.evolve(cache, key=f"{own}/summary"))


def summarize_history(
    model: Model | str,
    *,
    keep_last_turns: int = 2,
    max_tokens: int | None = None,
    step_turns: int = 4,
    counter: TokenCounter = approximate_tokens,
    instructions: str = DEFAULT_SUMMARY_INSTRUCTIONS,
    prefix: str = DEFAULT_SUMMARY_PREFIX,
    settings: ModelSettings | None = None,
    recall_hint: str | None = None,
) -> AsyncHistoryProcessor:
    """An async processor that replaces the older turns of a history with a summary.

    ``golem_core.plan_summary`` chooses the cut (the start of a turn, never inside a
    tool exchange, keeping the newest ``keep_last_turns`` turns whole); when there is
    something to summarize, ``model`` is asked once, with no tools (calls and results
    travel as text, ADR 0031), to summarize those messages, and the answer becomes one
    user message marked as a summary (``golem_core.is_summary``; the JSON field
    ``"summary": {"messages": n}``), carrying its compaction record (the JSON field
    ``"compaction"``, ``golem_core.compaction_of``: the replaced messages by reference,
    tokens before and after by ``counter``, the summarizing request's usage; ADR 0140).
    The message opens with a note saying older turns were summarized. A pending call
    (waiting for approval or a deferred result) is never folded. System messages
    before the cut stay in front.
    The history a processor receives is never changed in place: the output is a new
    history; the caller's stays what it was.

    Args:
        model: The summarizing model (a cheap one does), or a model string.
        keep_last_turns: How many of the newest turns are kept whole.
        max_tokens: Summarize only when the non-system messages count more than this
            by ``counter`` (then down to the summary and the kept turns).
        step_turns: Without ``max_tokens``: summarize only once more than
            ``keep_last_turns + step_turns`` turns follow the last summary, so a summary,
            once placed, stays byte-identical (and cached) for ``step_turns`` runs
            (ADR 0078); 0 summarizes every run that has more than the kept turns.
        counter: Tokens per message, for ``max_tokens``.
        instructions: The instructions of the summarizing request.
        prefix: Text the summary message starts with, before the model's text.
        settings: Sampling settings of the summarizing request; by default
            ``SUMMARY_SETTINGS``: no prompt cache (no Anthropic ``cache_control``, no
            OpenAI ``prompt_cache_key``), since its prefix is not the conversation's.
            A ``cache=PromptCache(...)`` asks for one; without a ``key`` of its own the
            request is keyed ``<conversation>/summary``, never the conversation's key.
        recall_hint: One line the note adds, telling the model how to get the
            summarized turns back (a recall tool's name and use), when there is a way.

    Returns:
        The processor. It returns the history unchanged when there is nothing to
        summarize (an already summarized history included), the summarized history, or
        ``Failure(HistoryError)`` when the model request fails or answers without text.
        Run it with ``run_history_processor`` (or as an agent's ``history_processor``).

    Raises:
        ValueError: ``keep_last_turns`` or ``max_tokens`` is out of range.
    """
    return _SummarizeHistory(
        infer_model(model) if isinstance(model, str) else model,
        keep_last_turns=keep_last_turns,
        max_tokens=max_tokens,
        counter=counter,
        instructions=instructions,
        prefix=prefix,
        settings=SUMMARY_SETTINGS if settings is None else settings,
        step_turns=step_turns,
        recall_hint=recall_hint,
    )
