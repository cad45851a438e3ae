# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Pages of long history (issue 47 item 3), on SQLite and a real PostgreSQL.

``load_page(owner, cid, limit=, before=)`` reads the messages just before a position,
verified against the chain without the rest of the branch: the rows after the page are
followed (seals and links only) to the next signed mark (every 64th row) or the signed
head. Paging back from the newest to the oldest gives exactly ``load``'s messages; a
tampered row in the page, or between it and its mark, a forged mark, or a row restored
from before an erasure with its old mark, raises ``CorruptHistoryError``; rows far from
the page are never read (deleting them changes nothing); pages work across a branch
point, on a fork whose source was deleted, on erased and encrypted rows.
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
    texts,
    user,
)

from golem_core import Message, encode_message
from golem_shell import UsageError
from golem_shell.store import (
    ERASED_TEXT,
    CorruptHistoryError,
    EncryptionKeys,
    HistoryNotFound,
    Page,
)
from golem_shell.store._pages import MARK_EVERY


def fill(store: Store, n: int, cid: str = "c", tag: str = "m", branch: str = "main") -> None:
    """Append ``n`` messages in batches (as turns would)."""
    length = len(store.load_sync(OWNER, cid, branch=branch))
    while n:
        k = min(n, 97)
        batch = [user(f"{tag}{length + i}") for i in range(k)]
        length = store.append_sync(OWNER, cid, batch, length, branch=branch)
        n -= k


def all_pages(store: Store, cid: str, limit: int, branch: str = "main") -> list[Page]:
    pages = [store.load_page_sync(OWNER, cid, limit=limit, branch=branch)]
    while pages[-1].older is not None:
        pages.append(
            store.load_page_sync(OWNER, cid, limit=limit, before=pages[-1].older, branch=branch)
        )
    return pages


def scrolled(pages: list[Page]) -> tuple[Message, ...]:
    return tuple(m for p in reversed(pages) for m in p.messages)


@pytest.mark.parametrize("limit", [1, 7, 64, 100, 1000])
def test_paging_back_from_the_newest_gives_exactly_load(backend: Backend, limit: int) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 300)
    pages = all_pages(store, "c", limit)
    assert scrolled(pages) == store.load_sync(OWNER, "c")
    assert pages[0].end == 300 and pages[0].length == 300
    assert [len(p.messages) for p in pages[:-1]] == [min(limit, 300)] * (len(pages) - 1)
    assert pages[-1].start == 0 and pages[-1].older is None
    for page in pages:
        assert page.positions == range(page.start, page.end)
        assert texts(page.messages) == [f"m{i}" for i in page.positions]
        assert page.head == store.head_sync(OWNER, "c")


def test_the_async_form_and_every_boundary(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 2 * MARK_EVERY + 1)
    whole = store.load_sync(OWNER, "c")

    async def every_page() -> None:  # one event loop (and connection) for them all
        for before in range(len(whole) + 1):
            for limit in (1, 3, MARK_EVERY):
                page = await store.load_page(OWNER, "c", limit=limit, before=before)
                assert page.messages == whole[max(0, before - limit) : before]

    asyncio.run(every_page())


def test_an_empty_conversation_a_missing_branch_and_bad_arguments(store: Store) -> None:
    empty = store.load_page_sync(OWNER, "none", limit=10)
    assert (empty.messages, empty.start, empty.length, empty.head) == ((), 0, 0, None)
    with pytest.raises(HistoryNotFound):
        store.load_page_sync(OWNER, "none", limit=10, branch="b")
    fill(store, 5)
    assert store.load_page_sync(OWNER, "c", limit=10, before=0).messages == ()
    for bad in (
        {"limit": 0},
        {"limit": True},
        {"limit": 2, "before": -1},
        {"limit": 2, "before": 6},
    ):
        with pytest.raises(UsageError):
            store.load_page_sync(OWNER, "c", **bad)
    assert store.load_page_sync("mallory", "c", limit=10).messages == ()


def test_rows_far_from_the_page_are_never_read(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 600)
    expected = store.load_sync(OWNER, "c")[200:300]
    mark = (300 // MARK_EVERY + 1) * MARK_EVERY - 1  # the first mark at or after 299
    backend.raw("DELETE FROM {M} WHERE position < 199 OR position > ?", mark)
    page = store.load_page_sync(OWNER, "c", limit=100, before=300)
    assert page.messages == expected
    with pytest.raises(CorruptHistoryError):  # the newest page needs the rows it lost
        store.load_page_sync(OWNER, "c", limit=100)


def test_a_tampered_row_in_the_page_is_refused(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 300)
    backend.raw(
        "UPDATE {M} SET message = ? WHERE position = 150", encode_message(user("forged")).decode()
    )
    with pytest.raises(CorruptHistoryError) as refused:
        store.load_page_sync(OWNER, "c", limit=100, before=200)
    assert refused.value.position == 150
    assert store.load_page_sync(OWNER, "c", limit=40, before=140).start == 100  # others load


def test_a_page_from_another_branch_or_a_broken_tail_is_refused(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 300)
    store.branch_sync(OWNER, "c", 100, name="b")
    fill(store, 200, tag="b", branch="b")
    # main's rows 150..255 replaced by the branch's (seals and links chain among
    # themselves, and from the row before them): the chain reaches the branch's link at
    # main's mark (255), which main's mark does not sign
    mark = 4 * MARK_EVERY - 1
    rows = backend.raw(
        "SELECT position, message, seal, link FROM {M} WHERE branch = 'b' AND position >= 149 "
        "AND position <= ? ORDER BY position",
        mark,
    )
    for position, message, seal, link in rows:
        backend.raw(
            "UPDATE {M} SET message = ?, seal = ?, link = ? WHERE branch = 'main' "
            "AND position = ?",
            message, seal, link, position,
        )  # fmt: skip
    with pytest.raises(CorruptHistoryError, match="mark"):
        store.load_page_sync(OWNER, "c", limit=50, before=200)
    # a link after the page (between it and its mark) altered
    backend.raw("UPDATE {M} SET link = ? WHERE branch = 'main' AND position = 280", rows[0][3])
    with pytest.raises(CorruptHistoryError) as refused:
        store.load_page_sync(OWNER, "c", limit=10, before=270)
    assert refused.value.position == 280


def test_a_forged_or_moved_mark_is_refused(backend: Backend) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 300)
    marks = backend.raw("SELECT position, mark FROM {K} ORDER BY position")
    assert [p for p, _ in marks] == [p for p in range(300) if (p + 1) % MARK_EVERY == 0]
    backend.raw("UPDATE {K} SET mark = ? WHERE position = ?", marks[0][1], marks[1][0])
    with pytest.raises(CorruptHistoryError, match="mark"):
        store.load_page_sync(OWNER, "c", limit=10, before=marks[1][0] - 5)
    # without its marks a page is still verified: it follows the chain to the head
    backend.raw("DELETE FROM {K}")
    assert texts(store.load_page_sync(OWNER, "c", limit=3, before=3).messages) == [
        "m0", "m1", "m2",
    ]  # fmt: skip


def test_erasure_shows_in_pages_and_a_restored_row_with_its_old_mark_is_refused(
    backend: Backend,
) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 300)
    store.branch_sync(OWNER, "c", 200, name="b")
    fill(store, 50, tag="b", branch="b")
    backup_rows = backend.raw(
        "SELECT position, message, seal, link FROM {M} WHERE branch = 'main' "
        "AND position >= 99 AND position < 200 ORDER BY position"
    )
    backup_marks = backend.raw("SELECT position, mark FROM {K} WHERE branch = 'main'")
    store.erase_sync(OWNER, "c", [120])
    for branch in ("main", "b"):
        page = store.load_page_sync(OWNER, "c", limit=30, before=140, branch=branch)
        assert texts(page.messages)[10] == ERASED_TEXT
        assert scrolled(all_pages(store, "c", 33, branch)) == store.load_sync(
            OWNER, "c", branch=branch
        )
    # a backup of the rows 99..199 and their marks (a consistent chain, genuinely signed
    # before the erasure): the erasure's revision is in the head, so the old mark fails
    for position, message, seal, link in backup_rows:
        backend.raw(
            "UPDATE {M} SET message = ?, seal = ?, link = ? WHERE branch = 'main' "
            "AND position = ?",
            message, seal, link, position,
        )  # fmt: skip
    for position, mark in backup_marks:
        backend.raw(
            "UPDATE {K} SET mark = ? WHERE branch = 'main' AND position = ?", mark, position
        )
    for branch in ("main", "b"):
        with pytest.raises(CorruptHistoryError):
            store.load_page_sync(OWNER, "c", limit=30, before=140, branch=branch)


def test_pages_across_a_branch_point_and_a_fork_whose_source_is_deleted(
    backend: Backend,
) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 250)
    store.branch_sync(OWNER, "c", 130, name="b")
    fill(store, 170, tag="b", branch="b")
    store.branch_sync(OWNER, "c", 200, source="b", name="bb")
    fill(store, 70, tag="bb", branch="bb")
    for branch, limit in (("b", 45), ("bb", 64), ("bb", 1)):
        whole = store.load_sync(OWNER, "c", branch=branch)
        assert scrolled(all_pages(store, "c", limit, branch)) == whole
        page = store.load_page_sync(OWNER, "c", limit=20, before=140, branch=branch)
        assert texts(page.messages) == [f"m{i}" for i in range(120, 130)] + [
            f"b{i}" for i in range(130, 140)
        ]
    store.fork_sync(OWNER, "c", 180, "f", branch="b")
    fill(store, 20, cid="f", tag="f")
    forked = store.load_sync(OWNER, "f")
    store.delete_sync(OWNER, "c")  # the fork gets its own copy of the rows and marks
    assert scrolled(all_pages(store, "f", 50)) == forked
    assert backend.raw("SELECT COUNT(*) FROM {K} WHERE conversation_id = 'c'") == [(0,)]
    marked = backend.raw("SELECT position FROM {K} WHERE conversation_id = 'f' ORDER BY position")
    assert [p for (p,) in marked] == [p for p in range(200) if (p + 1) % MARK_EVERY == 0]


def test_encrypted_rows(backend: Backend) -> None:
    keys = EncryptionKeys({"k1": b"0" * 32}, current="k1")
    store = backend.open(signing_keys=KEY, encryption=keys)
    fill(store, 200)
    store.erase_sync(OWNER, "c", [10])
    assert scrolled(all_pages(store, "c", 30)) == store.load_sync(OWNER, "c")
    assert texts(store.load_page_sync(OWNER, "c", limit=2, before=11).messages) == [
        "m9", ERASED_TEXT,
    ]  # fmt: skip


def test_a_parent_restored_whole_from_a_backup_is_refused_in_its_branches_pages(
    backend: Backend,
) -> None:
    """The parent's rows, marks and signed head all from before an erasure (a genuine older
    state of the parent): a page of the branch reading those rows follows the chain into
    the branch's own rows, which were re-chained by the erasure, and refuses it."""
    store = backend.open(signing_keys=KEY)
    fill(store, 300)
    store.branch_sync(OWNER, "c", 200, name="b")
    fill(store, 100, tag="b", branch="b")
    main = "branch = 'main'"
    head = backend.raw("SELECT length, revision, rechained, link, head FROM {B} WHERE " + main)
    rows = backend.raw("SELECT position, message, seal, link FROM {M} WHERE " + main)
    marks = backend.raw("SELECT position, mark FROM {K} WHERE " + main)
    store.erase_sync(OWNER, "c", [120])
    backend.raw("DELETE FROM {M} WHERE " + main)
    backend.raw("DELETE FROM {K} WHERE " + main)
    for position, message, seal, link in rows:
        backend.raw(
            "INSERT INTO {M} (owner, conversation_id, branch, position, message, seal, link) "
            "VALUES (?, 'c', 'main', ?, ?, ?, ?)",
            OWNER, position, message, seal, link,
        )  # fmt: skip
    for position, mark in marks:
        backend.raw(
            "INSERT INTO {K} (owner, conversation_id, branch, position, mark) "
            "VALUES (?, 'c', 'main', ?, ?)",
            OWNER, position, mark,
        )  # fmt: skip
    backend.raw(
        "UPDATE {B} SET length = ?, revision = ?, rechained = ?, link = ?, head = ? WHERE " + main,
        *head[0],
    )
    with pytest.raises(CorruptHistoryError):
        store.load_page_sync(OWNER, "c", limit=30, before=140, branch="b")
    with pytest.raises(CorruptHistoryError):  # as the window of the branch
        store.load_window_sync(OWNER, "c", last=150, branch="b")
    # the parent's own pages see a consistent older state: a rollback, which a page (as
    # any load without the last head) does not detect; verify(last_head=...) does
    assert texts(store.load_page_sync(OWNER, "c", limit=1, before=121).messages) == ["m120"]


def test_across_a_branch_point_only_the_rows_to_the_next_marks_are_read(
    backend: Backend,
) -> None:
    store = backend.open(signing_keys=KEY)
    fill(store, 600)
    store.branch_sync(OWNER, "c", 300, name="b")
    fill(store, 300, tag="b", branch="b")
    expected = store.load_sync(OWNER, "c", branch="b")[100:200]
    first_own_mark = (300 // MARK_EVERY + 1) * MARK_EVERY - 1  # b's first mark (319)
    backend.raw("DELETE FROM {M} WHERE branch = 'main' AND (position < 99 OR position >= 300)")
    backend.raw("DELETE FROM {M} WHERE branch = 'b' AND position > ?", first_own_mark)
    page = store.load_page_sync(OWNER, "c", limit=100, before=200, branch="b")
    assert page.messages == expected


def test_a_store_written_before_marks_existed(backend: Backend) -> None:
    """Tables without marks (an older golem): opening the store creates them; a page is
    still verified (following the links to the head); an erasure writes the marks."""
    store = backend.open(signing_keys=KEY)
    fill(store, 200)
    store.close()
    backend.raw("DROP TABLE {K}")
    backend.raw("DROP TABLE {S}")
    store = backend.open(signing_keys=KEY)
    whole = store.load_sync(OWNER, "c")  # PostgreSQL creates what is missing on connecting
    assert backend.raw("SELECT COUNT(*) FROM {K}") == [(0,)]
    assert scrolled(all_pages(store, "c", 30)) == whole
    backend.raw("UPDATE {M} SET link = ? WHERE position = 190", "forged")
    with pytest.raises(CorruptHistoryError) as refused:  # no mark: the walk reaches it
        store.load_page_sync(OWNER, "c", limit=10, before=20)
    assert refused.value.position == 190
    store.erase_sync(OWNER, "c", [5])  # re-chains from 5 and signs the branch's marks
    marked = backend.raw("SELECT position FROM {K} ORDER BY position")
    assert [p for (p,) in marked] == [p for p in range(200) if (p + 1) % MARK_EVERY == 0]
    assert scrolled(all_pages(store, "c", 30)) == store.load_sync(OWNER, "c")
