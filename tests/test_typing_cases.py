"""The typing cases (``tests/typing_cases/``, type-checked by ``tests/test_quality.py``) also
run as written (first contact, round 3; issue 26)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "case", sorted(p.name for p in (ROOT / "tests" / "typing_cases").glob("*.py"))
)
def test_the_typing_cases_run_as_written(case: str, tmp_path: Path) -> None:
    script = ROOT / "tests" / "typing_cases" / case
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
