"""``SQLBlobs`` on a fresh PostgreSQL database, created by many processes at once
(issue 50's long soak: two web-chat servers and two Temporal workers started together,
and one died at start with ``UniqueViolation`` on ``pg_type_typname_nsp_index``: both
ran ``CREATE TABLE golem_blobs``). The tables are created under an advisory lock, in one
transaction: every process starts, and the blob store works for all of them."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sa = pytest.importorskip("sqlalchemy")

ROOT = Path(__file__).resolve().parents[1]

RACES = """
import multiprocessing, os, sys, time, traceback
import sqlalchemy as sa
from golem_shell.durable import SQLBlobs
url, n, attempts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
context = multiprocessing.get_context("fork")

def start(together) -> None:
    try:
        engine = sa.create_engine(url)
        with engine.connect():  # connected before the common moment: the race is the DDL's
            pass
        together.wait()
        SQLBlobs(engine)
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    os._exit(0)

for _ in range(attempts):  # a fresh schema each time: the race is at creation
    engine = sa.create_engine(url)
    with engine.begin() as c:
        for table in ("golem_blob_owners", "golem_blobs_erased", "golem_blobs"):
            c.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
    engine.dispose()
    together = context.Barrier(n, timeout=60)
    starters = [context.Process(target=start, args=(together,)) for _ in range(n)]
    for p in starters:
        p.start()
    deadline = time.monotonic() + 60
    for p in starters:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.exitcode is None:  # stuck: said below, and not left behind
            p.kill()
            p.join()
    print(" ".join("started" if p.exitcode == 0 else f"exit {p.exitcode}" for p in starters))
"""
"""``attempts`` times, on a fresh schema: ``n`` processes, each with its own engine and
connection, create the blob store at the same moment (a barrier releases them once all
are connected); a line per attempt says how each ended. They are forked from one
interpreter that imported golem once: ``n`` fresh interpreters would each spend a second
of CPU on the import before the race, and a fixed start time long enough for that on a
loaded machine was most of the test's time."""


def test_processes_starting_at_once_on_a_fresh_database_all_start(postgres_url: str) -> None:
    from postgres_server import create_database

    url = create_database(postgres_url, f"blobs_race_{uuid.uuid4().hex[:8]}")
    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    races = subprocess.run(
        [sys.executable, "-c", RACES, url, "6", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert races.returncode == 0, races.stderr
    assert races.stdout.splitlines() == [" ".join(["started"] * 6)] * 3, races

    from golem_shell.durable import SQLBlobs

    engine = sa.create_engine(url)
    try:
        blobs = SQLBlobs(engine)
        blobs.put([("k1", None, b"body")])
        assert blobs.get(["k1"]) == {"k1": b"body"}
    finally:
        engine.dispose()
