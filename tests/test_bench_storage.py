"""``bench/storage.py`` (issue 47 item 2) at a tiny size: the facts its figures rest on.

Every library stores every message of the same conversations (its own reading of them
back counts them); a deletion gives the pages back (a churn's used size stays bounded
once the live set is), and the section renders from its JSON record. The peers come from
the ``bench`` extra; ``.ci/run`` installs it and sets ``GOLEM_REQUIRE_BENCH=1``.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench import storage  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.environ.get("GOLEM_REQUIRE_BENCH") != "1"  # .ci/run: runs (and fails if missing)
    and any(
        importlib.util.find_spec(m) is None
        for m in ("langgraph", "langgraph.checkpoint.sqlite", "agents", "pydantic_ai")
    ),
    reason="LangGraph, the OpenAI Agents SDK or pydantic-ai is not installed:"
    " python -m pip install -e '.[test,bench]'",
)


def _count(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as connection:
        found: int = connection.execute(sql).fetchone()[0]
    connection.close()
    return found


def test_every_library_keeps_every_message(tmp_path: Path) -> None:
    turns = storage._turns(0, 3)
    stored = {}
    for make in storage.SYSTEMS:
        system = make(tmp_path / f"{make.__name__}.sqlite")
        for turn in turns:
            system.append_turn("c0", turn)
        stored[system.name] = system
    golem = stored["golem"]
    assert len(golem._store.load_sync("bench", "c0")) == 16  # type: ignore[attr-defined]
    graph = stored["LangGraph"]
    state = graph._graph.get_state({"configurable": {"thread_id": "c0"}})  # type: ignore[attr-defined]
    assert len(state.values["messages"]) == 16
    # the Agents SDK keeps items (an assistant message and each of its calls is one)
    agents_items = sum(len(storage._responses_items(t)) for t in turns)
    sdk = stored["OpenAI Agents SDK"]
    assert _count(sdk.path, "SELECT count(*) FROM agent_messages") == agents_items
    assert _count(stored["pydantic-ai"].path, "SELECT count(*) FROM messages") == 3
    for system in stored.values():
        system.close()


@pytest.mark.parametrize("make", storage.SYSTEMS, ids=lambda m: m.__name__)
def test_a_deletion_gives_the_pages_back(tmp_path: Path, make: storage.Make) -> None:
    """What a churn's flat curve rests on: once nine of ten conversations are deleted, the
    rows' pages are free again (the schema's own pages aside)."""
    system = make(tmp_path / "db.sqlite")
    empty, _ = storage._sizes(system.path) if system.path.exists() else (0, 0)
    scripts = [storage._turns(seed, 10) for seed in range(10)]
    for c, script in enumerate(scripts):
        for turn in script:
            system.append_turn(f"c{c}", turn)
    full, _ = storage._sizes(system.path)
    for c in range(1, 10):
        system.delete(f"c{c}")
    left, file = storage._sizes(system.path)
    system.close()
    assert left - empty <= 0.25 * (full - empty), (empty, left, full)
    assert file >= full  # SQLite reuses the pages; the file does not shrink


def test_a_churn_is_measured_and_the_section_renders() -> None:
    rows = storage.churn(live=3, total=12, turns=4, samples=12)
    assert [r["library"] for r in rows] == ["golem", "LangGraph", "OpenAI Agents SDK",
                                             "pydantic-ai"]  # fmt: skip
    for r in rows:
        assert r["steady_first"] is not None and r["curve"][-1]["turns"] == 43, r
    data = {
        "conversations": 2, "turns": 2, "live": 3, "total": 12,
        "versions": storage._versions(),
        "per_message": storage.per_message(2, 2),
        "churn": rows,
        "command": "python -m bench.storage --quick",
        "machine": {"nproc": 2, "python": "3.11"},
    }  # fmt: skip
    text = storage.render(data)
    assert text.startswith("## Storage per message and over a churn")
    assert "| LangGraph |" in text and "| golem | 22 |" in text


def test_a_durable_churn_stays_flat_and_renders() -> None:
    """golem's durable storage (DBOS's system database, the blob store, the history store)
    over a churn with finished runs forgotten by age and conversations deleted: the runs
    happen (each turn a DBOS run) and forgetting keeps the system database smaller than
    the same churn never forgetting."""
    pytest.importorskip("dbos", reason="the dbos extra is not installed")
    row = storage.durable_churn(live=2, total=6, turns=3, samples=6, forget_every=3, age=0.2)
    assert row["library"] == "golem durable (DBOS)" and row["curve"][-1]["turns"] == 16
    kept = storage.durable_churn(live=2, total=6, turns=3, samples=6, forget_every=10**6,
                                 age=0.2)  # fmt: skip
    # what forget bounds: finished runs' records (the store's delete releases the blobs)
    assert 0 < row["parts"]["dbos"] < kept["parts"]["dbos"], (row["parts"], kept["parts"])
    data = {
        "conversations": 2, "turns": 2, "live": 3, "total": 12,
        "versions": storage._versions(), "per_message": storage.per_message(2, 2),
        "churn": storage.churn(live=2, total=4, turns=2, samples=4), "durable": row,
        "command": "python -m bench.storage --quick", "machine": {"nproc": 2, "python": "3.11"},
    }  # fmt: skip
    text = storage.render(data)
    assert "| golem durable (DBOS) |" in text and "`forget(older_than=0.2 s" in text
