"""``bench/durable_peers.py --long`` (issue 34 item 4) at a tiny size: the structural facts
its figures rest on.

Twelve steps without durability, then on DBOS/SQLite for golem (``bench.durable``'s own
long-run child) and for pydantic-ai's ``DBOSAgent``, each in a child process: every step
is timed, the payloads
and messages are measured, the database is measured, and the section renders from its
rows with the comparing sentence. The Temporal path's history walk is checked on a
synthetic history (a model request and a ``call_tool`` activity per step), so the test
needs no Temporal server. Skipped when DBOS or pydantic-ai is not importable.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench import durable_peers, durable_peers_long, durable_peers_render  # noqa: E402

STEPS = 12

needs_dbos = pytest.mark.skipif(
    os.environ.get("GOLEM_REQUIRE_BENCH") != "1"  # .ci/run: runs (and fails if missing)
    and (
        importlib.util.find_spec("dbos") is None
        or importlib.util.find_spec("pydantic_ai") is None
        or importlib.util.find_spec("pydantic_ai.durable_exec.dbos") is None
    ),
    reason="DBOS or pydantic-ai's DBOS integration is not installed:"
    " python -m pip install -e '.[test,bench]'",
)


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return durable_peers.long_rows(STEPS, STEPS, temporal=False)


@needs_dbos
def test_both_libraries_run_every_step_on_dbos(rows: list[dict[str, Any]]) -> None:
    assert [(r["library"], r["engine"]) for r in rows] == [
        ("golem", "plain"),
        ("pydantic-ai", "plain"),
        ("golem", "dbos"),
        ("pydantic-ai", "dbos"),
    ]
    for r in rows:
        assert r["completed"], r
        assert r["error"] is None
        assert r["steps"] == r["steps_requested"] == STEPS
        assert r["early_step_ms"] > 0 and r["late_step_ms"] > 0 and r["late_over_early"] > 0
        assert r["seconds"] > 0


@needs_dbos
def test_payloads_messages_and_the_database_are_measured(rows: list[dict[str, Any]]) -> None:
    for r in rows[:2]:  # the plain runs record nothing
        assert r["largest_message"] > 0, r
        assert "largest_payload" not in r and "db_bytes" not in r
    rows = rows[2:]
    for r in rows:
        assert r["largest_payload"] > 0, r
        assert r["largest_message"] > 0, r
        assert r["db_bytes"] > 0, r
    # pydantic-ai's largest row is its workflow's output, the run's result: it carries
    # every message, so it is larger than any one of them
    pai = rows[1]
    assert pai["largest_payload"] > 2 * pai["largest_message"]


@needs_dbos
def test_the_section_renders_both_rows_and_the_comparison(rows: list[dict[str, Any]]) -> None:
    data = {
        "command": "python -m bench.durable_peers --long",
        "machine": {"nproc": 2, "python": "3.11", "load_average_end": 1.0},
        "versions": {"pydantic-ai-slim": "x", "dbos": "y", "temporalio": "z"},
        "short": None,
        "long": rows,
    }
    text = durable_peers.render(data)
    assert "| plain | golem | 12 of 12 |" in text
    assert "| dbos | golem | 12 of 12 |" in text
    assert "| dbos | pydantic-ai (`DBOSAgent`) | 12 of 12 |" in text
    assert "Without durability (`Agent.run`), a step at the end" in text
    assert "On DBOS, a step at the end of the run costs" in text
    assert "On Temporal" not in text  # no Temporal rows: no Temporal sentence


def _event(event_id: int, **attributes: Any) -> Any:
    from temporalio.api.history.v1 import HistoryEvent

    return HistoryEvent(event_id=event_id, **attributes)


def test_the_history_walk_counts_steps_by_tool_activities() -> None:
    pytest.importorskip("temporalio")
    from temporalio.api.common.v1 import ActivityType, Payload, Payloads
    from temporalio.api.history.v1 import (
        ActivityTaskCompletedEventAttributes,
        ActivityTaskScheduledEventAttributes,
    )

    events = []
    next_id = 1
    for step in range(1, 121):
        for kind in ("model_request", "toolset__f__call_tool"):
            scheduled = next_id
            data = b"x" * (step if kind == "model_request" else 3)  # the request grows
            events.append(
                _event(
                    scheduled,
                    activity_task_scheduled_event_attributes=ActivityTaskScheduledEventAttributes(
                        activity_type=ActivityType(name=f"agent__a__{kind}"),
                        input=Payloads(payloads=[Payload(data=data)]),
                    ),
                )
            )
            events.append(
                _event(
                    scheduled + 1,
                    activity_task_completed_event_attributes=ActivityTaskCompletedEventAttributes(
                        scheduled_event_id=scheduled
                    ),
                )
            )
            next_id += 2
    figures = durable_peers_long._history_figures([events], lambda n: n.endswith("__call_tool"))
    assert [n for n, _ in figures["history_points"]] == [50, 100]
    assert figures["largest_payload"] == 120
    assert figures["history_events"] == 480
    assert figures["history_bytes"] == sum(e.ByteSize() for e in events)
    assert figures["history_exponent"] > 1.0  # the requests grow: faster than linear


def test_a_stopped_run_and_the_continued_variant_render() -> None:
    def row(library: str, variant: str | None, steps: int, error: str | None) -> dict[str, Any]:
        return {
            "library": library,
            "variant": variant,
            "engine": "temporal",
            "steps_requested": 1000,
            "completed": error is None,
            "error": error,
            "steps": steps,
            "seconds": 10.0,
            "early_step_ms": 100.0,
            "late_step_ms": 110.0,
            "late_over_early": 1.1,
            "largest_payload": 300,
            "largest_message": 200,
            "largest_event": 400,
            "executions": 3,
            "history_bytes": 1_000_000,
            "history_events": 9000,
            "history_points": [[50, 1000], [100, 2000]],
            "history_exponent": 1.0,
        }

    rows = [
        row("golem", None, 1000, None),
        row("pydantic-ai", "TemporalAgent", 260, "history size exceeds limit"),
        row("pydantic-ai", durable_peers.CONTINUED, 1000, None),
    ]
    text = "\n".join(durable_peers_render._long_markdown(rows))
    assert "| temporal | pydantic-ai (`TemporalAgent`) | 260 of 1000 |" in text
    assert "stopped: history size exceeds limit |" in text
    assert "pydantic-ai's run stopped at step 260 of 1000" in text
    assert "continuing as new (`TemporalDurability, continue_as_new`) completed" in text


def test_a_child_without_figures_renders_as_such() -> None:
    rows = [
        {
            "library": library,
            "variant": None,
            "engine": "temporal",
            "steps_requested": 1000,
            "completed": False,
            "error": "the child gave no figures after 2400 s: timed out",
        }
        for library in ("golem", "pydantic-ai")
    ]
    text = "\n".join(durable_peers_render._long_markdown(rows))
    assert "| temporal | golem | - of 1000 | - |" in text
    assert "On Temporal, no comparison: golem and pydantic-ai gave no figures." in text
