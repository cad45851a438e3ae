"""The soak's exactly-once check of tool effects (``bench.soak.check``) tells the
documented at-least-once of an interrupted effect (a tool in flight when its process was
SIGKILLed, or when PostgreSQL restarted, runs again) from a tool run twice for no reason,
which stays a fault."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.soak import _interrupted  # noqa: E402

FIRST = {"call": "c1", "pid": 100, "t": 10.0}
AGAIN = {"call": "c1", "pid": 200, "t": 20.0}


def test_a_tool_run_again_after_its_process_was_killed_is_the_documented_retry() -> None:
    assert _interrupted([{"t": 12.0, "pid": 100}], FIRST, AGAIN)


def test_a_tool_run_again_after_postgresql_restarted_is_the_documented_retry() -> None:
    assert _interrupted([{"t": 15.0, "postgres": True}], FIRST, AGAIN)


def test_a_tool_run_twice_with_no_chaos_between_is_a_fault() -> None:
    assert not _interrupted([], FIRST, AGAIN)
    assert not _interrupted([{"t": 12.0, "pid": 300}], FIRST, AGAIN)  # another process
    assert not _interrupted([{"t": 5.0, "pid": 100}], FIRST, AGAIN)  # before it ran
    assert not _interrupted([{"t": 25.0, "postgres": True}], FIRST, AGAIN)  # after both
    assert not _interrupted([{"t": 12.0, "pid": 100}], {"call": "c1", "pid": 100}, AGAIN)
