"""Compaction timed to the prompt cache, measured (issue 48 item 5).

``bench.compaction``'s conversation played as a chat with pauses: before each turn the
user pauses for seconds to hours (``pauses``: seeded; most replies within a minute, some
after a coffee, a meeting, a night), the two requests of a turn follow each other within
seconds. The provider's cache lives ``LIFETIME`` seconds after a request (Anthropic's
5-minute cache); a turn that starts later finds it cold (``cold_flags``) and pays its whole
prefix at the cache-write rate (``bench.cache.measure(..., cold=...)``), whatever the
strategy. Every strategy's requests are the same as in the untimed run but golem's timed
one, ``compact_when_cold(summarize_history(...), min_tokens=budget // 2)``, played by
``timed_trace`` with each message stamped with the time it was made (as a run stamps it)
and the processor's clock at the turn's start. ``bench.compaction`` measures and renders
it beside golem's untimed strategies and the peers; ``timed_trace(..., prepared=...)``
plays the timed strategy under ``prepare_ahead`` too (prepared as a turn ends, and again
by a timer once the cache has gone cold), counting the turns that waited for a fold.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import attrs

from bench import cache
from bench.compaction_trace import Recorder, Trace
from golem_core import HistoryProcessor, Message
from golem_shell.context._ahead import PreparedCompaction
from golem_shell.context._summarize import AsyncHistoryProcessor, run_history_processor

__all__ = ["LIFETIME", "T0", "Clock", "cold_flags", "pauses", "timed_trace"]

LIFETIME = 300.0
"""Seconds the provider keeps a cached prefix after a request (Anthropic's default)."""
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
IN_TURN = 4.0
"""Seconds between the two requests of a turn (the tools run)."""


def pauses(turns: int, seed: int = 48) -> list[float]:
    """The user's pause before each turn, in seconds: 55% within a minute, 25% within ten
    minutes, 12% within the hour, 8% up to six hours. Seeded, deterministic."""
    rng = random.Random(seed)
    out: list[float] = []
    for _ in range(turns):
        draw = rng.random()
        if draw < 0.55:
            out.append(rng.uniform(5, 60))
        elif draw < 0.80:
            out.append(rng.uniform(60, 600))
        elif draw < 0.92:
            out.append(rng.uniform(600, 3600))
        else:
            out.append(rng.uniform(3600, 6 * 3600))
    return out


def cold_flags(gaps: Sequence[float], lifetime: float = LIFETIME) -> list[bool]:
    """Per request (two a turn): whether the provider's cache had expired before it (the
    first request of a turn after a pause longer than ``lifetime``; the first turn)."""
    flags: list[bool] = []
    for t, gap in enumerate(gaps):
        flags += [t == 0 or gap + IN_TURN > lifetime, False]
    return flags


class Clock:
    """The processor's clock: the time the bench has reached."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now.timestamp()


async def timed_trace(
    name: str,
    conversation: Sequence[cache.Turn],
    processor: HistoryProcessor | AsyncHistoryProcessor,
    gaps: Sequence[float],
    clock: Clock,
    recorder: Recorder | None = None,
    prepared: PreparedCompaction | None = None,
) -> Trace:
    """As ``bench.compaction.golem_trace``, in time: the processor runs at each turn's
    start (``clock``), and each message is stamped with the time it was made. With
    ``prepared`` (``prepare_ahead(processor)``), the next fold is prepared when a turn
    ends and prepared again when the cache goes cold before the next turn (a timer at
    ``LIFETIME``): what an application does so the timed fold also leaves the turn."""
    trace = Trace(name)
    waited = 0
    kept: tuple[Message, ...] = ()
    now = T0
    calls = recorder.calls if recorder is not None else []
    for t, (turn, gap) in enumerate(zip(conversation, gaps, strict=True), 1):
        if prepared is not None and kept:  # after the last turn, while the user reads
            clock.now = now
            await prepared.prepare(kept)
            if gap > LIFETIME + 1:  # and again when the cache has gone cold (a timer)
                clock.now = now + timedelta(seconds=LIFETIME + 1)
                await prepared.prepare(kept)
        now += timedelta(seconds=gap)
        clock.now = now
        if recorder is not None:
            recorder.turn = t
        before = len(calls)
        result = await run_history_processor(prepared or processor, kept)
        waited += len(calls) > before
        sent = list(result.unwrap())
        groups = cache.turn_messages(turn)
        for k, group in enumerate(groups):
            at = now + timedelta(seconds=IN_TURN * k)
            sent.extend(attrs.evolve(m, created_at=at) for m in group)
            if k < len(groups) - 1:
                trace.requests.append(tuple(sent))
        now += timedelta(seconds=IN_TURN * (len(groups) - 1))
        kept = tuple(sent)
    if recorder is not None:
        trace.calls = list(recorder.calls)
        trace.cache_written = list(recorder.cache_written)
    trace.waited = waited
    return trace
