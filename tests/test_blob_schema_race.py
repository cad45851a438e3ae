"""``SQLBlobs`` on a fresh PostgreSQL database, created by many processes at once
(issue 50's long soak: two web-chat servers and two Temporal workers started together,
and one died at start with ``UniqueViolation`` on ``pg_type_typname_nsp_index``: both
ran ``CREATE TABLE golem_blobs``). The tables are created under an advisory lock, in one
transaction: every process starts, and the blob store works for all of them."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sa = pytest.importorskip("sqlalchemy")

ROOT = Path(__file__).resolve().parents[1]

STARTER = """
import sys, time
import sqlalchemy as sa
from golem_shell.durable import SQLBlobs
url, at = sys.argv[1], float(sys.argv[2])
engine = sa.create_engine(url)
with engine.connect():  # connected before the common moment: the race is the DDL's
    pass
time.sleep(max(0.0, at - time.time()))
SQLBlobs(engine)
print("started")
"""


def test_processes_starting_at_once_on_a_fresh_database_all_start(postgres_url: str) -> None:
    from postgres_server import create_database

    url = create_database(postgres_url, f"blobs_race_{uuid.uuid4().hex[:8]}")
    url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    for attempt in range(3):  # a fresh schema each time: the race is at creation
        engine = sa.create_engine(url)
        with engine.begin() as c:
            for table in ("golem_blob_owners", "golem_blobs_erased", "golem_blobs"):
                c.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
        engine.dispose()
        at = time.time() + 3.0
        starters = [
            subprocess.Popen(
                [sys.executable, "-c", STARTER, url, str(at)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(6)
        ]
        for p in starters:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0 and out.strip() == "started", f"attempt {attempt}: {err}"

    from golem_shell.durable import SQLBlobs

    engine = sa.create_engine(url)
    try:
        blobs = SQLBlobs(engine)
        blobs.put([("k1", None, b"body")])
        assert blobs.get(["k1"]) == {"k1": b"body"}
    finally:
        engine.dispose()
