"""``check_processor`` leaves no trace and speaks plainly (issue 37 items 3 and 4): it
writes no ``.hypothesis/`` directory into the current directory (Hypothesis caches the
constants of local modules and its Unicode table there even with ``database=None``), and
its reports say "an assistant message", not "a assistant message"."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from returns.result import Result, Success

from golem_core import Message, ToolCallPart
from golem_core.testing import check_processor

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
