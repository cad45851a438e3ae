"""Issue 37 item 6: a store written by golem 0.2 (one table, no owners) moves into today's.

The 0.2 database is made by the 0.2 code itself: its ``golem_core`` and ``golem_shell``
(and golden histories) are taken from git history at the last commit of that release
into a temporary directory and run in a subprocess. Nothing here needs the network.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import uuid
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from golem_core import Message, encode_message
from golem_shell._errors import UsageError
from golem_shell.cli import main
from golem_shell.store import (
    CorruptHistoryError,
    HistoryStoreError,
    PostgresHistoryStore,
    SQLiteHistoryStore,
)
from golem_shell.store._migrate import migrate_store

ROOT = Path(__file__).resolve().parent.parent
RELEASE_0_2 = "939f26a"  # the last commit of 0.2.0 (CHANGELOG.md), before ADR 0070
KEY = b"migration-test-key-0123456789abc"

MAKE_OLD_STORE = r"""
import sys
from pathlib import Path

import golem_shell
from golem_core import Message, decode_history
from golem_shell.store import PostgresHistoryStore, SQLiteHistoryStore

kind, target, tree = sys.argv[1:4]
assert golem_shell.__file__.startswith(tree), golem_shell.__file__  # the 0.2 code runs
golden = Path(tree) / "tests" / "golden" / "v1"
store = SQLiteHistoryStore(target) if kind == "sqlite" else PostgresHistoryStore(target)
with store:
    trip = decode_history((golden / "tool_round_trip.json").read_bytes()).unwrap()
    store.append_sync("trip", trip, expected_length=0)
    store.fork_sync("trip", 1, "trip-edit")
    store.append_sync("trip-edit", [Message.assistant("edited")], expected_length=1)
    notes = decode_history((golden / "forward_compatible.json").read_bytes()).unwrap()
    store.append_sync("user-7:notes", notes, expected_length=0)
    print(store.list_conversations_sync())
"""

CONVERSATIONS = ("trip", "trip-edit", "user-7:notes")


@pytest.fixture(scope="module")
def old_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """golem 0.2's packages and golden files, from git history."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: golem 0.2's code comes from its history")
    archive = subprocess.run(
        ["git", "archive", RELEASE_0_2, "golem_core", "golem_shell", "tests/golden"],
        cwd=ROOT,
        capture_output=True,
    )
    assert archive.returncode == 0, (
        f"git archive {RELEASE_0_2} failed (a shallow clone? git fetch --unshallow): "
        f"{archive.stderr.decode(errors='replace')}"
    )
    tree = tmp_path_factory.mktemp("golem_0_2")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def make_old_store(tree: Path, kind: str, target: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, "-c", MAKE_OLD_STORE, kind, target, str(tree)],
        cwd=tree,  # never the clone: its golem must not be imported
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(CONVERSATIONS)


@pytest.fixture(scope="module")
def old_sqlite_template(old_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "history.db"
    make_old_store(old_tree, "sqlite", str(path))
    return path


@pytest.fixture
def old_sqlite(old_sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "history.db"
    shutil.copy(old_sqlite_template, path)
    return str(path)


class Database:
    """One database made by golem 0.2, with raw SQL beside today's store."""

    def __init__(self, kind: str, target: str) -> None:
        self.kind = kind
        self.target = target

    def raw(self, statement: str, *params: object) -> list[tuple[Any, ...]]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as conn:
                return conn.execute(statement, params).fetchall()
        import psycopg

        with psycopg.connect(self.target, autocommit=True) as conn:
            cursor = conn.execute(statement.replace("?", "%s"), params)
            return cursor.fetchall() if cursor.description is not None else []

    def tables(self) -> set[str]:
        if self.kind == "sqlite":
            rows = self.raw("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = self.raw(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        return {str(r[0]) for r in rows}

    def old_rows(self, table: str, cid: str) -> list[Any]:
        rows = self.raw(
            f"SELECT message FROM {table} WHERE conversation_id = ? ORDER BY position", cid
        )
        return [json.loads(r[0]) for r in rows]

    def store(self, **options: Any) -> SQLiteHistoryStore | PostgresHistoryStore:
        if self.kind == "sqlite":
            return SQLiteHistoryStore(self.target, **options)
        return PostgresHistoryStore(self.target, **options)


@pytest.fixture(params=["sqlite", "postgres"])
def old_database(request: pytest.FixtureRequest, old_tree: Path) -> Database:
    if request.param == "sqlite":
        return Database("sqlite", request.getfixturevalue("old_sqlite"))
    from postgres_server import create_database

    url = create_database(request.getfixturevalue("postgres_url"), f"m{uuid.uuid4().hex[:12]}")
    make_old_store(old_tree, "postgres", url)
    return Database("postgres", url)


def as_json(messages: tuple[Message, ...]) -> list[Any]:
    return [json.loads(encode_message(m)) for m in messages]


def test_a_store_made_by_golem_0_2_moves_and_loads_with_todays_store(
    old_database: Database,
) -> None:
    db = old_database
    before = {cid: db.old_rows("golem_messages", cid) for cid in CONVERSATIONS}
    # today's store on the 0.2 database, unmigrated: it reads nothing and cannot append
    # (its messages table has 0.2's name)
    with db.store() as store:
        assert store.list_conversations_sync("alice") == ()
        with pytest.raises(HistoryStoreError, match="owner"):
            store.append_sync("alice", "x", [Message.user("hi")], expected_length=0)

    done = migrate_store(db.target, owner="alice")

    assert done.kept_as == "golem_messages_v02"
    assert done.conversations == tuple(("alice", cid) for cid in CONVERSATIONS)
    assert done.messages == sum(len(v) for v in before.values()) == 5 + 2 + 2
    assert done.skipped == ()
    with db.store() as store:
        assert store.list_conversations_sync("alice") == CONVERSATIONS
        assert store.list_conversations_sync("bob") == ()
        for cid in CONVERSATIONS:
            loaded = store.load_sync("alice", cid)
            assert as_json(loaded) == before[cid], cid  # unknown fields and all
            assert db.old_rows("golem_messages_v02", cid) == before[cid]  # the 0.2 rows kept
        # the moved conversation goes on as any other
        n = len(store.load_sync("alice", "trip"))
        store.append_sync("alice", "trip", [Message.user("and Rome?")], expected_length=n)
        assert store.load_sync("alice", "trip")[-1].text == "and Rome?"
        assert store.verify_sync("alice", "trip").intact


def test_running_it_again_moves_nothing_twice(old_database: Database) -> None:
    first = migrate_store(old_database.target, owner="alice")
    again = migrate_store(old_database.target, owner="alice")
    assert again.conversations == ()
    assert again.messages == 0
    assert again.skipped == first.conversations
    rows = old_database.raw("SELECT COUNT(*) FROM golem_messages WHERE owner = ?", "alice")
    assert rows[0][0] == first.messages


def test_owners_from_the_conversation_id_and_signed_rows(old_sqlite: str) -> None:
    done = migrate_store(
        old_sqlite,
        owner=lambda cid: cid.split(":")[0] if ":" in cid else "legacy",
        signing_keys=KEY,
    )
    assert set(done.conversations) == {
        ("legacy", "trip"),
        ("legacy", "trip-edit"),
        ("user-7", "user-7:notes"),
    }
    with SQLiteHistoryStore(old_sqlite, signing_keys=KEY) as store:
        assert store.list_conversations_sync("user-7") == ("user-7:notes",)
        report = store.verify_sync("legacy", "trip-edit")
        assert report.signed and report.intact


def test_a_row_that_does_not_decode_is_named_and_nothing_changes(old_sqlite: str) -> None:
    db = Database("sqlite", old_sqlite)
    db.raw("UPDATE golem_messages SET message = '{\"role\": 7}' WHERE conversation_id = 'trip'"
           " AND position = 2")  # fmt: skip
    tables = db.tables()
    with pytest.raises(CorruptHistoryError, match=r"'trip', position 2.*nothing was changed") as e:
        migrate_store(old_sqlite, owner="alice")
    assert (e.value.conversation_id, e.value.position) == ("trip", 2)
    assert db.tables() == tables  # not renamed, no new table


def test_a_missing_position_is_named(old_sqlite: str) -> None:
    db = Database("sqlite", old_sqlite)
    db.raw("DELETE FROM golem_messages WHERE conversation_id = 'trip-edit' AND position = 0")
    with pytest.raises(CorruptHistoryError, match=r"'trip-edit', position 0: .*no row"):
        migrate_store(old_sqlite, owner="alice")


def test_an_id_today_cannot_hold_is_named_before_anything_changes(old_sqlite: str) -> None:
    with pytest.raises(
        UsageError, match=r"nothing was changed: conversation 'trip': owner must be a non-empty"
    ):
        migrate_store(old_sqlite, owner=lambda cid: "" if cid == "trip" else "x")
    assert "golem_messages_v02" not in Database("sqlite", old_sqlite).tables()


def test_a_conversation_already_there_with_other_messages_is_left_alone(
    old_sqlite: str,
) -> None:
    db = Database("sqlite", old_sqlite)
    # a custom prefix: today's tables never collide with the 0.2 table, which stays put
    with SQLiteHistoryStore(old_sqlite, table="app") as store:
        store.append_sync("alice", "trip", [Message.user("other")], expected_length=0)
    with pytest.raises(HistoryStoreError, match=r"1 conversation.*'trip' of 'alice'.*2 moved"):
        migrate_store(old_sqlite, owner="alice", prefix="app")
    with SQLiteHistoryStore(old_sqlite, table="app") as store:
        assert [m.text for m in store.load_sync("alice", "trip")] == ["other"]
        assert store.list_conversations_sync("alice") == CONVERSATIONS
    assert "golem_messages" in db.tables()  # not renamed: nothing needed its name


def test_a_database_without_a_0_2_table_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SQLiteHistoryStore(path).close()  # today's tables only
    with pytest.raises(UsageError, match=r"no golem 0\.2 table 'golem_messages'"):
        migrate_store(path, owner="alice")
    with pytest.raises(UsageError, match="no SQLite database"):
        migrate_store(tmp_path / "absent.db", owner="alice")
    with pytest.raises(UsageError, match="table 'x;drop'"):
        migrate_store(path, owner="alice", table="x;drop")


def test_the_command(old_sqlite: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate-store", "--owner", "alice", old_sqlite]) == 0
    out = capsys.readouterr().out
    assert out.startswith("moved 3 conversation(s), 9 message(s); 0 moved before;")
    assert "golem_messages_v02" in out
    assert main(["migrate-store", "--owner", "alice", "--json", old_sqlite]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["moved"] == [] and len(report["skipped"]) == 3
    assert report["kept_as"] == "golem_messages_v02"


def test_the_command_signs_with_keys_from_the_environment(
    old_sqlite: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GOLEM_STORE_KEY", KEY.decode())
    assert main(["migrate-store", "--owner", "a", "--signing-key-env", "GOLEM_STORE_KEY",
                 old_sqlite]) == 0  # fmt: skip
    with SQLiteHistoryStore(old_sqlite, signing_keys=KEY) as store:
        assert store.verify_sync("a", "trip").signed
    assert main(["migrate-store", "--owner", "a", "--signing-key-env", "NOPE", old_sqlite]) == 2
    assert "NOPE: the variable is not set" in capsys.readouterr().err


def test_the_command_reports_bad_input_with_status_2_and_corrupt_rows_with_1(
    old_sqlite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate-store", "--owner", "a", str(tmp_path / "absent.db")]) == 2
    assert "no SQLite database" in capsys.readouterr().err
    Database("sqlite", old_sqlite).raw("UPDATE golem_messages SET message = 'x'")
    assert main(["migrate-store", "--owner", "a", old_sqlite]) == 1
    assert "position 0: cannot load" in capsys.readouterr().err
