"""golem_core.testing: the law checker catches planted bugs, and golem's processors pass it."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import attrs
import pytest
from attrs import frozen
from hypothesis import Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from returns.result import Failure, Result, Success

from golem_core import (
    HistoryError,
    HistoryProcessor,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    approximate_tokens,
    budget_history,
    check_pairing,
    compose,
    is_safe_url,
    trim_history,
)
from golem_core.contract import MESSAGE, NO_DEFAULT, PART_RECORDS, USAGE, Field, Kind, Record
from golem_core.history._context import (
    clear_tool_results,
    drop_thinking,
    plan_summary,
    summary_message,
)
from golem_core.testing import (
    LAWS,
    LawViolation,
    ProcessorReport,
    _messages_of,
    _records,
    assert_processor,
    check_processor,
    damaged_histories,
    messages,
    opens_request,
    tool_turns,
    untrusted_histories,
    valid_histories,
)

Out = Result[tuple[Message, ...], HistoryError]
EXAMPLES = 80


# -- planted bugs ---------------------------------------------------------------------------


def keep_newest_two(history: Sequence[Message]) -> Out:
    """The classic bug: a naive cut that ignores tool turns."""
    return Success(tuple(history[-2:]))


def drop_tool_messages(history: Sequence[Message]) -> Out:
    return Success(tuple(m for m in history if m.role is not Role.TOOL))


def greet_first(history: Sequence[Message]) -> Out:
    """Invents a message (unmarked) at the start."""
    return Success((Message.user("hello from the processor"), *history))


def crash_on_empty(history: Sequence[Message]) -> Out:
    return Success((history[0], *history[1:]))  # IndexError on ()


def return_a_list(history: Sequence[Message]) -> Out:
    return Success(list(history))  # type: ignore[arg-type]


_calls = itertools.count()


def flaky(history: Sequence[Message]) -> Out:
    """Fails every other call: not deterministic."""
    if next(_calls) % 2 and history:
        return Failure(HistoryError("unlucky"))
    return Success(tuple(history))


def shout(history: Sequence[Message]) -> Out:
    """Each pass adds one more "!" to every user message: not idempotent."""
    return Success(
        tuple(
            attrs.evolve(m, parts=(*m.parts, TextPart("!"))) if m.role is Role.USER else m
            for m in history
        )
    )


def report_for(processor: HistoryProcessor, **options: object) -> ProcessorReport:
    return check_processor(processor, max_examples=EXAMPLES, **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def naive_report() -> ProcessorReport:
    return report_for(keep_newest_two)


def test_a_naive_cut_breaks_opening_and_pairing_with_small_counterexamples(
    naive_report: ProcessorReport,
) -> None:
    report = naive_report
    assert not report.ok
    assert {"opens_request", "keeps_pairing"} <= set(report.violated)
    pairing = next(v for v in report.violations if v.law == "keeps_pairing")
    assert check_pairing(pairing.history) == ()
    assert check_pairing(keep_newest_two(pairing.history).unwrap()) != ()
    assert len(pairing.history) <= 4  # shrunk: user, call, result (and maybe one more)
    opening = next(v for v in report.violations if v.law == "opens_request")
    assert opens_request(opening.history)
    assert not opens_request(keep_newest_two(opening.history).unwrap())


def test_dropping_results_breaks_pairing() -> None:
    report = report_for(drop_tool_messages)
    assert "keeps_pairing" in report.violated
    assert "invents_nothing" not in report.violated


def test_an_invented_message_is_caught() -> None:
    report = report_for(greet_first)
    assert report.violated == ("invents_nothing",)
    (violation,) = report.violations
    assert violation.history == ()  # shrunk to nothing: even () gets a message
    assert "output message 0 stands for no input message" in violation.explanation


def test_a_crash_breaks_totality_only() -> None:
    report = report_for(crash_on_empty)
    assert report.violated == ("total",)
    assert report.violations[0].history == ()
    assert "raised IndexError" in report.violations[0].outcome


def test_a_list_instead_of_a_tuple_breaks_totality() -> None:
    report = report_for(return_a_list)
    assert report.violated == ("total",)
    assert "something other than a tuple of Message" in report.violations[0].explanation


def test_nondeterminism_is_caught() -> None:
    assert "deterministic" in report_for(flaky).violated


def test_idempotence_is_checked_only_when_asked() -> None:
    assert report_for(shout).ok
    report = report_for(shout, idempotent=True)
    assert report.violated == ("idempotent",)


def test_a_budget_that_keeps_less_when_raised_is_not_monotone() -> None:
    report = report_for(trim_history(5), budgeted=lambda n: trim_history(max(1, 41 - n)))
    assert report.violated == ("monotone",)
    (violation,) = report.violations
    assert violation.budgets is not None
    assert violation.budgets[0] < violation.budgets[1]


def test_the_report_shows_every_counterexample_as_messages_and_json(
    naive_report: ProcessorReport,
) -> None:
    report = naive_report
    text = str(report)
    assert text.startswith(f"{report.processor}: checked total, opens_request")
    for violation in report.violations:
        assert f"law {violation.law!r} violated" in text
        assert str(violation) in text
    first = report.violations[0]
    line = next(x for x in str(first).splitlines() if x.strip().startswith("history JSON:"))
    assert len(json.loads(line.split("history JSON: ", 1)[1])) == len(first.history)


def test_assert_processor_raises_with_the_report() -> None:
    with pytest.raises(AssertionError, match="law 'keeps_pairing' violated"):
        assert_processor(drop_tool_messages, max_examples=EXAMPLES)


def test_every_law_is_named_and_described() -> None:
    report = report_for(
        trim_history(3), idempotent=True, budgeted=lambda n: trim_history(n, low_water=n)
    )
    assert set(report.laws) == set(LAWS)
    assert str(report).endswith("every law holds")
    assert LawViolation.__doc__


def test_the_check_is_deterministic(naive_report: ProcessorReport) -> None:
    assert report_for(keep_newest_two) == naive_report


# -- golem's own processors pass ---------------------------------------------------------------


def summarize_locally(history: Sequence[Message]) -> Out:
    """The pure half of summarize_history, with a fixed summarizer."""
    plan = plan_summary(history, keep_last_turns=1)
    if plan is None:
        return Success(tuple(history))
    text = f"{len(plan.to_summarize)} earlier messages"
    return Success(plan.apply(summary_message(text, summarized=len(plan.to_summarize))))


@pytest.mark.parametrize(
    ("processor", "budgeted"),
    [
        # budgets are monotone in the sliding window; a stepped cut is not (ADR 0078)
        (trim_history(4), lambda n: trim_history(n, low_water=n)),
        (
            budget_history(approximate_tokens, 400),
            lambda n: budget_history(approximate_tokens, n, low_water=n),
        ),
        (clear_tool_results(keep_last=1), lambda n: clear_tool_results(keep_last=n)),
        (drop_thinking(keep_last_turns=1), lambda n: drop_thinking(keep_last_turns=n)),
        (summarize_locally, None),
        (
            compose(clear_tool_results(keep_last=2), drop_thinking(), trim_history(8)),
            lambda n: compose(clear_tool_results(keep_last=n), trim_history(n, low_water=n)),
        ),
    ],
    ids=["trim", "budget", "clear", "drop_thinking", "summary", "composed"],
)
def test_golem_processors_keep_every_law(processor: HistoryProcessor, budgeted: object) -> None:
    assert_processor(
        processor,
        idempotent=True,
        budgeted=budgeted,  # type: ignore[arg-type]
        budgets=st.integers(0, 12),
        max_examples=EXAMPLES,
    )


# -- the strategies draw what they promise --------------------------------------------------


def test_untrusted_histories_hold_injected_prompts_and_unsafe_urls() -> None:
    with_system = find(untrusted_histories(), lambda h: any(m.role is Role.SYSTEM for m in h))
    assert any(m.role is Role.SYSTEM for m in with_system)
    unsafe = find(
        untrusted_histories(),
        lambda h: any(
            getattr(p, "url", None) is not None and not is_safe_url(p.url)  # type: ignore[attr-defined]
            for m in h
            for p in m.parts
        ),
    )
    assert unsafe


def test_damaged_histories_are_sometimes_broken() -> None:
    broken = find(damaged_histories(), lambda h: check_pairing(h) != ())
    assert check_pairing(broken) != ()


def test_tool_turns_and_valid_histories_are_provider_valid() -> None:
    turn = find(tool_turns(max_calls=3), lambda t: len(t) == 4)
    assert turn[0].role is Role.ASSISTANT
    assert [m.tool_call_id for m in turn[1:]] == ["t0", "t1", "t2"]
    assert check_pairing(turn) == ()
    longest = find(valid_histories(), lambda h: len(h) >= 8)
    assert check_pairing(longest) == ()


# -- the field table drives the strategies (issue 32, item 8) ----------------------------------

TABLE: list[tuple[Record, Field, object]] = [
    (record, f, default)
    for record in (MESSAGE, USAGE, *PART_RECORDS)
    for f, default in zip(record.fields, record.defaults, strict=True)
]


def _instances(message: Message, cls: type) -> list[object]:
    """``message`` itself, its usage and its parts: those of class ``cls``."""
    found = [message, message.usage, *message.parts]
    return [x for x in found if type(x) is cls]


def _shown(value: object, default: object) -> bool:
    """Whether ``value`` is one a field at its default would not show (a required field:
    anything but an empty or false value)."""
    if default is NO_DEFAULT:
        return bool(value) or isinstance(value, Role)
    return value != default


def test_messages_draw_every_field_of_the_table_away_from_its_default() -> None:
    """A field of the table (a message's, a usage's, a part's) that ``messages()`` never
    sets is a field every property misses: ``provider`` and ``endpoint`` were."""
    shown: set[str] = set()

    def all_shown(message: Message) -> bool:
        for record, f, default in TABLE:
            for x in _instances(message, record.cls):
                if _shown(getattr(x, f.attr), default):
                    shown.add(f"{record.cls.__name__}.{f.attr}")
        return len(shown) == len(TABLE)

    config = settings(max_examples=3000, database=None, deadline=None, phases=[Phase.generate])
    with contextlib.suppress(NoSuchExample):
        find(messages(), all_shown, settings=config)
    every = {f"{r.cls.__name__}.{f.attr}" for r, f, _ in TABLE}
    assert sorted(every - shown) == []


@frozen(repr=False)
class MoodyMessage(Message):
    """A message with a field the codec does not have (yet)."""

    mood: str | None = attrs.field(default=None, kw_only=True)


@frozen
class StickerPart:
    """A part type the codec does not have (yet)."""

    emoji: str
    size: int | None = None
    extra: tuple[tuple[str, str], ...] = attrs.field(default=(), kw_only=True)


MOODY: Final = Record(MoodyMessage, (*MESSAGE.fields, Field("mood", "mood", Kind.OPTIONAL_STR)))
STICKER: Final = Record(
    StickerPart, (Field("emoji", "emoji", Kind.STR), Field("size", "size", Kind.COUNT)), "sticker"
)


def test_a_field_added_to_a_copy_of_the_table_is_drawn_without_an_edit() -> None:
    moody = find(
        _messages_of(MOODY, None),
        lambda m: m.mood is not None and m.provider is not None,
        settings=settings(database=None, phases=[Phase.generate]),
    )
    assert isinstance(moody, MoodyMessage)
    sticker = find(
        _records(STICKER, {}),
        lambda p: p.size is not None,
        settings=settings(database=None, phases=[Phase.generate]),
    )
    assert isinstance(sticker, StickerPart)


def test_narrowed_values_must_name_a_field_of_the_table() -> None:
    with pytest.raises(
        TypeError, match=r"StickerPart: values for no field of the table: \['colour'\]"
    ):
        _records(STICKER, {"colour": st.just("red")})


def test_without_hypothesis_the_kit_says_how_to_install_it(tmp_path: Path) -> None:
    blocker = tmp_path / "hypothesis.py"
    blocker.write_text("raise ImportError('hypothesis is not installed')\n")
    done = subprocess.run(
        [sys.executable, "-c", "import golem_core.testing"],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "pip install 'golem-agents[testing]'" in done.stderr


# -- a nondeterministic processor is reported, never raised (correctness round 3) ----------
# Issue 28, item 8: ``check_processor`` reports a nondeterministic processor (one that
# reads ``random``, or a counter standing for the clock) as breaking ``deterministic``; it
# never raises Hypothesis's ``FlakyFailure`` at its caller.


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


# -- check_processor leaves no trace and speaks plainly (correctness round 4) --------------
# ``check_processor`` leaves no trace and speaks plainly (issue 37 items 3 and 4): it
# writes no ``.hypothesis/`` directory into the current directory (Hypothesis caches the
# constants of local modules and its Unicode table there even with ``database=None``), and
# its reports say "an assistant message", not "a assistant message".


ROOT = Path(__file__).resolve().parent.parent

# a local module of the user's (as a test file would be): Hypothesis collects its constants
USER_CODE = """
from golem_core import trim_history
from golem_core.testing import check_processor

LIMIT = 3
report = check_processor(trim_history(LIMIT), max_examples=10)
print("ok" if report.ok else report)
"""


def test_check_processor_writes_nothing_into_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "user_check.py").write_text(USER_CODE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "user_check.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["user_check.py"]


def test_the_hypothesis_home_is_given_back_after_a_check() -> None:
    from hypothesis.configuration import storage_directory

    before = storage_directory("examples", intent_to_write=False).path
    check_processor(lambda h: Success(tuple(h)), max_examples=5)
    assert storage_directory("examples", intent_to_write=False).path == before


def calls_first(history: Sequence[Message]) -> Result[tuple[Message, ...], str]:
    """Puts a call with no result in front: the output opens with an assistant message."""
    return Success((Message.assistant(None, tool_calls=[ToolCallPart("x", "f", "{}")]), *history))


def test_a_report_says_an_assistant_message() -> None:
    report = check_processor(calls_first, max_examples=30)
    [violation] = [v for v in report.violations if v.law == "opens_request"]
    assert "opens with an assistant message" in violation.explanation
    assert "a assistant" not in str(report)
