"""``bench/compaction.py`` (issue 35 item 7) at a tiny size: the structural facts its
figures rest on.

Twenty turns under a 3,000-token budget (so every strategy folds or cuts several times):
golem's step cut keeps more of each request in the cache than a keep-last-N cut at the
same budget (golem's sliding window, langchain-core's ``trim_messages``, pydantic-ai's
keep-recent-messages processor); a prepared fold sends what folding in the turn sends and
no turn waits for it; the planted facts a strategy keeps come from what it sent (a
summary that drops them keeps fewer, ``recall_tool`` reads back what a cut lost); the
summarizer's and the native compaction's costs
include their own calls; every request of every strategy is provider-valid by
``check_pairing``; the section, its side-by-side tables included, renders from its JSON
record. Peer strategies are skipped
when their package is not importable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench import cache, compaction, compaction_ahead, compaction_facts, report  # noqa: E402
from bench.compaction_trace import Recorder  # noqa: E402
from golem_core import budget_history, check_pairing  # noqa: E402
from golem_shell import summarize_history  # noqa: E402

TURNS, BUDGET = 20, 3_000
Measured = tuple[list[compaction.Trace], list[compaction.Outcome], list[str]]


@pytest.fixture(scope="module")
def measured() -> Measured:
    traces, missing = asyncio.run(compaction.traces(TURNS, BUDGET))
    conversation = compaction.conversation_of(TURNS)
    return traces, [compaction.measure(t, conversation) for t in traces], missing


def _named(outcomes: list[compaction.Outcome], prefix: str) -> compaction.Outcome:
    return next(o for o in outcomes if o.name.startswith(prefix))


def test_the_budget_binds_for_every_bounded_strategy(measured: Measured) -> None:
    _, outcomes, _ = measured
    baseline = _named(outcomes, compaction.BASELINE)
    assert baseline.largest_request > 2 * BUDGET
    for o in outcomes:
        assert o.requests == 2 * TURNS
        if o is not baseline:
            assert o.largest_request < baseline.largest_request, o.name


def test_the_step_cut_is_served_from_the_cache_more_than_a_keep_last_cut(
    measured: Measured,
) -> None:
    _, outcomes, _ = measured
    step = _named(outcomes, compaction.STEP_CUT)
    sliding = _named(outcomes, compaction.SLIDING_CUT)
    assert step.served_share > sliding.served_share
    assert step.dollars < sliding.dollars
    for peer in ("langchain-core", "pydantic-ai"):
        if any(o.name.startswith(peer) for o in outcomes):
            assert step.served_share > _named(outcomes, peer).served_share, peer


def test_a_folding_strategy_pays_for_its_own_calls(measured: Measured) -> None:
    traces, outcomes, _ = measured
    for prefix in ("golem summarize_history", "golem native_compaction"):
        trace = next(t for t in traces if t.name.startswith(prefix))
        outcome = _named(outcomes, prefix)
        assert trace.calls, prefix  # it folded
        assert outcome.side_calls == len(trace.calls)
        expected = sum(read + written * compaction.OUTPUT for _, read, written in trace.calls)
        assert outcome.side_units == pytest.approx(expected) and expected > 0
        total = outcome.input_units + outcome.output_units + outcome.side_units
        assert outcome.dollars == pytest.approx(total * cache.DOLLARS_PER_TOKEN)
        # a summary is sized from what it read
        for _, read, written in trace.calls:
            assert written == compaction.summary_tokens(read)
    for o in outcomes:
        if "summarize" not in o.name and "compaction" not in o.name.lower():
            assert o.side_calls == 0 and o.side_units == 0, o.name


def test_every_request_of_every_strategy_is_provider_valid(measured: Measured) -> None:
    traces, outcomes, _ = measured
    for trace in traces:
        for request in trace.requests:
            assert check_pairing(request) == (), trace.name
    assert all(o.invalid_requests == 0 for o in outcomes)


def test_a_compaction_item_counts_as_the_summary_it_stands_for(measured: Measured) -> None:
    traces, _, _ = measured
    native = next(t for t in traces if t.name.startswith("golem native_compaction"))
    holders = {
        m
        for r in native.requests
        for m in r
        if m.finish_reason == "compaction" and m.provider == "openai-responses"
    }
    assert holders
    written = {w for _, _, w in native.calls}
    assert {compaction.count(m) - 4 for m in holders} <= written


@pytest.mark.skipif(
    importlib.util.find_spec("agents") is None
    and os.environ.get("GOLEM_REQUIRE_BENCH") != "1",  # .ci/run: runs (and fails if missing)
    reason="openai-agents is not installed: python -m pip install -e '.[bench]'",
)
def test_the_agents_sdk_session_compacts_through_the_simulated_server(measured: Measured) -> None:
    traces, outcomes, _ = measured
    sdk = [t for t in traces if t.name.startswith("OpenAI Agents SDK")]
    assert len(sdk) == 2 and all(t.calls for t in sdk)
    for trace in sdk:  # what the session stored after a compaction: its item, sent back
        assert any(
            compaction.count(m) - 4 in {w for _, _, w in trace.calls} for m in trace.requests[-1]
        )
    assert all(o.invalid_requests == 0 for o in outcomes if o.name.startswith("OpenAI Agents"))


def test_the_section_renders_from_its_record(measured: Measured, tmp_path: Path) -> None:
    _, outcomes, missing = measured
    command = "python -m bench.compaction --turns 20 --budget 3000"
    data = compaction.record(outcomes, missing, command=command, turns=TURNS, budget=BUDGET)
    data = json.loads(json.dumps(data))  # as results.json holds it
    text = compaction.render(data)
    assert text.startswith(compaction.SECTION)
    for o in outcomes:
        assert f"| {o.name} |" in text
    assert "Verdict: Cheapest bounded:" in text
    written = tmp_path / "results.md"
    report.write_section(written, "compaction", data)
    assert written.read_text(encoding="utf-8") == report.render(
        report.load(written.with_suffix(".json"))
    )


def test_a_prepared_fold_sends_the_same_and_no_turn_waits(measured: Measured) -> None:
    traces, outcomes, _ = measured
    untimed = next(t for t in traces if t.name == compaction.SUMMARIZER)
    ahead = next(t for t in traces if t.name == compaction.PREPARED)
    assert ahead.requests == untimed.requests
    # the same calls, made as the turn before ended
    assert [(t + 1, r, w) for t, r, w in ahead.calls] == untimed.calls
    assert _named(outcomes, compaction.SUMMARIZER).waited == len({t for t, _, _ in untimed.calls})
    assert _named(outcomes, compaction.PREPARED).waited == 0


def test_the_facts_kept_come_from_what_each_strategy_sent() -> None:
    conversation = compaction_facts.planted(cache.workload(40), every=4)
    planted = compaction_facts.facts_of(conversation)
    assert len(planted) == 10 and len(set(planted)) == 10

    async def play() -> tuple[dict[float, compaction.Outcome], compaction.Outcome, set[str]]:
        recalled = await compaction_facts.recalled(conversation, planted)
        by_share = {}
        for share in (0.0, compaction_facts.FACT_SHARE):  # a summary that drops every fact
            recorder = Recorder()
            model = compaction.summarizer(recorder, share)
            strategy = summarize_history(
                model, keep_last_turns=2, max_tokens=BUDGET, counter=compaction.count
            )
            trace = await compaction.golem_trace("s", conversation, strategy, recorder)
            by_share[share] = compaction.measure(trace, conversation, recalled=recalled)
        cut = await compaction.golem_trace(
            "cut", conversation, budget_history(compaction.count, BUDGET)
        )
        return by_share, compaction.measure(cut, conversation, recalled=recalled), recalled

    by_share, cut, recalled = asyncio.run(play())
    dropping, keeping = by_share[0.0], by_share[compaction_facts.FACT_SHARE]
    assert keeping.facts == dropping.facts == cut.facts == 10
    assert dropping.facts_sent < keeping.facts_sent
    # recall reads back from the store what the window lost
    assert recalled and recalled <= set(planted)
    assert cut.facts_sent < cut.facts_recalled <= 10
    assert dropping.facts_sent < dropping.facts_recalled
    assert keeping.facts_recalled >= max(keeping.facts_sent, len(recalled))
    # the peers have no recall tool: no figure
    assert (
        compaction.measure(
            compaction.Trace("x", cut_requests(conversation)), conversation
        ).facts_recalled
        == -1
    )


def cut_requests(conversation: list[cache.Turn]) -> list[tuple[compaction.Message, ...]]:
    """Two requests a turn, each only the turn's own messages."""
    out = []
    for turn in conversation:
        groups = cache.turn_messages(turn)
        out += [tuple(groups[0]), (*groups[0], *groups[1])]
    return out


def test_the_side_by_side_tables_render_from_their_record(measured: Measured) -> None:
    traces, outcomes, missing = measured
    in_time = compaction.run_timed(TURNS, BUDGET, traces, set())
    latency = asyncio.run(compaction_ahead.measure(8, 0.001, 0.05, 0.05))
    data = compaction.record(
        outcomes, missing, command="c", turns=TURNS, budget=BUDGET, in_time=in_time,
        latency=latency,
    )  # fmt: skip
    text = compaction.render(json.loads(json.dumps(data)))
    for name in (compaction.TIMED, compaction.PREPARED_TIMED, compaction.PREPARED):
        assert sum(f"| {name} |" in line for line in text.splitlines()) >= 1, name
    timed = {o.name: o for o in in_time}
    assert timed[compaction.PREPARED_TIMED].waited == 0 < timed[compaction.TIMED].waited
    assert "| prepare_ahead(summarize_history), folded while the user reads |" in text
    assert "Prepared / in the turn: median" in text
    assert latency[1].waited == 0 < latency[0].waited
