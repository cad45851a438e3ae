"""``bench/compaction.py`` (issue 35 item 7) at a tiny size: the structural facts its
figures rest on.

Twenty turns under a 3,000-token budget (so every strategy folds or cuts several times):
golem's step cut keeps more of each request in the cache than a keep-last-N cut at the
same budget (golem's sliding window, langchain-core's ``trim_messages``, pydantic-ai's
keep-recent-messages processor); the summarizer's and the native compaction's costs
include their own calls; every request of every strategy is provider-valid by
``check_pairing``; the section renders from its JSON record. Peer strategies are skipped
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

from bench import cache, compaction, report  # noqa: E402
from golem_core import check_pairing  # noqa: E402

TURNS, BUDGET = 20, 3_000
Measured = tuple[list[compaction.Trace], list[compaction.Outcome], list[str]]


@pytest.fixture(scope="module")
def measured() -> Measured:
    traces, missing = asyncio.run(compaction.traces(TURNS, BUDGET))
    conversation = cache.workload(TURNS)
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
