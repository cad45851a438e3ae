"""``SQLiteBlobs(path, synchronous=...)``: SQLite's flush after each write, ``"full"``
by default (a blob an engine names outlives a power loss), ``"normal"`` on request
(flushed at checkpoints: less CPU a write, bench/durable_temporal.py). Both keep every
committed write when the writing process is killed; a mistyped level is refused before
the file is touched."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from golem_shell import UsageError
from golem_shell.temporal import SQLiteBlobs

ROOT = Path(__file__).resolve().parents[1]

WRITER = """
import os, sys, time
from golem_shell.engines._blobs import owned_by, stash_row
from golem_shell.temporal import SQLiteBlobs
path, level, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = SQLiteBlobs(path, synchronous=level)
keys = []
with owned_by("conversation-1"):
    for n in range(count):
        ref, row = stash_row({"n": n, "text": "x" * 200})
        store.put([row])
        keys.append(ref["key"])
print(" ".join(keys), flush=True)
time.sleep(600)  # killed here, its connection never closed, no checkpoint
"""


def _level(store: SQLiteBlobs) -> int:
    (level,) = store._db.execute("PRAGMA synchronous").fetchone()
    return int(level)


def test_every_write_is_flushed_to_the_disk_unless_asked_otherwise(tmp_path: Path) -> None:
    assert _level(SQLiteBlobs(tmp_path / "a.sqlite")) == 2  # FULL
    normal = SQLiteBlobs(tmp_path / "b.sqlite", synchronous="normal")
    assert _level(normal) == 1  # NORMAL
    assert repr(normal).endswith("synchronous='normal')")
    # another connection to the same file keeps the default: the level is per process
    assert _level(SQLiteBlobs(tmp_path / "b.sqlite")) == 2


def test_a_mistyped_level_is_refused_before_the_file_is_made(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"synchronous='off'.*'full', 'normal'"):
        SQLiteBlobs(tmp_path / "c.sqlite", synchronous="off")  # type: ignore[arg-type]
    assert not (tmp_path / "c.sqlite").exists()


@pytest.mark.parametrize("level", ["full", "normal"])
def test_a_killed_writer_loses_no_committed_blob(tmp_path: Path, level: str) -> None:
    path = tmp_path / "blobs.sqlite"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), level, "50"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        keys = writer.stdout.readline().split()
        os.kill(writer.pid, signal.SIGKILL)
        _, err = writer.communicate(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert len(keys) == 50, err
    assert writer.returncode == -signal.SIGKILL
    # a new process's store reads every blob, and the owner rows came with them
    fresh = SQLiteBlobs(path)
    got = fresh.get(keys)
    assert sorted(got) == sorted(keys)
    with sqlite3.connect(path) as db:
        (held,) = db.execute(
            "SELECT count(*) FROM golem_blob_owners WHERE conversation = 'conversation-1'"
        ).fetchone()
    assert held == 50
