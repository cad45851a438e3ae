"""Issue 28, item 8: ``check_processor`` reports a nondeterministic processor (one that
reads ``random``, or a counter standing for the clock) as breaking ``deterministic``; it
never raises Hypothesis's ``FlakyFailure`` at its caller."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence

import pytest
from returns.result import Result, Success

from golem_core import HistoryError, Message, trim_history
from golem_core.testing import check_processor

Processor = Callable[[Sequence[Message]], Result[tuple[Message, ...], HistoryError]]


def drops_at_random(history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
    """Keeps the newest message only, on a coin toss (``random``)."""
    h = tuple(history)
    if len(h) > 2 and random.random() < 0.5:
        return trim_history(1)(h)
    return Success(h)


def every_other_call() -> Processor:
    """Trims on every other call: a stand-in for a processor reading the clock."""
    calls = itertools.count()

    def processor(history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        h = tuple(history)
        return trim_history(1)(h) if next(calls) % 2 else Success(h)

    return processor


def raises_now_and_then() -> Processor:
    calls = itertools.count()

    def processor(history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        if next(calls) % 5 == 0:
            raise ValueError("boom")
        return Success(tuple(history))

    return processor


def test_a_processor_reading_random_breaks_deterministic() -> None:
    report = check_processor(drops_at_random, max_examples=60)
    assert "deterministic" in report.violated, str(report)
    (violation,) = [v for v in report.violations if v.law == "deterministic"]
    assert "differ" in violation.explanation or "flaky" in violation.explanation


@pytest.mark.parametrize("make", [every_other_call, raises_now_and_then])
def test_a_nondeterministic_processor_is_reported_never_raised(
    make: Callable[[], Processor],
) -> None:
    for _ in range(3):  # the FlakyFailure came in 4 of 7 runs
        report = check_processor(make(), max_examples=40)
        assert not report.ok
        assert set(report.violated) & {"deterministic", "total"}, str(report)
        assert str(report)  # every counterexample prints


def test_a_deterministic_processor_still_passes() -> None:
    report = check_processor(trim_history(3), idempotent=True, max_examples=40)
    assert report.ok, str(report)
