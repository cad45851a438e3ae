# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""A token budget's first load, bounded (issue 47 item 4), on SQLite and a real PostgreSQL.

``append(..., window=window)`` records the window's start (a step point of its
``budget_history``), signed and stamped with the erasure revision of the head the window
was read at. The next ``load_window(processor=...)`` of that processor, without
``after=`` (a stateless worker), reads from there: the rows before it are never read
(deleting them changes nothing), and the processor returns from the window what it
returns from the whole branch. A record made stale by an erasure, a forged record,
another processor or a window of another branch is not used (the load reads the whole
branch, as before).
"""

from __future__ import annotations

import asyncio

import pytest
from store_backends import (  # noqa: F401 (fixtures)
    KEY,
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
)

from golem_core import (
    Message,
    Role,
    TextPart,
    approximate_tokens,
    budget_history,
    budget_window,
    trim_history,
)
from golem_shell import UsageError
from golem_shell.store import CorruptHistoryError

BUDGET = budget_history(approximate_tokens, 300)


def chat(n: int, first: int = 0) -> list[Message]:
    return [
        Message(
            Role.USER if (first + i) % 2 == 0 else Role.ASSISTANT,
            (TextPart(f"message {first + i}: " + "words " * (3 + (first + i) % 7)),),
        )
        for i in range(n)
    ]


def turns(store: Store, count: int, cid: str = "c", *, check: bool = True) -> None:
    """``count`` stateless turns: each loads with no state, runs, appends with its window
    (``check``: the window is the whole branch's suffix, processed alike)."""
    for _ in range(count):
        window = store.load_window_sync(OWNER, cid, processor=BUDGET)
        if check:
            whole = store.load_sync(OWNER, cid)
            assert window.messages == whole[window.start :]
            assert BUDGET(window.messages) == BUDGET(whole)
        new = chat(3, first=window.length)
        store.append_sync(OWNER, cid, new, window.length, window=window)


def recorded_start(backend: Backend) -> int:
    [(start,)] = backend.raw("SELECT start FROM {S}")
    return int(start)


def test_stateless_turns_read_from_the_recorded_step_point(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", chat(400), 0)
    turns(store, 12)
    start = recorded_start(backend)
    assert start > 300  # the budget keeps the newest few dozen messages
    expected = store.load_window_sync(OWNER, "c", processor=BUDGET)
    assert expected.start >= start
    backend.raw("DELETE FROM {M} WHERE position < ?", start - 1)  # never read
    window = asyncio.run(store.load_window(OWNER, "c", processor=BUDGET))
    assert window == expected
    turns(store, 5, check=False)  # the next turns go on from the records


def test_without_a_record_the_first_load_reads_the_whole_branch(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", chat(400), 0)
    window = store.load_window_sync(OWNER, "c", processor=BUDGET)
    store.append_sync(OWNER, "c", chat(3, 400), window.length)  # no window=: no record
    assert backend.raw("SELECT COUNT(*) FROM {S}") == [(0,)]
    backend.raw("DELETE FROM {M} WHERE position < 10")
    with pytest.raises(CorruptHistoryError):
        store.load_window_sync(OWNER, "c", processor=BUDGET)


def _recorded_then_rows_deleted(backend: Backend) -> tuple[Store, int]:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", chat(400), 0)
    turns(store, 3)
    return store, recorded_start(backend)


def test_a_record_made_stale_by_an_erasure_is_not_used(backend: Backend) -> None:
    store, start = _recorded_then_rows_deleted(backend)
    store.erase_sync(OWNER, "c", [start + 2])
    whole = store.load_sync(OWNER, "c")
    window = store.load_window_sync(OWNER, "c", processor=BUDGET)  # read whole: correct
    verdict = budget_window(BUDGET, whole)
    assert verdict is not None and window.start == verdict.start
    assert BUDGET(window.messages) == BUDGET(whole)
    backend.raw("DELETE FROM {M} WHERE position < 10")
    with pytest.raises(CorruptHistoryError):  # it reads from 0: the record is not trusted
        store.load_window_sync(OWNER, "c", processor=BUDGET)


def test_an_erasure_between_the_window_and_its_append_stamps_a_stale_record(
    backend: Backend,
) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", chat(400), 0)
    window = store.load_window_sync(OWNER, "c", processor=BUDGET)
    store.erase_sync(OWNER, "c", [5])  # the counts the window was found with may change
    store.append_sync(OWNER, "c", chat(3, 400), window.length, window=window)
    backend.raw("DELETE FROM {M} WHERE position < 10")
    with pytest.raises(CorruptHistoryError):
        store.load_window_sync(OWNER, "c", processor=BUDGET)


def test_a_forged_record_or_another_processor_is_not_used(backend: Backend) -> None:
    store, start = _recorded_then_rows_deleted(backend)
    backend.raw("UPDATE {S} SET start = ?", start + 1)
    whole = store.load_sync(OWNER, "c")
    assert BUDGET(store.load_window_sync(OWNER, "c", processor=BUDGET).messages) == BUDGET(whole)
    backend.raw("UPDATE {S} SET start = ?", start)
    other = budget_history(approximate_tokens, 301)
    backend.raw("DELETE FROM {M} WHERE position < 10")
    assert store.load_window_sync(OWNER, "c", processor=BUDGET).start >= start
    with pytest.raises(CorruptHistoryError):
        store.load_window_sync(OWNER, "c", processor=other)


def test_only_a_budget_window_of_this_branch_is_recorded(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    store.append_sync(OWNER, "c", chat(400), 0)
    store.append_sync(OWNER, "d", chat(400), 0)
    trimmed = store.load_window_sync(OWNER, "c", processor=trim_history(60))
    store.append_sync(OWNER, "c", chat(1, 400), 400, window=trimmed)
    assert backend.raw("SELECT COUNT(*) FROM {S}") == [(0,)]
    other = store.load_window_sync(OWNER, "d", processor=BUDGET)
    with pytest.raises(UsageError):
        store.append_sync(OWNER, "c", chat(1, 401), 401, window=other)
    with pytest.raises(UsageError):
        store.append_sync(OWNER, "c", chat(1, 401), 401, window="w")  # type: ignore[arg-type]
    assert store.load_sync(OWNER, "c")[-1].text.startswith("message 400")
    store.append_sync(OWNER, "d", chat(1, 400), 400, window=other)
    assert backend.raw("SELECT COUNT(*) FROM {S}") == [(1,)]
    store.delete_sync(OWNER, "d")
    assert backend.raw("SELECT COUNT(*) FROM {S}") == [(0,)]
