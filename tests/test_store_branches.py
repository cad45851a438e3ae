# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Owners and branches, on SQLite and a real PostgreSQL.

Owners: another owner's conversation ids are "not found" for every method (the owner is
the first column of every key). Branches: a branch at n shares the first n messages
(stored once), can be listed, loaded and continued with its own compare-and-set; a
fork to another conversation shares its prefix the same way; storage grows with the
messages written, not with branches times length (measured and printed).
"""

from __future__ import annotations

import asyncio

import pytest
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

from golem_shell import UsageError
from golem_shell.store import MAIN, BranchInfo, HistoryConflict, HistoryNotFound

BOB = "bob"

# -- owners ---------------------------------------------------------------------------------


def test_another_owners_conversation_is_not_found_by_any_method(store: Store) -> None:
    store.append_sync(OWNER, "c-1", [user("alice's secret")], 0)
    branch = store.branch_sync(OWNER, "c-1", 1)
    for guessed in ("c-1", "c-2", "C-1", "c-1 ", "c-\u0131"):
        assert store.load_sync(BOB, guessed) == ()
        assert store.branches_sync(BOB, guessed) == ()
        assert store.head_sync(BOB, guessed) is None
        with pytest.raises(HistoryNotFound, match="not found for this owner"):
            store.load_sync(BOB, guessed, branch=branch)
        with pytest.raises(HistoryNotFound):
            store.branch_sync(BOB, guessed, 0)
        with pytest.raises(HistoryNotFound):
            store.erase_sync(BOB, guessed, 0)
        with pytest.raises(HistoryNotFound):
            store.verify_sync(BOB, guessed)
        with pytest.raises(HistoryNotFound):
            store.append_sync(BOB, guessed, [user("x")], 0, branch=branch)
        assert store.delete_sync(BOB, guessed).erased == ()
    with pytest.raises(UsageError, match="at 1: it has 0 messages"):
        store.fork_sync(BOB, "c-1", 1, "mine")  # bob's "c-1" is empty
    assert store.list_conversations_sync(BOB) == ()
    assert texts(store.load_sync(OWNER, "c-1")) == ["alice's secret"]
    assert [b.name for b in store.branches_sync(OWNER, "c-1")] == [MAIN, branch]


def test_the_same_id_under_two_owners_is_two_conversations(store: Store) -> None:
    store.append_sync(OWNER, "shared-id", [user("a1")], 0)
    with pytest.raises(HistoryConflict):  # alice's conversation is 1 long
        store.append_sync(OWNER, "shared-id", [user("a2")], 0)
    assert store.append_sync(BOB, "shared-id", [user("b1"), user("b2")], 0) == 2
    store.erase_sync(BOB, "shared-id", [0, 1])
    store.delete_sync(BOB, "shared-id")
    assert texts(store.load_sync(OWNER, "shared-id")) == ["a1"]
    assert store.list_conversations_sync(OWNER) == ("shared-id",)
    assert store.list_conversations_sync(BOB) == ()
    assert store.verify_sync(OWNER, "shared-id").intact


def test_owners_are_checked_like_ids(store: Store) -> None:
    for bad in ("", None, 3):
        with pytest.raises(UsageError, match="owner must be a non-empty string"):
            store.load_sync(bad, "c")  # type: ignore[arg-type]


def test_a_lone_surrogate_in_an_id_is_a_clear_error(store: Store) -> None:
    """Issue 28 item 7: both stores raised a raw UnicodeEncodeError."""
    for call in (
        lambda: store.append_sync(OWNER, "c\ud800", [user("x")], 0),
        lambda: store.load_sync(OWNER, "c\udfff"),
        lambda: store.load_sync("owner\ud800", "c"),
        lambda: store.fork_sync(OWNER, "c", 0, "new\ud800"),
        lambda: store.branch_sync(OWNER, "c", 0, name="b\ud800"),
    ):
        with pytest.raises(UsageError, match=r"lone surrogate at index \d+: not storable text"):
            call()
    assert store.list_conversations_sync(OWNER) == ()


# -- branches -------------------------------------------------------------------------------


def test_edit_and_regenerate_branch_share_the_prefix(store: Store) -> None:
    store.append_sync(OWNER, "c", [user("q1"), user("a1"), user("q2"), user("a2")], 0)
    edit = store.branch_sync(OWNER, "c", 2)  # edit q2: a branch at 2
    regen = store.branch_sync(OWNER, "c", 3, name="regenerated")  # regenerate a2
    assert (edit, regen) == ("b1", "regenerated")
    assert store.append_sync(OWNER, "c", [user("q2'"), user("a2'")], 2, branch=edit) == 4
    assert store.append_sync(OWNER, "c", [user("a2''")], 3, branch=regen) == 4
    assert texts(store.load_sync(OWNER, "c", branch=edit)) == ["q1", "a1", "q2'", "a2'"]
    assert texts(store.load_sync(OWNER, "c", branch=regen)) == ["q1", "a1", "q2", "a2''"]
    assert texts(store.load_sync(OWNER, "c")) == ["q1", "a1", "q2", "a2"]  # main unchanged
    assert store.branches_sync(OWNER, "c") == (
        BranchInfo(MAIN, None, 0, 4, 1),
        BranchInfo("b1", ("c", MAIN), 2, 4, 1),
        BranchInfo("regenerated", ("c", MAIN), 3, 4, 1),
    )


def test_branches_of_branches_and_their_own_compare_and_set(store: Store) -> None:
    store.append_sync(OWNER, "c", [user("0"), user("1")], 0)
    b1 = store.branch_sync(OWNER, "c", 1)
    store.append_sync(OWNER, "c", [user("1b"), user("2b")], 1, branch=b1)
    b2 = store.branch_sync(OWNER, "c", 2, source=b1)  # shares 0 (main) and 1b (b1)
    store.append_sync(OWNER, "c", [user("2c")], 2, branch=b2)
    assert texts(store.load_sync(OWNER, "c", branch=b2)) == ["0", "1b", "2c"]
    with pytest.raises(HistoryConflict) as caught:
        store.append_sync(OWNER, "c", [user("late")], 2, branch=b1)  # b1 is 3 long
    assert (caught.value.branch, caught.value.actual_length) == (b1, 3)
    assert f"branch {b1!r}" in str(caught.value)
    assert store.append_sync(OWNER, "c", [user("2")], 2) == 3  # main: its own length
    b3 = store.branch_sync(OWNER, "c", 0)  # shares nothing
    assert store.load_sync(OWNER, "c", branch=b3) == ()
    assert store.append_sync(OWNER, "c", [user("fresh")], 0, branch=b3) == 1
    assert store.verify_sync(OWNER, "c").intact


def test_branch_refuses_bad_requests(store: Store) -> None:
    store.append_sync(OWNER, "c", [user("0")], 0)
    with pytest.raises(UsageError, match="at 2: it has 1 message"):
        store.branch_sync(OWNER, "c", 2)
    with pytest.raises(HistoryNotFound, match="branch 'nope'"):
        store.branch_sync(OWNER, "c", 0, source="nope")
    store.branch_sync(OWNER, "c", 1, name="x")
    with pytest.raises(UsageError, match="already has a branch 'x'"):
        store.branch_sync(OWNER, "c", 1, name="x")
    with pytest.raises(HistoryNotFound, match="branch 'missing'"):
        store.append_sync(OWNER, "c", [user("1")], 1, branch="missing")


def test_a_fork_shares_its_prefix_and_outlives_its_source(store: Store) -> None:
    store.append_sync(OWNER, "a", [user(str(i)) for i in range(4)], 0)
    store.fork_sync(OWNER, "a", 3, "f")
    store.append_sync(OWNER, "f", [user("f3")], 3)
    assert texts(store.load_sync(OWNER, "f")) == ["0", "1", "2", "f3"]
    assert store.branches_sync(OWNER, "f")[0].parent == ("a", MAIN)
    receipt = store.delete_sync(OWNER, "a")
    assert receipt.conversations == ("a",)
    assert store.load_sync(OWNER, "a") == ()
    assert texts(store.load_sync(OWNER, "f")) == ["0", "1", "2", "f3"]  # its own copy now
    assert store.branches_sync(OWNER, "f")[0].parent is None
    assert store.verify_sync(OWNER, "f").intact


def test_branches_async(store: Store) -> None:
    async def main() -> None:
        await store.append(OWNER, "c", [user("0"), user("1")], 0)
        name = await store.branch(OWNER, "c", 1)
        await store.append(OWNER, "c", [user("1'")], 1, branch=name)
        assert texts(await store.load(OWNER, "c", branch=name)) == ["0", "1'"]
        assert [b.name for b in await store.branches(OWNER, "c")] == [MAIN, name]
        head = await store.head(OWNER, "c", branch=name)
        assert head is not None and (head.length, head.revision) == (2, 1)
        await store.aclose()

    asyncio.run(main())


def test_storage_grows_with_messages_written_not_branches_times_length(
    backend: Backend,
) -> None:
    """20 branches off a 200-message conversation, each adding 2: 240 rows, not 4,240."""
    store = backend.open()
    base = [user(f"message {i} " + "x" * 100) for i in range(200)]
    store.append_sync(OWNER, "c", base, 0)
    before = _stored(backend)
    for k in range(20):
        name = store.branch_sync(OWNER, "c", 200 - k)
        store.append_sync(OWNER, "c", [user(f"edit {k}"), user(f"reply {k}")], 200 - k, branch=name)
    rows, octets = _stored(backend)
    views = sum(b.length for b in store.branches_sync(OWNER, "c"))
    print(
        f"{backend.kind}: 200 messages, then 20 branches of 2: {rows} rows, {octets} bytes "
        f"of messages (main alone: {before[1]}); the 21 views hold {views} messages"
    )
    assert rows == 200 + 20 * 2
    assert views == 200 + sum(200 - k + 2 for k in range(20))
    assert octets < before[1] * 1.5


def _stored(backend: Backend) -> tuple[int, int]:
    octets = (
        "LENGTH(CAST(message AS BLOB))" if backend.kind == "sqlite" else "OCTET_LENGTH(message)"
    )
    ((rows, size),) = backend.raw(f"SELECT COUNT(*), SUM({octets}) FROM {{M}}")
    return int(rows), int(size)
