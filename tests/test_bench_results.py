"""``bench/results.md`` and the history guide's benchmark figures are written, never typed
(issue 33, item 12; the paragraph was the README's until issue 45 item 6).

Every figure in ``bench/results.md`` comes from a benchmark command: each records its
measurements in ``bench/results.json`` and ``bench/report.py`` renders the report from
them. These tests render the recorded JSON again and compare it with the file byte for
byte, so a hand edit (a changed row, a "met" count, a section no command writes) fails;
the guide's paragraph between its markers (docs/guides/history.md) is checked the same way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench import cache, report  # noqa: E402
from bench.run import main  # noqa: E402

RESULTS = ROOT / "bench" / "results.md"


def test_results_md_is_what_its_recorded_measurements_render_to() -> None:
    recorded = report.load(RESULTS.with_suffix(".json"))
    assert "run" in recorded and "cache" in recorded
    assert RESULTS.read_text(encoding="utf-8") == report.render(recorded), (
        "bench/results.md differs from what bench/results.json renders to: re-run the "
        "benchmark command (`python -m bench ... --write bench/results.md`), never edit it"
    )


def test_the_readme_figures_are_what_the_recorded_cache_run_renders_to() -> None:
    guide = report.GUIDE.read_text(encoding="utf-8")
    assert report.GUIDE == ROOT / "docs" / "guides" / "history.md"
    block = report.guide_block(report.load(RESULTS.with_suffix(".json")))
    assert block is not None and block in guide
    assert guide.count(report.BLOCK_BEGIN) == 1


def test_a_hand_edit_or_a_typed_section_is_not_what_renders(tmp_path: Path) -> None:
    written = tmp_path / "results.md"
    assert main(["--quick", "--no-peers", "--sizes", "200", "--write", str(written)]) == 0
    assert cache.main(["--turns", "20", "--write", str(written)]) in (0, 1)
    recorded = report.load(written.with_suffix(".json"))
    text = written.read_text(encoding="utf-8")
    assert text == report.render(recorded)
    assert "## Long conversations" in text and "### Misses" in text
    # a re-run of one command replaces its own section and keeps the other's
    before = json.loads(written.with_suffix(".json").read_text())
    assert cache.main(["--turns", "10", "--write", str(written)]) in (0, 1)
    after = json.loads(written.with_suffix(".json").read_text())
    assert after["run"] == before["run"] and after["cache"]["turns"] == 10
    assert written.read_text(encoding="utf-8") == report.render(after)
