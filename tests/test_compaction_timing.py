"""Compaction timed to the prompt cache (issue 48 item 5): ``compact_when_cold``.

While the provider still holds the conversation's prefix (the last request is younger
than the cache's lifetime, same model) the strategy runs as it is (its own threshold);
once the prefix is cold (the lifetime passed, or the model changed) it folds early, above
``min_tokens``. Driven by an ``Agent`` whose runs stamp every message they add.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from golem_core import Message, ModelRequest, Target, is_summary
from golem_shell import (
    Agent,
    AnthropicModel,
    FunctionModel,
    ScriptedModel,
    UsageError,
    compact_when_cold,
    summarize_history,
)
from golem_shell.context._cold import prefix_is_cold

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at.timestamp()


def summarizer(calls: list[int]) -> FunctionModel:
    def answer(request: ModelRequest) -> str:
        calls.append(len(request.messages))
        return "The user asked about the Lisbon launch."

    return FunctionModel(answer)


def history(at: datetime, turns: int = 8) -> tuple[Message, ...]:
    out: list[Message] = []
    for i in range(turns):
        out += [
            attrs.evolve(Message.user(f"question {i} about the launch"), created_at=at),
            attrs.evolve(Message.assistant(f"answer {i}: noted"), created_at=at),
        ]
    return tuple(out)


def timed(calls: list[int], clock: Clock, **kw: object) -> object:
    strategy = summarize_history(summarizer(calls), keep_last_turns=1, max_tokens=10**6)
    return compact_when_cold(strategy, min_tokens=20, clock=clock, **kw)  # type: ignore[arg-type]


def run(processor: object, messages: tuple[Message, ...]) -> tuple[Message, ...]:
    result = asyncio.run(processor(messages))  # type: ignore[operator]
    out: tuple[Message, ...] = result.unwrap()
    return out


def test_warm_the_strategy_keeps_its_threshold_cold_it_folds_early() -> None:
    calls: list[int] = []
    clock = Clock(T0 + timedelta(seconds=60))  # the cache (5 minutes) still holds it
    messages = history(T0)
    assert run(timed(calls, clock), messages) == messages and calls == []

    clock.at = T0 + timedelta(minutes=6)  # gone cold
    folded = run(timed(calls, clock), messages)
    assert is_summary(folded[0]) and len(folded) == 3 and len(calls) == 1

    assert run(timed(calls, clock, lifetime=3600.0), messages) == messages  # a 1h cache
    small = history(T0, turns=1)
    assert run(timed(calls, clock), small) == small  # under min_tokens: nothing to win


def test_a_model_switch_makes_the_prefix_cold() -> None:
    claude = AnthropicModel("claude-opus-4-6", api_key="k")
    recent = history(T0)
    now = (T0 + timedelta(seconds=30)).timestamp()
    answered = attrs.evolve(
        recent[-1], provider="openai", model="gpt-4o", endpoint="api.openai.com"
    )
    assert not prefix_is_cold(recent, now=now, lifetime=300, target=claude.target)
    assert prefix_is_cold((*recent[:-1], answered), now=now, lifetime=300, target=claude.target)
    same = attrs.evolve(
        recent[-1], provider="anthropic", model="claude-opus-4-6", endpoint="api.anthropic.com"
    )
    assert not prefix_is_cold((*recent[:-1], same), now=now, lifetime=300, target=claude.target)
    other = Target("anthropic", "claude-sonnet-4-5", "api.anthropic.com")
    assert prefix_is_cold((*recent[:-1], same), now=now, lifetime=300, target=other)
    unstamped = tuple(attrs.evolve(m, created_at=None) for m in recent)
    assert not prefix_is_cold(unstamped, now=now + 10**6, lifetime=300)  # no timestamp: warm

    calls: list[int] = []
    processor = compact_when_cold(
        summarize_history(summarizer(calls), keep_last_turns=1, max_tokens=10**6),
        min_tokens=20,
        model=claude,  # its profile's cache lifetime: 300 seconds
        clock=lambda: now,
    )
    folded = run(processor, (*recent[:-1], answered))
    assert is_summary(folded[0]) and len(calls) == 1


def test_in_a_run_the_pause_between_turns_decides() -> None:
    """The runs stamp what they add; the next run folds only after a pause longer than
    the cache lifetime."""
    calls: list[int] = []
    clock = Clock(T0)
    agent = Agent(
        ScriptedModel(["noted"] * 4),
        history_processor=timed(calls, clock),  # type: ignore[arg-type]
    )
    messages = history(T0, turns=6)
    first = agent.run_with_history_sync(messages, "one more question")
    assert calls == [] and first.messages[-1].created_at is not None
    stamped = first.messages[-1].created_at
    clock.at = stamped + timedelta(minutes=2)
    second = agent.run_with_history_sync(first.messages, "and another")
    assert calls == [] and not is_summary(second.messages[0])
    clock.at = second.messages[-1].created_at + timedelta(hours=2)
    third = agent.run_with_history_sync(second.messages, "after lunch")
    assert len(calls) == 1 and is_summary(third.messages[0])


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(UsageError, match="forced"):
        compact_when_cold(lambda h: h, min_tokens=1)  # type: ignore[arg-type,return-value]
    strategy = summarize_history(summarizer([]), max_tokens=1000)
    with pytest.raises(UsageError, match="min_tokens"):
        compact_when_cold(strategy, min_tokens=-1)
    with pytest.raises(UsageError, match="lifetime"):
        compact_when_cold(strategy, min_tokens=1, lifetime=0)
    assert is_summary(run(compact_when_cold(strategy, min_tokens=1).forced(), history(T0))[0])


# -- measured: bench/compaction.py's chat with pauses -------------------------------------


def test_the_bench_measures_the_chat_with_pauses() -> None:
    from bench import cache, compaction
    from bench import compaction_timed as timed

    turns, budget = 40, 3_000
    outcomes, missing, in_time = compaction.run(turns, budget, peers=False, in_time=True)
    assert [o.name for o in in_time] == [
        compaction.BASELINE,
        compaction.STEP_CUT,
        compaction.SLIDING_CUT,
        compaction.SUMMARIZER,
        compaction.PREPARED,
        compaction.TIMED,
        compaction.PREPARED_TIMED,
        next(o.name for o in outcomes if "native_compaction" in o.name),
    ]
    by_name = {o.name: o for o in in_time}
    untimed, timed_one = by_name[compaction.SUMMARIZER], by_name[compaction.TIMED]
    assert all(o.invalid_requests == 0 and o.requests == 2 * turns for o in in_time)
    # the cache expiring between turns serves less than the untimed measure says
    plain = next(o for o in outcomes if o.name == compaction.SUMMARIZER)
    assert untimed.served_share < plain.served_share and untimed.dollars > plain.dollars
    # the timed strategy folds where the prefix went cold: more folds, never a warm one
    assert timed_one.side_calls >= untimed.side_calls
    # prepared ahead (as a turn ends, again when the cache goes cold): the same requests,
    # and no turn waits for a fold (issue 48 item 6)
    prepared = by_name[compaction.PREPARED_TIMED]
    assert prepared.waited == 0 < timed_one.waited
    assert (prepared.tokens_sent, prepared.served_share) == (
        timed_one.tokens_sent,
        timed_one.served_share,
    )

    gaps = timed.pauses(turns, compaction.SEED)
    flags = timed.cold_flags(gaps)
    assert len(flags) == 2 * turns and flags[0] and not any(flags[1::2])
    assert flags[0::2][1:] == [g + timed.IN_TURN > timed.LIFETIME for g in gaps[1:]]

    data = compaction.record(
        outcomes, missing, command="c", turns=turns, budget=budget, in_time=in_time
    )
    text = compaction.render(data)
    assert "Side by side, in time:" in text and compaction.TIMED in text
    assert "Side by side, in time:" not in compaction.render(
        compaction.record(outcomes, missing, command="c", turns=turns, budget=budget)
    )  # a record without it (bench/results.json today) renders as before

    requests = [cache.Request((1, 2), (10, 20), True), cache.Request((1, 2, 3), (10, 20, 5), True)]
    assert cache.measure("w", requests).served_share == 30 / 65
    assert cache.measure("c", requests, [False, True]).served_share == 0.0
