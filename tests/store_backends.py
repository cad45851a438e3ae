"""Shared by the store tests: one suite, two engines (SQLite files and a real PostgreSQL).

``Backend`` opens stores on one database and table prefix and runs raw SQL on it (to
play a rival writer or an attacker with database access). The fixtures (``backend``,
``sqlite_backend``, ``postgres_backend``, ``store``) are imported by each test module.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem_core import Message, Role, TextPart
from golem_shell.store import PostgresHistoryStore, SQLiteHistoryStore

Store = SQLiteHistoryStore | PostgresHistoryStore
OWNER = "alice"
KEY = b"store-test-key-0123456789abcdef!"


def user(text: str) -> Message:
    return Message(role=Role.USER, parts=(TextPart(text),))


def texts(messages: tuple[Message, ...]) -> list[str]:
    return [m.text for m in messages]


class Backend:
    """Opens stores on one shared database and table prefix, and runs raw SQL on it."""

    def __init__(self, kind: str, target: str, table: str) -> None:
        self.kind = kind
        self.target = target
        self.table = table
        self.opened: list[Store] = []

    def open(self, **options: Any) -> Store:
        store: Store
        options.setdefault("table", self.table)
        if self.kind == "sqlite":
            store = SQLiteHistoryStore(self.target, **options)
        else:
            store = PostgresHistoryStore(self.target, **options)
        self.opened.append(store)
        return store

    def sql(self, statement: str) -> str:
        """``statement`` with ``{M}``, ``{B}``, ``{C}``, ``{K}``, ``{S}`` naming its tables."""
        t = self.table
        text = statement.format(
            M=f"{t}_messages",
            B=f"{t}_branches",
            C=f"{t}_conversations",
            K=f"{t}_marks",
            S=f"{t}_steps",
        )
        return text if self.kind == "sqlite" else text.replace("?", "%s")

    def raw(self, statement: str, *params: object) -> list[tuple[Any, ...]]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as conn:
                return conn.execute(self.sql(statement), params).fetchall()
        import psycopg

        with psycopg.connect(self.target) as conn:
            cursor = conn.execute(self.sql(statement), params)
            return cursor.fetchall() if cursor.description is not None else []

    def snapshot(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Every row of the messages and branches tables, to ``restore`` later."""
        return self.raw("SELECT * FROM {M}"), self.raw("SELECT * FROM {B}")

    def restore(self, snapshot: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]) -> None:
        """The tables go back to ``snapshot`` (a restored backup, a replica behind)."""
        messages, branches = snapshot
        self.raw("DELETE FROM {M}")
        self.raw("DELETE FROM {B}")
        for row in branches:
            self.raw("INSERT INTO {B} VALUES (" + ", ".join("?" * len(row)) + ")", *row)
        for row in messages:
            self.raw("INSERT INTO {M} VALUES (" + ", ".join("?" * len(row)) + ")", *row)

    def close(self) -> None:
        for store in self.opened:
            store.close()


@pytest.fixture(scope="module")
def store_database(postgres_url: str) -> str:
    from postgres_server import create_database

    return create_database(postgres_url, "golem_store_tests")


def _backend(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> Iterator[Backend]:
    table = f"t_{uuid.uuid4().hex[:12]}"
    if kind == "sqlite":
        target = str(tmp_path / "history.db")
    else:
        target = request.getfixturevalue("store_database")
    b = Backend(kind, target, table)
    yield b
    b.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _backend(request, request.param, tmp_path)


@pytest.fixture
def sqlite_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _backend(request, "sqlite", tmp_path)


@pytest.fixture
def postgres_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _backend(request, "postgres", tmp_path)


@pytest.fixture
def store(backend: Backend) -> Store:
    return backend.open()
