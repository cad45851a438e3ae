# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Races on both engines: branches and appends, erasure and appends, and (issue 28 item 8)
several processes opening one new SQLite file at once.

Each race ends with the same checks: nothing half-written (every branch loads, passes
``check_pairing`` and ``verify``), nothing lost that was not erased (every append that
returned is in its branch exactly once, in order).
"""

from __future__ import annotations

import multiprocessing
import random
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from profiles import examples  # properties/profiles.py: the loaded profile's count
from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
    texts,
    user,
)

from golem_core import check_pairing
from golem_shell.store import ERASED_TEXT, MAIN, HistoryConflict, SQLiteHistoryStore

THREADS = 6
ROUNDS = 15


def _append_until_stored(store: Store, cid: str, text: str, branch: str = MAIN) -> None:
    while True:
        history = store.load_sync(OWNER, cid, branch=branch)
        try:
            store.append_sync(OWNER, cid, [user(text)], len(history), branch=branch)
            return
        except HistoryConflict:
            continue


def _run(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not any(t.is_alive() for t in threads)


def _everything_loads_and_verifies(store: Store, cid: str) -> None:
    for info in store.branches_sync(OWNER, cid):
        history = store.load_sync(OWNER, cid, branch=info.name)
        assert len(history) == info.length
        assert check_pairing(history) == ()
    report = store.verify_sync(OWNER, cid)
    assert report.intact, report.findings


def test_branches_and_appends_racing(backend: Backend) -> None:
    stores = [backend.open() for _ in range(THREADS)]
    stores[0].append_sync(OWNER, "c", [user("root")], 0)
    made: list[tuple[str, int, list[str]]] = []  # branch, fork point, what it appended
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def appender(i: int) -> None:
        barrier.wait()
        for r in range(ROUNDS):
            _append_until_stored(stores[i], "c", f"main {i}.{r}")

    def brancher(i: int) -> None:
        rng = random.Random(i)
        barrier.wait()
        try:
            for _ in range(ROUNDS // 3):
                length = len(stores[i].load_sync(OWNER, "c"))
                at = rng.randint(0, length)
                name = stores[i].branch_sync(OWNER, "c", at)
                added = [f"{name} {k}" for k in range(2)]
                stores[i].append_sync(OWNER, "c", [user(t) for t in added], at, branch=name)
                made.append((name, at, added))
        except BaseException as e:
            errors.append(e)

    half = THREADS // 2
    _run(
        [threading.Thread(target=appender, args=(i,)) for i in range(half)]
        + [threading.Thread(target=brancher, args=(i,)) for i in range(half, THREADS)]
    )
    assert errors == []
    store = stores[0]
    main = texts(store.load_sync(OWNER, "c"))
    assert sorted(main[1:]) == sorted(f"main {i}.{r}" for i in range(half) for r in range(ROUNDS))
    for i in range(half):  # each appender's messages in its own order
        assert [t for t in main if t.startswith(f"main {i}.")] == [
            f"main {i}.{r}" for r in range(ROUNDS)
        ]
    assert len(made) == half * (ROUNDS // 3)
    for name, at, added in made:  # a branch = main's prefix at its fork point + its own
        assert texts(store.load_sync(OWNER, "c", branch=name)) == main[:at] + added
    _everything_loads_and_verifies(store, "c")


def test_erasure_racing_appends(backend: Backend) -> None:
    writer, eraser = backend.open(), backend.open()
    writer.append_sync(OWNER, "c", [user("start")], 0)
    branch = writer.branch_sync(OWNER, "c", 1)
    done = threading.Event()
    erased_positions: set[tuple[str, int]] = set()

    def write() -> None:
        for r in range(40):
            tag = "secret" if r % 3 == 0 else "plain"
            _append_until_stored(writer, "c", f"{tag} {r}", MAIN if r % 2 else branch)
        done.set()

    def erase() -> None:
        while not done.is_set():
            receipt = eraser.erase_sync(OWNER, "c", lambda m: m.text.startswith("secret"))
            erased_positions.update((e.branch, p) for e in receipt.erased for p in e.positions)

    _run([threading.Thread(target=write), threading.Thread(target=erase)])
    eraser.erase_sync(OWNER, "c", lambda m: m.text.startswith("secret"))  # the latecomers
    for name, parity in ((MAIN, 1), (branch, 0)):
        got = texts(writer.load_sync(OWNER, "c", branch=name))
        wanted = [
            f"{'secret' if r % 3 == 0 else 'plain'} {r}" for r in range(40) if r % 2 == parity
        ]
        assert got[0] == "start" and len(got) == len(wanted) + 1  # nothing lost
        for text, want in zip(got[1:], wanted, strict=True):  # in order; only secrets erased
            assert text == (ERASED_TEXT if want.startswith("secret") else want)
    assert all(p > 0 for _, p in erased_positions)  # "start" was never erased
    _everything_loads_and_verifies(writer, "c")


# -- the property of properties/test_store_properties.py, on both engines -------------------


def test_any_sequence_of_writes_leaves_every_branch_valid(backend: Backend) -> None:
    """After any sequence of appends, branches, forks, erasures and deletions every
    branch loads, pairs and verifies (the state machine, a few examples per engine)."""
    properties = Path(__file__).resolve().parents[1] / "properties"
    if str(properties) not in sys.path:
        sys.path.insert(0, str(properties))
    from test_store_properties import KEY as PROPERTY_KEY
    from test_store_properties import StoredConversations

    class OnThisEngine(StoredConversations):
        @staticmethod
        def open_store() -> Store:
            return backend.open(signing_keys=PROPERTY_KEY, table=f"p_{uuid.uuid4().hex[:12]}")

    run_state_machine_as_test(
        OnThisEngine,
        settings=settings(max_examples=examples(6), stateful_step_count=8, deadline=None),
    )


# -- issue 28 item 8: processes opening one new SQLite file at once ---------------------------

PROCESSES = 6
FILES = 40


def test_processes_opening_one_new_sqlite_file_at_once(tmp_path: Path) -> None:
    """6 processes open each of 40 brand-new files together (a barrier per file) and
    append to it: no "database is locked" (before the fix: about 1 open in 500)."""
    context = multiprocessing.get_context("fork")  # the children inherit golem's imports
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    workers = [
        context.Process(target=_open_worker, args=(str(tmp_path), f"p{p}", barrier, results))
        for p in range(PROCESSES)
    ]
    for w in workers:
        w.start()
    reports = [results.get(timeout=300) for _ in workers]
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0] * PROCESSES
    assert [error for report in reports for error in report] == []
    for f in range(FILES):
        with SQLiteHistoryStore(tmp_path / f"new-{f}.db") as store:
            assert len(store.list_conversations_sync(OWNER)) == PROCESSES


def _open_worker(folder: str, name: str, barrier: Any, results: Any) -> None:
    errors = []
    for f in range(FILES):
        barrier.wait(120)
        try:
            with SQLiteHistoryStore(Path(folder) / f"new-{f}.db") as store:
                store.append_sync(OWNER, name, [user(name)], 0)
        except Exception as e:
            errors.append(f"file {f}: {type(e).__name__}: {e}")
    results.put(errors)
