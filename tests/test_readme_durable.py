"""The durable example runs as written, quietly (issue 37 item 4: DBOS printed 74 INFO lines
on first launch; its own start-up lines are there on request). It was the README's; since
issue 45 item 6 it is in the durable-runs guide, docs/guides/durable.md."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="the dbos extra is not installed")

ROOT = Path(__file__).resolve().parent.parent


def _durable_block() -> str:
    guide = (ROOT / "docs" / "guides" / "durable.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", guide, re.S) if "DBOS.launch()" in b]
    assert blocks, "the durable guide has no durable example"
    return blocks[0]


def test_the_readme_durable_example_prints_its_answer_and_little_else(tmp_path: Path) -> None:
    script = tmp_path / "durable_example.py"
    script.write_text(_durable_block() + "\nimport os\nos._exit(0)\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "Paris is sunny."
    noise = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(noise) <= 2, "\n".join(noise)
