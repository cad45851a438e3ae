"""``bench.report.recorded_command`` and ``machine``: what the durable, durable_peers and
store sections record of how they were measured (one builder, shared by the three)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench.report import machine, recorded_command  # noqa: E402


def test_the_recorded_command_leaves_out_where_it_was_written() -> None:
    argv = ["--quick", "--write", "bench/results.md", "--runs", "3"]
    assert recorded_command("python -m bench.durable", argv) == (
        "python -m bench.durable --quick --runs 3"
    )
    assert argv == ["--quick", "--write", "bench/results.md", "--runs", "3"]


def test_the_recorded_command_reads_sys_argv_without_argv(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["bench/store.py", "--write", "x.md", "--window"])
    assert recorded_command("python -m bench.store", None) == "python -m bench.store --window"
    assert recorded_command("python -m bench.store", []) == "python -m bench.store"


def test_the_machine_has_the_load_average_only_when_asked() -> None:
    assert list(machine()) == ["nproc", "python", "load_average_end"]
    assert list(machine(load_average=False)) == ["nproc", "python"]
    assert machine()["python"] == sys.version.split()[0]
