"""`bench/cache.py` on a short conversation (smoke: the measure, not the targets)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench import cache  # noqa: E402


def test_the_cache_stable_budget_serves_more_and_costs_less_than_the_window() -> None:
    outcomes = cache.run(turns=60)
    stable, sliding = outcomes[0], outcomes[1]
    assert stable.requests == sliding.requests == 120
    assert stable.served_share > sliding.served_share
    assert stable.cost_units < sliding.cost_units
    names = [o.name for o in outcomes]
    # the peers are measured when the bench extra is installed (not in the test extra)
    peers = {"langchain": "langchain_core", "pydantic-ai": "pydantic_ai"}
    for label, module in peers.items():
        installed = importlib.util.find_spec(module) is not None
        assert any(label in n for n in names) == installed, (label, names)


def test_the_section_replaces_itself_in_the_report(tmp_path: Path) -> None:
    report = tmp_path / "results.md"
    assert cache.main(["--turns", "20", "--write", str(report)]) in (0, 1)
    assert cache.main(["--turns", "20", "--write", str(report)]) in (0, 1)
    written = report.read_text()
    assert written.count(cache.SECTION) == 1
    assert "Command: `python -m bench.cache --turns 20`. 20 turns" in written
